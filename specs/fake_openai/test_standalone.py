"""The fake model endpoint standalone: ``python -m fakes.openai --rules FILE`` and the command its Deployment runs with
the ConfigMap's rules, scripted and read through the HTTP admin API only, as a spec against the cluster copy would;
and the manifests agree with the code (probe path, port, labels, rules that load)."""

from __future__ import annotations

import json
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from fakes.openai import HEALTH_PATH, CallLog, Script
from harness.process import kill_group, run_bounded, spawn

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "fakes" / "openai" / "manifests"
START_TIMEOUT = 30.0  # seconds for the process to print its listening line (imports included, on a loaded CI box)


def _docs(name: str) -> dict[str, Any]:
    docs: dict[str, Any] = yaml.safe_load((MANIFESTS / name).read_text())
    return docs


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
        f"python -m fakes.openai printed no listening line within {timeout:.0f} s (exit code {proc.poll()})"
    )


def _argv(kind: str, rules: Path) -> list[str]:
    if kind == "module":
        return [sys.executable, "-m", "fakes.openai", "--port", "0", "--rules", str(rules), "--api-key", "sk-a"]
    container = _docs("deployment.yaml")["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:3] == ["python", "-m", "fakes.openai"]
    # The manifest's own command; only the bind address is overridden (last flag wins) so the OS picks the port.
    return [
        sys.executable,
        *container["command"][1:],
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--rules",
        str(rules),
        "--api-key",
        "sk-a",
    ]


@pytest.mark.parametrize("kind", ["module", "manifest"])
def test_standalone_fake_loads_rules_serves_and_captures(kind: str, tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    if kind == "manifest":
        rules.write_text(_docs("rules-configmap.yaml")["data"]["rules.json"])
    else:
        rules.write_text(json.dumps([{"name": "from-file", "when": {"last_user": "ping"}, "reply": {"text": "pong"}}]))
    proc = spawn(_argv(kind, rules))
    try:
        line = _read_line(proc, START_TIMEOUT)
        assert line.startswith("fake openai listening on http://127.0.0.1:"), line
        url = line.rsplit(" ", 1)[-1].strip()
        with httpx.Client(base_url=url, timeout=10.0) as http:
            assert http.get(HEALTH_PATH).text == "ok"
            added = http.post(
                "/_fake/openai/rules",
                json={"name": "admin", "when": {"last_user": "admin"}, "reply": {"text": "from admin"}},
            )
            assert added.status_code == 201
            client = openai.OpenAI(base_url=url + "/v1", api_key="sk-a", max_retries=0, timeout=10.0)
            with client:
                said = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "ping"}])
                admin = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "admin"}])
                with pytest.raises(openai.AuthenticationError):
                    openai.OpenAI(base_url=url + "/v1", api_key="sk-b", max_retries=0).models.list()
            assert admin.choices[0].message.content == "from admin"
            if kind == "module":
                assert said.choices[0].message.content == "pong"
            log = CallLog.from_admin(http.get("/_fake/openai/calls").json())
            assert [c.rule for c in log.model_calls()] == ["from-file" if kind == "module" else "default", "admin"]
            assert http.post("/_fake/reset").status_code == 200
            assert [r["name"] for r in http.get("/_fake/openai/rules").json()["rules"]] == [
                r.name for r in Script.load(rules).rules
            ]
    finally:
        kill_group(proc, first=signal.SIGTERM, grace=10.0)
    assert proc.returncode == 0


def test_a_bad_rules_file_stops_the_start_with_a_message(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"when": {"nonsense": 1}, "reply": {"text": "x"}}]))
    done = run_bounded([sys.executable, "-m", "fakes.openai", "--port", "0", "--rules", str(rules)], timeout=60.0)
    assert done.returncode == 2
    assert "cannot load rules" in done.stderr
    assert "nonsense" in done.stderr


def test_manifests_agree_with_the_fake() -> None:
    deployment, service = _docs("deployment.yaml"), _docs("service.yaml")
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == HEALTH_PATH
    assert "--port" in container["command"]
    assert container["command"][container["command"].index("--port") + 1] == str(container["ports"][0]["containerPort"])
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert deployment["spec"]["replicas"] == 1
    mounted = {m["mountPath"] for m in container["volumeMounts"]}
    rules_path = next(e["value"] for e in container["env"] if e["name"] == "FAKE_OPENAI_RULES")
    assert str(Path(rules_path).parent) in mounted
    Script.from_spec(json.loads(_docs("rules-configmap.yaml")["data"]["rules.json"]))  # loads without error
    dockerfile = (ROOT / "fakes" / "openai" / "Dockerfile").read_text()
    assert '"python", "-m", "fakes.openai", "--host", "0.0.0.0", "--port", "8080"' in dockerfile
    assert "RUN pip install '.[fake-openai]' " in dockerfile  # the base install lacks the fake's libraries
