"""The Makefile's set-up: a Python that cannot run the project is refused up front, and a ``.venv`` made by one
is rebuilt by the next plain ``make test`` instead of failing with "requires a different Python" until
``make clean``.

The real Makefile and pyproject.toml run in a scratch copy with stand-in interpreters, so nothing is installed:
``old-python`` answers like Python 3.10 (no ``tomllib``; pip refuses the project), ``good-python`` runs version
checks with this interpreter and records what it is asked to do instead of creating a real venv or installing.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from harness import process

REPO = Path(__file__).resolve().parents[2]

OLD_PYTHON = """#!/bin/sh
# Python 3.10: no tomllib, so the Makefile's check fails; pip refuses a project that needs >= 3.11.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0; fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  echo "ERROR: Package 'stack-harness' requires a different Python: 3.10.13 not in '>=3.11'" >&2; exit 1
fi
if [ "$1" = "-c" ]; then echo "ModuleNotFoundError: No module named 'tomllib'" >&2; exit 1; fi
exit 1
"""

GOOD_PYTHON = """#!/bin/sh
# A fitting Python: version checks run on the real interpreter; venv, pip, lint-imports, pytest: recorded, not run.
echo "$0 $* [bytecode off: '$PYTHONDONTWRITEBYTECODE'] [go: '$GOGC $GOMEMLIMIT']" >> "{log}"
if [ "$1" = "-c" ]; then exec "{real}" "$@"; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && ln -s python "$3/bin/lint-imports" && exit 0
fi
exit 0
"""


_OUTER_MAKE = (
    "MAKEFLAGS",
    "MFLAGS",
    "MAKELEVEL",
    "MAKEOVERRIDES",
    "PYTEST_ARGS",
    "TEST_WORKERS",
    "LONG",
    "GOGC",
    "GOMEMLIMIT",
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    copy.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, copy / name)
    return copy


def _stub(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def _make(project: Path, *args: str) -> process.Completed:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    # Without the outer make's variables: `make test PYTEST_ARGS=...` passes them down (MAKEFLAGS, the environment).
    env = {k: v for k, v in os.environ.items() if k not in _OUTER_MAKE}
    return process.run_bounded([make, "-C", str(project), *args], timeout=60.0, env=env)


def test_a_python_that_cannot_run_the_project_is_refused_and_leaves_no_venv(project: Path, tmp_path: Path) -> None:
    old = _stub(tmp_path / "old-python", OLD_PYTHON)
    done = _make(project, "test", f"PYTHON={old}")
    assert done.returncode != 0
    assert f"{old} cannot run this project (pyproject.toml: requires-python >=3.11)" in done.stderr
    assert not (project / ".venv").exists()


def test_a_venv_made_by_the_wrong_python_is_rebuilt_by_the_next_make_test(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    old = _stub(tmp_path / "old-python", OLD_PYTHON)
    good = _stub(tmp_path / "good-python", GOOD_PYTHON.format(log=log, real=sys.executable))
    (project / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(old, project / ".venv" / "bin" / "python")  # what `python3.10 -m venv` left behind
    done = _make(project, "test", f"PYTHON={good}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rebuilding .venv: its Python cannot run this project" in done.stdout
    calls = log.read_text()
    assert f"{good} -m venv .venv" in calls
    assert "-m pip install --quiet -e .[fakes] --group dev" in calls
    workers = 3 * len(os.sched_getaffinity(0))  # more workers than cores: the Makefile says why
    # bytecode kept; kubectl's garbage collector held off up to 256 MiB (the Makefile says why)
    pytest_call = f"-m pytest specs -m not cluster and not twin and not control_plane -n {workers} --dist worksteal"
    assert f"{pytest_call} [bytecode off: ''] [go: 'off 256MiB']" in calls
    checks = [calls.index(f"-m {step}") for step in ("ruff check .", "ruff format --check .", "mypy")]
    assert checks == sorted(checks)
    assert checks[1] < calls.index("lint-imports --no-cache") < checks[2]  # the import contracts, before mypy
    assert checks[-1] < calls.index("-m pytest")  # the checks run first
    again = _make(project, "test", f"PYTHON={good}")  # now it fits: kept, and not reinstalled
    assert again.returncode == 0
    assert "rebuilding" not in again.stdout
    assert log.read_text().count("-m venv") == 1
    assert log.read_text().count("pip install --quiet -e") == 1


def test_make_test_stops_at_a_failed_check_before_any_spec_runs(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    failing_lint = GOOD_PYTHON.replace(
        'if [ "$1" = "-c" ]',
        'if [ "$2" = "ruff" ] && [ "$3" = "check" ]; then echo "E501 too long" >&2; exit 1; fi\nif [ "$1" = "-c" ]',
    )
    python = _stub(tmp_path / "lint-fails-python", failing_lint.format(log=log, real=sys.executable))
    done = _make(project, "test", f"PYTHON={python}")
    assert done.returncode != 0
    assert "E501 too long" in done.stderr
    assert "-m ruff check ." in log.read_text()
    assert "-m pytest" not in log.read_text()


def test_a_worker_count_in_pytest_args_or_test_workers_overrides_the_default(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    good = _stub(tmp_path / "good-python", GOOD_PYTHON.format(log=log, real=sys.executable))
    assert _make(project, "test", f"PYTHON={good}", "PYTEST_ARGS=-n 2 -x").returncode == 0
    assert _make(project, "test", f"PYTHON={good}", "TEST_WORKERS=3").returncode == 0
    runs = [line for line in log.read_text().splitlines() if " -m pytest " in line]
    assert runs[0].endswith(" -n 2 -x [bytecode off: ''] [go: 'off 256MiB']")  # pytest takes the last -n given
    assert runs[1].endswith(" -n 3 --dist worksteal [bytecode off: ''] [go: 'off 256MiB']")


def test_make_clean_removes_the_checkers_caches(project: Path) -> None:
    for cache in (".mypy_cache", ".ruff_cache", ".hypothesis"):
        (project / cache / "x").mkdir(parents=True)
    done = _make(project, "clean")
    assert done.returncode == 0, done.stderr
    for cache in (".mypy_cache", ".ruff_cache", ".hypothesis"):
        assert not (project / cache).exists()
