"""Adopting the harness for another stack, as a newcomer would: a foreign project (its own ``pyproject.toml`` and
``[tool.harness]``, its own Deployments and Services) runs its specs with the installed plugin against a standalone
Kubernetes API double (``python -m fakes.kube``), in an inner pytest process; and the examples of
``docs/your-stack.md`` (its cluster spec, and its specs on the double with their manifests) run verbatim, so they
cannot rot.

Process-level behaviour is what is checked (what the engineer sees in the terminal and on disk), so the inner runs are
subprocesses, never pytester in this process.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTEXT = "kind-shop"
NAMESPACE = "shop"
INNER_TIMEOUT = 240.0
"""Seconds for one inner pytest run (a few seconds on an idle machine; generous for a loaded CI runner)."""
DOUBLE_START_TIMEOUT = 60.0
STACK_WORDS = re.compile(r"agent-controller|agent_controller|controller-agent|orchestrator|minikube", re.IGNORECASE)

PYPROJECT = f"""[project]
name = "shop"
version = "0.1.0"

[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"

[tool.harness]
allowed_contexts = ["{CONTEXT}"]
namespace = "{NAMESPACE}"
keep_runs = 3
"""

WEB = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.local/shop-web:1.4
          ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
"""

# Its pods crash: the API double's fault annotations (fakes/kube/lifecycle.py), with a short first back-off.
API = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
      annotations:
        double.stack-harness.dev/crash-loop: "true"
        double.stack-harness.dev/backoff: "0.2"
        double.stack-harness.dev/logs: "connecting to postgres at db:5432\\npanic: connection refused"
    spec:
      containers:
        - name: api
          image: registry.local/shop-api:2.0
---
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  selector: {app: api}
  ports: [{port: 80, targetPort: 9000}]
"""

SHOP_SPECS = """from pathlib import Path

import pytest

from harness import rollout_complete, wait_for, wait_for_sync

DEPLOY = Path(__file__).parent / "deploy"


@pytest.fixture(scope="module")
def web(kube, module_cleanup):
    module_cleanup.apply((DEPLOY / "web.yaml").read_text())
    kube.rollout_status("web", timeout=60)


@pytest.mark.cluster
def test_web_runs_two_ready_pods(kube, web):
    pods = wait_for_sync("two ready web pods", lambda: ready_pods(kube), timeout=60)
    assert len(pods) == 2


@pytest.mark.cluster
@pytest.mark.anyio
async def test_web_service_selects_its_pods(kube, web):
    await wait_for("web to roll out", rollout_complete(kube, "deployment/web"), timeout=60)
    assert kube.kubectl_json("get", "service", "web")["spec"]["selector"] == {"app": "web"}


def ready_pods(kube):
    pods = kube.kubectl_json("get", "pods", "-l", "app=web")["items"]
    ready = [p for p in pods if {"type": "Ready", "status": "True"} in conditions(p)]
    return ready if len(ready) == 2 else None


def conditions(pod):
    return [{"type": c["type"], "status": c["status"]} for c in pod["status"].get("conditions", [])]
"""

API_SPECS = """from pathlib import Path

import pytest


@pytest.mark.cluster
def test_api_rolls_out(kube, cleanup):
    cleanup.apply((Path(__file__).parent / "deploy" / "api.yaml").read_text())
    kube.rollout_status("api", timeout=120)
"""

UNRELATED_SPECS = """def test_prices_add_up():
    assert sum([1.5, 2.5]) == 4.0
"""


@dataclass
class Inner:
    """One inner pytest run: its exit status, output (stdout and stderr) and the outcome of each spec (JUnit)."""

    returncode: int
    output: str
    outcomes: dict[str, str]


def _environment(state: Path) -> dict[str, str]:
    """The outer environment without pytest's and the harness's own variables (an inner run is a fresh session);
    the harness's state directory and ``$HOME`` (where kubectl keeps its discovery cache) private to the spec."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HARNESS_")) and k != "KUBECONFIG"}
    env["HARNESS_STATE_DIR"] = str(state)
    env["HOME"] = str(state / "home")
    return env


def run_inner(project: Path, *args: str) -> Inner:
    junit = project / ".junit.xml"
    junit.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", f"--junitxml={junit}", *args],
        cwd=project,
        env=_environment(project.parent / "state"),
        capture_output=True,
        text=True,
        timeout=INNER_TIMEOUT,
    )
    outcomes: dict[str, str] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            failed = case.find("failure") is not None or case.find("error") is not None
            outcomes[case.get("name", "")] = (
                "failed" if failed else "skipped" if case.find("skipped") is not None else "passed"
            )
        junit.unlink()
    return Inner(done.returncode, done.stdout + done.stderr, outcomes)


@dataclass
class ApiDouble:
    kubeconfig: Path
    process: subprocess.Popen[str]


def _wait_for_banner(process: subprocess.Popen[str]) -> str:
    """The double's ``fake kube listening on URL`` line, read within DOUBLE_START_TIMEOUT seconds."""
    assert process.stdout is not None
    deadline = time.monotonic() + DOUBLE_START_TIMEOUT
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if selector.select(timeout=left):
                line = process.stdout.readline()
                if line.startswith("fake kube listening on"):
                    return line.strip()
                if not line:
                    break
    raise AssertionError(f"python -m fakes.kube did not start (exit {process.poll()}): {process.stderr}")


@pytest.fixture
def api_double(tmp_path: Path) -> Iterator[ApiDouble]:
    """A standalone Kubernetes API double serving context ``kind-shop`` (namespace ``shop``), in its own process
    group; stopped with SIGTERM (it removes the kubeconfig it wrote), killed if it does not exit within 10 s."""
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "fakes.kube", "--kubeconfig", str(kubeconfig), "--context", CONTEXT]
        + ["--namespace", NAMESPACE],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_for_banner(process)
        yield ApiDouble(kubeconfig, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


def write_project(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return write_project(
        tmp_path / "shop",
        {
            "pyproject.toml": PYPROJECT,
            "deploy/web.yaml": WEB,
            "deploy/api.yaml": API,
            "test_shop.py": SHOP_SPECS,
            "test_shop_api.py": API_SPECS,
            "test_unrelated.py": UNRELATED_SPECS,
        },
    )


@pytest.mark.timeout(2 * INNER_TIMEOUT + DOUBLE_START_TIMEOUT)
def test_a_foreign_project_runs_its_specs_against_its_own_cluster(shop: Path, api_double: ApiDouble) -> None:
    unrelated = run_inner(shop, "test_unrelated.py")
    assert unrelated.outcomes == {"test_prices_add_up": "passed"}, unrelated.output
    assert not (shop / "artifacts").exists(), "a run that never used the harness wrote an artifacts/ folder"
    assert [line for line in unrelated.output.splitlines() if "harness" in line.lower()] == []

    run = run_inner(shop, f"--kubeconfig={api_double.kubeconfig}", "test_shop.py", "test_shop_api.py")
    assert run.outcomes == {
        "test_web_runs_two_ready_pods": "passed",
        "test_web_service_selects_its_pods[asyncio]": "passed",
        "test_api_rolls_out": "failed",
    }, run.output
    assert f"harness: cluster specs use kube context '{CONTEXT}'" in run.output
    assert f"namespace '{NAMESPACE}'" in run.output

    # The crash loop fails at once, cause first, with the previous log; its evidence is on disk.
    headline = "deployment/api did not roll out: the new pod crash-loops (container api, last terminated Error exit 1"
    assert f"RolloutTerminal: {headline}" in run.output
    assert "panic: connection refused" in run.output
    (folder,) = (shop / "artifacts").glob("*/test_shop_api.py__test_api_rolls_out")
    assert (folder / "failure.txt").read_text().splitlines()[0].startswith(headline)
    (previous,) = folder.glob("pod-api-*.api.previous.log")
    assert "panic: connection refused" in previous.read_text()
    assert f"evidence in artifacts/{folder.parent.name}/{folder.name}" in run.output

    # No twin, and nothing of this repository's own stack, in anything the engineer reads.
    assert "twin" not in run.output.lower()
    assert [line for line in run.output.splitlines() if STACK_WORDS.search(line)] == []


DOC = ROOT / "docs" / "your-stack.md"
EXAMPLE = re.compile(r"<!-- example: your-stack -->\n```python\n(.*?)```\n<!-- /example -->", re.DOTALL)


def documented_example() -> str:
    """The code block between the example's marker comments in docs/your-stack.md, verbatim."""
    found = EXAMPLE.search(DOC.read_text(encoding="utf-8"))
    assert found is not None, f"{DOC.relative_to(ROOT)} lost its example markers (<!-- example: your-stack -->)"
    return found.group(1)


@pytest.mark.timeout(INNER_TIMEOUT + DOUBLE_START_TIMEOUT)
def test_the_documented_example_runs_as_written(tmp_path: Path, api_double: ApiDouble) -> None:
    example = documented_example()
    project = write_project(
        tmp_path / "example",
        {
            "pyproject.toml": f'[project]\nname = "shop"\n\n[tool.harness]\nallowed_contexts = ["{CONTEXT}"]\n',
            "tests/web.yaml": WEB,
            "tests/test_web.py": example,
        },
    )
    run = run_inner(
        project, "-p", "no:cacheprovider", f"--kubeconfig={api_double.kubeconfig}", "--kube-context", CONTEXT
    )
    assert run.outcomes == {"test_web_rolls_out[asyncio]": "passed"}, run.output
    assert f"harness: cluster specs use kube context '{CONTEXT}'" in run.output
    assert len(example.strip().splitlines()) <= 15  # a short example, as the page promises


# The page's examples on the Kubernetes API double: each file between `<!-- double-example: NAMES PATH -->` and
# `<!-- /double-example -->` is written verbatim to PATH in the project of every example NAMES lists, and each
# project's specs run in an inner pytest against the `fake_kube` fixture its conftest.py (also from the page) loads.
DOUBLE_EXAMPLE = re.compile(
    r"<!-- double-example: ([\w,-]+) (\S+) -->\n```\w+\n(.*?)```\n<!-- /double-example -->", re.DOTALL
)
DOUBLE_EXAMPLES = ("faults", "local-process")
DOUBLE_SECTION = "\n## Your pods on the Kubernetes API double\n"


def double_examples() -> dict[str, dict[str, str]]:
    """Each double example's files, ``{name: {path: text}}``, verbatim from docs/your-stack.md."""
    found: dict[str, dict[str, str]] = {}
    for names, path, body in DOUBLE_EXAMPLE.findall(DOC.read_text(encoding="utf-8")):
        for name in names.split(","):
            files = found.setdefault(name, {})
            assert path not in files, f"double example {name} has {path} twice"
            files[path] = body
    return found


def test_every_code_block_about_the_double_is_an_example_that_runs() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert sorted(double_examples()) == sorted(DOUBLE_EXAMPLES)
    section = text.split(DOUBLE_SECTION, 1)[1].split("\n## ", 1)[0]
    fences = section.count("\n```") // 2
    assert fences == len(DOUBLE_EXAMPLE.findall(section)), "a code block about the double runs in no spec"
    for name, files in double_examples().items():
        assert "conftest.py" in files, name
        assert any(path.endswith(".py") and "def test_" in body for path, body in files.items()), name


@pytest.mark.parametrize("name", DOUBLE_EXAMPLES)
@pytest.mark.timeout(INNER_TIMEOUT + 30)
def test_each_example_on_the_double_runs_as_written(tmp_path: Path, name: str) -> None:
    files = double_examples()[name]
    project = write_project(tmp_path / name, {"pyproject.toml": '[project]\nname = "shop"\n', **files})
    run = run_inner(project, "-p", "no:cacheprovider")
    specs = [line for body in files.values() for line in body.splitlines() if line.startswith("def test_")]
    assert len(run.outcomes) == len(specs) >= 1, run.output
    assert set(run.outcomes.values()) == {"passed"}, run.output
