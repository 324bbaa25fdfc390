"""The fake runs standalone, and from its manifest's command (as well as in-process, everywhere else). No cluster
here: the Deployment's container command is run as a local process."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "fakes" / "qdrant" / "manifests"


def _manifest_command() -> list[str]:
    deployment = yaml.safe_load((MANIFESTS / "deployment.yaml").read_text())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    command: list[str] = container["command"] + container.get("args", [])
    return command


def _run(command: list[str], tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    """Start ``command`` (port forced to 0 so the OS chooses), wait for its "listening on" line (10 s bound)."""
    argv = [
        sys.executable if command[0] == "python" else command[0],
        *command[1:],
        "--host",
        "127.0.0.1",
        "--port",
        "0",
    ]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 10.0
    line = ""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline and proc.poll() is None and "listening on" not in line:
            if sel.select(timeout=max(deadline - time.monotonic(), 0)):
                line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        out, err = proc.communicate(timeout=5)
        pytest.fail(f"{argv} did not report listening within 10 s (exit {proc.returncode}): {err[-2000:]}")
    listening = re.search(r"listening on (\S+)", line)
    assert listening is not None, line
    return proc, listening.group(1)


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_manifest_shape() -> None:
    deployment = yaml.safe_load((MANIFESTS / "deployment.yaml").read_text())
    service = yaml.safe_load((MANIFESTS / "service.yaml").read_text())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert deployment["spec"]["replicas"] == 1
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["port"] == 6333
    dockerfile = (ROOT / "fakes" / "qdrant" / "Dockerfile").read_text()
    assert '"python", "-m", "fakes.qdrant", "--host", "0.0.0.0", "--port", "6333"' in dockerfile
    copied = {word for line in dockerfile.splitlines() if line.startswith("COPY ") for word in line.split()[1:-1]}
    assert {"pyproject.toml", "README.md", "harness", "fakes"} <= copied  # what `pip install .` needs
    assert "RUN pip install '.[fake-qdrant]' " in dockerfile  # the base install lacks the fake's libraries
    assert container["command"] == ["python", "-m", "fakes.qdrant", "--host", "0.0.0.0", "--port", "6333"]


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
@pytest.mark.parametrize("source", ["manifest", "python -m"])
def test_standalone_process_serves_readyz_and_qdrant_client_and_stops_on_sigterm(tmp_path: Path, source: str) -> None:
    from qdrant_client import QdrantClient
    from qdrant_client import models as m

    command = _manifest_command() if source == "manifest" else ["python", "-m", "fakes.qdrant", "--api-key", "k"]
    proc, url = _run(command, tmp_path)
    try:
        assert httpx.get(url + "/readyz", timeout=5).text == "all shards are ready"
        client = QdrantClient(
            url=url, api_key="k" if source != "manifest" else None, https=False, timeout=5, check_compatibility=False
        )
        client.create_collection("c", vectors_config=m.VectorParams(size=2, distance=m.Distance.DOT))
        client.upsert("c", [m.PointStruct(id=1, vector=[1.0, 2.0])])
        assert client.count("c").count == 1
        client.close()
        journal = httpx.get(url + "/_fake/requests", timeout=5).json()["requests"]
        assert [e["path"] for e in journal][-1] == "/collections/c/points/count"
    finally:
        code = _stop(proc)
    assert code == 0
    assert list(tmp_path.iterdir()) == []  # shard files removed on exit
