"""The import contracts (``[tool.importlinter]`` in pyproject.toml, ``lint-imports`` in ``make lint``) still bite.

Each spec copies the three layers' sources (harness, fakes, specs/agent_controller) and the contracts into a temporary
folder, plants one violation in the copy and runs the real ``lint-imports`` there: a layer break (the generic harness
importing the stack layer), a fake importing a harness module outside the public list, and an import circle made of
an import inside a function. The clean copy passes, so a failure is the planted line's doing, and the output names the
planted modules, so the copy (not the installed packages) is what was analysed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
TIMEOUT = 120.0  # seconds: a cold graph of the three layers takes about 1 s on an idle machine


def _copy_sources(into: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.yaml", "Dockerfile", "*.md")
    shutil.copytree(ROOT / "harness", into / "harness", ignore=ignore)
    shutil.copytree(ROOT / "fakes", into / "fakes", ignore=ignore)
    shutil.copytree(ROOT / "specs" / "agent_controller", into / "specs" / "agent_controller", ignore=ignore)
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert contracts["contracts"], "pyproject.toml has no [tool.importlinter] contracts"
    (into / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())


def _lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", "pyproject.toml"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(where), "HOME": str(where)},
    )


def _plant(path: Path, text: str) -> None:
    path.write_text(path.read_text() + "\n\n" + text + "\n")


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    _copy_sources(tmp_path)
    return tmp_path


def test_the_repository_keeps_every_contract() -> None:
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_a_clean_copy_passes(copy: Path) -> None:
    done = _lint_imports(copy)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_generic_harness_importing_the_stack_layer_fails(copy: Path) -> None:
    _plant(
        copy / "harness" / "ids.py",
        "def _planted() -> None:\n    from specs.agent_controller import agentruns  # noqa: F401",
    )
    done = _lint_imports(copy)
    assert done.returncode != 0
    assert "The generic harness imports neither the stack layer nor the fakes BROKEN" in done.stdout
    assert "harness.ids -> specs.agent_controller.agentruns" in done.stdout


def test_a_fake_importing_a_harness_module_outside_the_public_list_fails(copy: Path) -> None:
    _plant(copy / "fakes" / "journal.py", "from harness import waiting  # noqa: F401")
    done = _lint_imports(copy)
    assert done.returncode != 0
    assert "fakes.journal -> harness.waiting" in done.stdout
    assert "BROKEN" in done.stdout


def test_a_circle_through_an_import_inside_a_function_fails(copy: Path) -> None:
    # harness.waiting imports harness.attempts; the planted import closes the circle.
    _plant(copy / "harness" / "attempts.py", "def _planted() -> None:\n    from harness import waiting  # noqa: F401")
    done = _lint_imports(copy)
    assert done.returncode != 0
    assert "No import circle anywhere" in done.stdout
    assert "No cycles are allowed in harness." in done.stdout
    assert ".attempts -> .waiting" in done.stdout or ".waiting -> .attempts" in done.stdout


def test_a_circle_under_type_checking_fails(copy: Path) -> None:
    # fakes.runtime imports fakes.admin: an annotation-only import back is a circle all the same.
    _plant(
        copy / "fakes" / "admin.py",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from fakes.runtime import FakeRuntime as _Planted",
    )
    done = _lint_imports(copy)
    assert done.returncode != 0
    assert "No cycles are allowed in fakes." in done.stdout
    assert ".admin -> .runtime" in done.stdout or ".runtime -> .admin" in done.stdout


def test_a_twin_service_importing_the_doubles_store_fails(copy: Path) -> None:
    _plant(copy / "fakes" / "stack" / "gateway.py", "from fakes.kube.store import Store as _Planted  # noqa: F401")
    done = _lint_imports(copy)
    assert done.returncode != 0
    assert "The twin's services reach Kubernetes only through the API client" in done.stdout
    assert "fakes.stack.gateway -> fakes.kube.store" in done.stdout
