"""The fake GitHub standalone: ``python -m fakes.github`` and the command its Deployment runs, seeded and read through
the HTTP admin API only (``/_fake/github/*``, ``/_fake/requests``), as a spec against the cluster copy would."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from githubkit import GitHub

from fakes.github import FakeGitHub
from fakes.server import FakeHandle
from specs.github.receiver import Receiver

MANIFESTS = Path(__file__).resolve().parents[2] / "fakes" / "github" / "manifests"
START_TIMEOUT = 20.0  # seconds for the process to print its listening line (imports included)
NAMESPACE = "shop"  # where `kubectl -n shop apply -f fakes/github/manifests/` would put it


def _manifest_container() -> dict[str, Any]:
    deployment = yaml.safe_load((MANIFESTS / "deployment.yaml").read_text())
    container: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def _command(kind: str) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    if kind == "module":
        return [sys.executable, "-m", "fakes.github", "--port", "0"], env
    container = _manifest_container()
    command = list(container["command"])
    assert command[:3] == ["python", "-m", "fakes.github"]
    env.update(_manifest_env(container))
    # The manifest's own command; only the bind address is overridden (last flag wins) so the OS picks the port.
    return [sys.executable, *command[1:], "--host", "127.0.0.1", "--port", "0"], env


def _manifest_env(container: dict[str, Any]) -> dict[str, str]:
    """The manifest's env as a kubelet gives it to a pod in NAMESPACE: the downward API's namespace, and each
    ``$(NAME)`` expanded from the entries before it."""
    env: dict[str, str] = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], item["value"])
        else:
            assert item["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}, item
            env[item["name"]] = NAMESPACE
    return env


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while (remaining := deadline - time.monotonic()) > 0:
            if sel.select(remaining):
                line: bytes = proc.stdout.readline()
                return line.decode()
            if proc.poll() is not None:
                break
    raise AssertionError(
        f"python -m fakes.github printed no listening line within {timeout:.0f} s (exit code {proc.poll()})"
    )


@pytest.mark.parametrize("kind", ["module", "manifest"])
def test_standalone_fake_serves_seeds_and_journals(kind: str, tmp_path: Path) -> None:
    argv, env = _command(kind)
    with open(tmp_path / "stderr.txt", "wb") as stderr_file:  # the child holds its own copy of the descriptor
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=stderr_file, env=env, cwd=Path(__file__).resolve().parents[2]
        )
    try:
        line = _read_line(proc, START_TIMEOUT)
        assert line.startswith("fake github listening on http://127.0.0.1:"), line
        url = line.rsplit(" ", 1)[-1].strip()
        with httpx.Client(base_url=url, timeout=10.0) as http:
            assert http.get("/healthz").json() == {"status": "ok"}
            for route, body in [
                ("users", {"login": "alice", "token": "ghp_a"}),
                ("repos", {"full_name": "octo/hello"}),
                ("issues", {"repo": "octo/hello", "title": "Seeded", "user": "alice"}),
            ]:
                answer = http.post(f"/_fake/github/{route}", json=body)
                assert answer.status_code == 201, answer.text
            bad = http.post("/_fake/github/issues", json={"repo": "octo/hello"})
            assert bad.status_code == 400
            assert "'title' is required" in bad.json()["message"]
            kit = GitHub("ghp_a", base_url=url, auto_retry=False, http_cache=False, timeout=10.0)
            issue = kit.rest.issues.get("octo", "hello", 1).parsed_data
            # In a pod, URL fields name the Service in the pod's own namespace, whatever address was dialled.
            expected_base = f"http://fake-github.{NAMESPACE}.svc.cluster.local" if kind == "manifest" else url
            assert issue.title == "Seeded"
            assert issue.url == f"{expected_base}/repos/octo/hello/issues/1"
            assert http.get("/nope").status_code == 501
            journal = http.get("/_fake/requests").json()["requests"]
            assert [(e["method"], e["path"], e["status"]) for e in journal] == [
                ("GET", "/repos/octo/hello/issues/1", 200),
                ("GET", "/nope", 501),
            ]
            assert journal[0]["headers"]["authorization"] == "<redacted>"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5.0)
            raise AssertionError("python -m fakes.github ignored SIGTERM for 10 s") from None
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
    # uvicorn re-raises the SIGTERM it handled once shutdown is complete, so a graceful stop exits -15 (not 0).
    stderr = (tmp_path / "stderr.txt").read_text()
    assert code in (0, -signal.SIGTERM), stderr
    assert "Traceback" not in stderr, stderr


def test_admin_api_seeds_apps_hooks_and_triggers_deliveries(
    served: FakeHandle[FakeGitHub], receiver: FakeHandle[Receiver]
) -> None:
    with httpx.Client(base_url=served.url, timeout=10.0) as http:
        app = http.post("/_fake/github/apps", json={"slug": "reply-bot"}).json()
        assert app["private_key"].startswith("-----BEGIN RSA PRIVATE KEY-----")
        inst = http.post("/_fake/github/installations", json={"app_id": app["id"], "account": "octo"}).json()
        assert inst["app_slug"] == "reply-bot"
        http.post("/_fake/github/hooks", json={"url": f"{receiver.url}/hook", "secret": "s3cret"}).raise_for_status()
        trigger = http.post(
            "/_fake/github/webhooks", json={"event": "issues", "action": "opened", "repo": "octo/hello", "number": 1}
        )
        assert trigger.status_code == 202
        assert trigger.json() == {"hooks": 1}
        assert http.post("/_fake/github/deliveries/drain", json={"timeout": 10}).json() == {"drained": True}
        deliveries = http.get("/_fake/github/deliveries").json()
        assert [(d["event"], d["action"], d["status"]) for d in deliveries] == [("issues", "opened", 202)]
        again = http.post(f"/_fake/github/deliveries/{deliveries[0]['id']}/redeliver", json={})
        assert again.status_code == 202
        assert http.post("/_fake/github/deliveries/drain", json={}).json() == {"drained": True}
        unknown = http.post("/_fake/github/webhooks", json={"event": "push", "action": "x", "repo": "octo/hello"})
        assert unknown.status_code == 400
        assert "no payload builder for push.x" in unknown.json()["message"]
        assert http.post("/_fake/github/clock", json={"advance": 5}).status_code == 200
    ids = [r.headers["x-github-delivery"] for r in receiver.app.received]
    assert len(ids) == 2
    assert ids[0] == ids[1]
    assert all(r.verified for r in receiver.app.received)
    assert served.requests() == []  # admin calls are never journaled
