"""What an adopter receives: the wheel pip builds from a copy of this checkout (as ``pip install PATH`` or a git URL
does) holds the generic harness and the fakes, typed (``py.typed``), with each fake's manifests and Dockerfile and
the control plane's Go wrapper modules, and nothing of the agent-controller stack; and the build leaves nothing
behind in the checkout it was built from.

The build backend (``[build-system]``) comes from the venv when it is installed there (``--no-build-isolation``: no
registry needed), else pip fetches it into an isolated build environment, as an adopter's pip does."""

from __future__ import annotations

import fnmatch
import importlib.metadata
import os
import re
import shutil
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
from packaging.requirements import Requirement

from harness.process import run_bounded

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 240.0
"""Seconds for one ``pip wheel`` (a few seconds with the backend at hand; fetching it takes longer)."""
# The stack's own names: its namespace, its Helm release and Python layer, its CRD kind, its services. Each but the
# layer's module name appears in fakes/stack's manifests (checked below), so the list names the stack, not guesses.
STACK_NAMES = ("controller-agent", "agent-controller", "agentrun", "agent-orchestrator", "openwebui")
LAYER_NAME = "agent_controller"  # specs.agent_controller, the stack layer's package
STACK_WORDS = re.compile("|".join(map(re.escape, (*STACK_NAMES, LAYER_NAME))), re.IGNORECASE)

pytestmark = pytest.mark.timeout(BUILD_TIMEOUT + 60)


@dataclass(frozen=True)
class Built:
    checkout: Path
    before: list[str]
    after: list[str]
    wheel: Path
    editable: Path
    """Where an editable install (``pip install -e``, as ``make venv`` runs it) of the copy went."""

    def names(self) -> list[str]:
        with zipfile.ZipFile(self.wheel) as archive:
            return archive.namelist()

    def read(self, name: str) -> str:
        with zipfile.ZipFile(self.wheel) as archive:
            return archive.read(name).decode("utf-8")


def checkout_files() -> list[str]:
    """The checkout as a fresh clone plus new work has it: tracked and untracked files, less what git ignores."""
    done = run_bounded(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], timeout=30.0, cwd=str(ROOT)
    )
    assert done.returncode == 0, done.stderr
    return sorted(f for f in done.stdout.split("\0") if f and (ROOT / f).is_file())


def every_path(folder: Path) -> list[str]:
    """Every file and folder under ``folder``, relative, hidden ones included."""
    return sorted(p.relative_to(folder).as_posix() + ("/" if p.is_dir() else "") for p in folder.rglob("*"))


def backend_at_hand() -> bool:
    """Whether this venv has every ``[build-system]`` requirement, at a version the requirement allows."""
    for line in tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]:
        requirement = Requirement(line)
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return False
        if not requirement.specifier.contains(version, prereleases=True):
            return False
    return True


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    checkout = tmp_path_factory.mktemp("checkout")
    for name in checkout_files():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, checkout / name)
    before = every_path(checkout)
    out = tmp_path_factory.mktemp("wheel")
    isolation = ["--no-build-isolation"] if backend_at_hand() else []
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    # The editable install goes to a venv of its own: pip uninstalls a project's installed copy before installing
    # it, whatever --prefix says, so installing into this venv's Python would remove its own editable install. pip
    # then builds for that venv's Python, which has no backend: always with build isolation.
    editable = tmp_path_factory.mktemp("editable")
    run = [sys.executable, "-m", "venv", "--without-pip", str(editable)]
    pip = [sys.executable, "-m", "pip", "--quiet"]
    target = ["--python", str(editable / "bin" / "python")]
    for argv in (
        run,
        [*pip, "wheel", "--no-deps", *isolation, "-w", str(out), str(checkout)],
        [*pip, *target, "install", "--no-deps", "-e", str(checkout)],
    ):
        done = run_bounded(argv, timeout=BUILD_TIMEOUT, cwd=str(out), env=env)
        assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    (wheel,) = out.glob("*.whl")
    return Built(checkout, before, every_path(checkout), wheel, editable)


def shipped(name: str) -> bool:
    """Whether the checkout's file ``name`` belongs in the wheel: the packages' Python and ``py.typed`` markers,
    each fake's Dockerfile and manifests, the control plane's Go wrapper modules; nothing of fakes/stack."""
    path = PurePosixPath(name)
    if path.parts[0] not in ("harness", "fakes") or name.startswith("fakes/stack/"):
        return False
    if path.suffix == ".py" or path.name == "py.typed":
        return True
    if fnmatch.fnmatchcase(name, "fakes/*/Dockerfile") or fnmatch.fnmatchcase(name, "fakes/*/manifests/*.yaml"):
        return True
    modules = name.startswith("harness/controlplane/modules/")
    return modules and (path.name in ("go.mod", "go.sum") or path.suffix == ".go")


def test_the_wheel_holds_the_harness_and_the_fakes_and_nothing_else(built: Built) -> None:
    names = built.names()
    (dist_info,) = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
    packaged = sorted(n for n in names if not n.startswith(f"{dist_info}/"))
    assert packaged == [n for n in checkout_files() if shipped(n)]
    assert {n.split("/")[0] for n in packaged} == {"harness", "fakes"}
    assert [n for n in packaged if n.startswith("fakes/stack/")] == []
    for name in ("harness/py.typed", "fakes/py.typed", "fakes/kube/__main__.py", "fakes/qdrant/Dockerfile"):
        assert name in packaged
    assert {n for n in packaged if n.startswith("fakes/") and n.endswith(".yaml")} == {
        "fakes/github/manifests/deployment.yaml",
        "fakes/github/manifests/service.yaml",
        "fakes/openai/manifests/deployment.yaml",
        "fakes/openai/manifests/rules-configmap.yaml",
        "fakes/openai/manifests/service.yaml",
        "fakes/qdrant/manifests/deployment.yaml",
        "fakes/qdrant/manifests/service.yaml",
    }
    # Every file of the Go wrapper modules: an adopter's `python -m harness.controlplane build` reads them all.
    modules = [n for n in checkout_files() if n.startswith("harness/controlplane/modules/")]
    assert len(modules) >= 9
    assert [n for n in modules if n not in packaged] == []
    entry_points = built.read(f"{dist_info}/entry_points.txt")
    assert re.search(r"^\[pytest11\]\nharness = harness\.pytest_plugin$", entry_points, re.MULTILINE), entry_points


def test_nothing_in_the_wheel_names_the_agent_controller_stack(built: Built) -> None:
    stack = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "fakes" / "stack").rglob("*.yaml")))
    assert [n for n in STACK_NAMES if n not in stack.lower()] == []  # the words are the stack's own
    found = [n for n in built.names() if STACK_WORDS.search(n)]
    for name in built.names():
        text = built.read(name)
        lines = enumerate(text.splitlines(), start=1)
        found += [f"{name}:{n}: {line.strip()[:100]}" for n, line in lines if STACK_WORDS.search(line)]
    assert found == []


def test_building_and_installing_leave_the_checkout_as_it_was(built: Built) -> None:
    assert [p for p in built.after if p not in built.before] == []  # no build/, no *.egg-info
    assert built.after == built.before


def test_an_editable_install_puts_the_checkout_itself_on_the_path(built: Built) -> None:
    """What ``make venv`` relies on: the repository root importable, so specs.* and fakes.stack load from it."""
    (pth,) = [p for p in built.editable.rglob("*.pth") if "stack_harness" in p.name]
    assert set(pth.read_text().split()) == {str(built.checkout)}
