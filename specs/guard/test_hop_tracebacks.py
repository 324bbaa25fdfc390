"""A failed hop reads in one screen: the spec's own line and the one-line message, as a failed wait does.

Before, one ``ServiceTimeout`` from ``fetch_through_sync`` printed about 149 lines: anyio's and asyncio's frames and
some 80 lines of ``harness/fetch.py`` source. Each inner spec below fails with a different hop error, raised through a
different path (the private event loop of a sync call, an awaited call, a port-forward's readiness, the forward
pool); the outer spec reads what pytest printed for it.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

INNER = """
import socket

import pytest

from harness import fetch_through, fetch_through_sync, port_forward


@pytest.fixture
def silent_port():
    with socket.socket() as server:   # accepts connections, never answers
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


@pytest.fixture
def silent(silent_port):
    return f"http://127.0.0.1:{silent_port}"


def test_sync_service_timeout(silent):
    fetch_through_sync(silent, "GET", "/healthz", timeout=0.3)


@pytest.mark.anyio
async def test_async_service_timeout(silent):
    await fetch_through(silent, "GET", "/healthz", timeout=0.3)


def test_forward_not_ready(kubectl_standin):
    kubectl_standin.script(mode="port-in-use")
    with port_forward(kubectl_standin.kube(), "svc/web", 80, ready_timeout=10.0):
        pass


def test_pooled_forward_not_ready(kubectl_standin, forwards):
    kubectl_standin.script(mode="port-in-use")
    forwards.get(kubectl_standin.kube(), "svc/web", 80)


def test_forward_gone(kubectl_standin, silent_port):
    kubectl_standin.script(target_port=silent_port)
    forward = port_forward(kubectl_standin.kube(), "svc/web", 80, ready_timeout=10.0).start()
    forward.close()
    fetch_through_sync(forward, "GET", "/healthz", timeout=5.0)
"""

EXPECTED = {
    "test_sync_service_timeout": ("ServiceTimeout", 'fetch_through_sync(silent, "GET", "/healthz", timeout=0.3)'),
    "test_async_service_timeout": ("ServiceTimeout", 'await fetch_through(silent, "GET", "/healthz", timeout=0.3)'),
    "test_forward_not_ready": ("PortForwardNotReady", "with port_forward(kubectl_standin.kube()"),
    "test_pooled_forward_not_ready": ("PortForwardNotReady", 'forwards.get(kubectl_standin.kube(), "svc/web", 80)'),
    "test_forward_gone": ("PortForwardGone", 'fetch_through_sync(forward, "GET", "/healthz", timeout=5.0)'),
}

HARNESS_INTERNALS = ("harness/fetch.py", "harness/portforward.py", "harness/forward_pool.py", "harness/blocking.py")


def _sections(output: str) -> dict[str, str]:
    """Each failed spec's part of pytest's FAILURES section, by spec name."""
    failures = output.split("= FAILURES =", 1)[1].split("short test summary info", 1)[0]
    parts = re.split(r"^_{3,} (\S+) _{3,}$", failures, flags=re.MULTILINE)
    return {name.split("[", 1)[0]: body for name, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One inner pytest run, in a subprocess (the forwards it starts and kills stay out of this process)."""
    folder = tmp_path_factory.mktemp("hops")
    (folder / "test_inner.py").write_text(INNER)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist", "-q"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert "5 failed" in done.stdout, done.stdout + done.stderr
    return _sections(done.stdout)


@pytest.mark.parametrize("spec", sorted(EXPECTED))
def test_a_hop_failure_shows_the_specs_line_and_the_message_only(printed: dict[str, str], spec: str) -> None:
    kind, line = EXPECTED[spec]
    text = printed[spec]
    assert line in text  # the spec's own line, marked
    messages = [row[1:].strip() for row in text.splitlines() if row.startswith("E ")]
    assert messages[0].startswith(f"harness.errors.{kind}: "), text
    for internal in (*HARNESS_INTERNALS, "site-packages", "/asyncio/"):  # no library frame either
        assert internal not in text, f"{internal} shows in the failure of {spec}:\n{text}"
    assert len(text.strip().splitlines()) < 30, text  # one screen; it was about 149 lines
