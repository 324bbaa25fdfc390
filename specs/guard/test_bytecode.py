"""The suite's rewrite-ahead plugin (``specs/bytecode.py``): the xdist controller writes pytest's rewritten pyc for
the modules every worker would rewrite, in the form pytest's own loader accepts, and only where it is missing or
stale. Checked with pytest's own reader (``_pytest.assertion.rewrite._read_pyc``), the function a worker calls
before it rewrites a module itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc

from specs.bytecode import modules_to_rewrite, rewrite_ahead

pytest_plugins = ["pytester"]


def _cached(source: Path) -> Path:
    return source.parent / "__pycache__" / (source.name[:-3] + PYC_TAIL)


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    root = pytester.path
    (root / "tests" / "deep").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("def test_a():\n    x = 1\n    assert x == 2\n")
    (root / "tests" / "deep" / "conftest.py").write_text("X = 1\n")
    (root / "tests" / "deep" / "helper.py").write_text("Y = 2\n")
    (root / "harness").mkdir()
    (root / "harness" / "__init__.py").write_text("")
    (root / "harness" / "wait.py").write_text("def f(x):\n    assert x\n")
    return root


def test_the_modules_are_test_files_conftests_and_the_plugins_packages(project: Path) -> None:
    found = modules_to_rewrite(project, [project / "tests"], ["test_*.py"])
    names = [p.relative_to(project).as_posix() for p in found]
    assert names == ["tests/deep/conftest.py", "tests/test_a.py", "harness/__init__.py", "harness/wait.py"]


@pytest.mark.parametrize("processes", [1, 3])
def test_what_is_written_is_what_pytest_loads_and_only_once(
    pytester: pytest.Pytester, project: Path, processes: int
) -> None:
    config = pytester.parseconfig()
    sources = list(modules_to_rewrite(project, [project / "tests"], ["test_*.py"]))
    assert rewrite_ahead(config, sources, processes=processes) == len(sources)
    for source in sources:
        assert _read_pyc(source, _cached(source)) is not None, source
    test_code = _read_pyc(project / "tests" / "test_a.py", _cached(project / "tests" / "test_a.py"))
    assert test_code is not None
    assert "@pytest_ar" in test_code.co_names, "the asserts are rewritten, as a worker would rewrite them"
    assert rewrite_ahead(config, sources) == 0, "nothing is stale: nothing is written again"
    (project / "harness" / "wait.py").write_text("def f(x):\n    assert not x\n")
    assert rewrite_ahead(config, sources) == 1, "a changed source is stale"


def test_a_module_that_does_not_parse_or_is_gone_is_left_to_the_worker(
    pytester: pytest.Pytester, project: Path
) -> None:
    broken = project / "tests" / "test_broken.py"
    broken.write_text("def test_x(:\n")
    gone = project / "tests" / "test_gone.py"
    assert rewrite_ahead(pytester.parseconfig(), [broken, gone, project / "tests" / "test_a.py"]) == 1
    assert not _cached(broken).exists()
    assert not _cached(gone).exists()


def test_a_run_without_workers_writes_nothing(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest_inprocess("-p", "specs.bytecode", "tests/deep")
    result.assert_outcomes()
    assert not _cached(project / "harness" / "wait.py").exists()


def test_a_run_with_workers_writes_them_before_the_workers_start(
    pytester: pytest.Pytester, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    pytester.runpytest_inprocess("-n", "1", "-p", "specs.bytecode", "tests/deep").assert_outcomes()
    for source in (project / "tests" / "deep" / "conftest.py", project / "harness" / "wait.py"):
        assert _read_pyc(source, _cached(source)) is not None, source
