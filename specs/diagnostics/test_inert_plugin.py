"""Inert until used: in a project that installs the harness but runs specs that use none of it, the plugin prints
nothing, writes nothing and loads nothing heavy (of the harness, its entry module alone); a spec module that imports
the harness, or a body that does, is a use too; run folders appear only when there is something to keep, and old
ones are pruned to ``[tool.harness] keep_runs``. The start-up time itself is measured, not asserted:
benchmarks/bench_plugin_startup.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

PLAIN_SPECS = "def test_adds():\n    assert 1 + 1 == 2\n\n\ndef test_fails():\n    assert 1 + 1 == 3\n"
MODULES_SEEN = """
import json, sys

def pytest_sessionfinish(session):
    with open("modules.json", "w") as f:
        json.dump(sorted(sys.modules), f)
"""
HEAVY = ("kubernetes", "httpx", "yaml", "aiohttp", "cryptography", "jwt", "fakes")
"""Libraries a run that uses no harness fixture must not load (the plugin's own light modules may load)."""
HEAVY_HARNESS = ("evidence", "cleanup", "rollout", "report", "portforward", "forward_pool", "fetch", "chat", "waiting")


def foreign_project(pytester: pytest.Pytester, state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project of another team: its own pyproject.toml (no [tool.harness]), plain specs, a private state dir."""
    pytester.makefile(".toml", pyproject='[project]\nname = "other"\nversion = "0"\n')
    pytester.makepyfile(test_plain=PLAIN_SPECS)
    monkeypatch.setenv("HARNESS_STATE_DIR", str(state))


def test_a_run_that_uses_nothing_of_the_harness_prints_writes_and_loads_nothing_of_it(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    foreign_project(pytester, state, monkeypatch)
    pytester.makeconftest(MODULES_SEEN)
    before = {p.name for p in pytester.path.iterdir()}
    # What is imported is per process: this run has a process of its own, with every installed plugin a user has.
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1, failed=1)  # a failure too: a plain failure has no evidence to keep
    said = [line for line in result.outlines + result.errlines if not line.startswith(("plugins:", "rootdir:"))]
    assert not [line for line in said if re.search(r"harness|stack target|twin|namespace", line)]
    pytester_own = {"modules.json", "stdout", "stderr"}  # runpytest_subprocess's captures and its basetemp
    pytester_own.add("__pycache__")  # Python's bytecode of the inner specs (make test writes bytecode)
    after = {
        p.name for p in pytester.path.iterdir() if p.name not in pytester_own and not p.name.startswith("runpytest")
    }
    assert after == before  # no artifacts/ folder
    assert not state.exists() or not list(state.iterdir())  # no lock, counter or state file
    loaded = set(json.loads((pytester.path / "modules.json").read_text()))
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]
    assert not [m for m in loaded if m.startswith("harness.") and m.split(".")[1] in HEAVY_HARNESS]


def test_a_spec_that_uses_a_harness_fixture_gets_a_run_folder_and_old_ones_are_pruned(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign_project(pytester, tmp_path / "state", monkeypatch)
    pytester.makefile(".toml", pyproject='[project]\nname = "other"\nversion = "0"\n\n[tool.harness]\nkeep_runs = 3\n')
    pytester.makepyfile(test_uses="def test_number(issue_number):\n    assert issue_number > 0\n")
    art = pytester.path / "artifacts"
    art.mkdir()
    old = [art / f"2026010{i}-000000-00000{i}" for i in range(1, 6)]
    for folder in old:
        folder.mkdir()
    (art / "notes").mkdir()  # not a run folder: never touched
    result = pytester.runpytest("-p", "no:cacheprovider", "test_uses.py")
    result.assert_outcomes(passed=1)
    runs = sorted(p.name for p in art.iterdir() if p.name != "notes")
    assert runs[:2] == [old[3].name, old[4].name]  # the newest two old ones, and this run's own
    assert len(runs) == 3
    assert (art / runs[2] / "report.html").is_file()
    assert (art / "notes").is_dir()


def test_harness_report_writes_a_report_even_for_plain_specs(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign_project(pytester, tmp_path / "state", monkeypatch)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-report")
    result.assert_outcomes(passed=1, failed=1)
    (run,) = (pytester.path / "artifacts").iterdir()
    page = (run / "report.html").read_text()
    assert "test_plain.py::test_adds" in page
    assert "test_plain.py::test_fails" in page


def test_until_used_the_plugin_loads_its_entry_module_alone_and_registers_no_other_plugin(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign_project(pytester, tmp_path / "state", monkeypatch)
    pytester.makeconftest(MODULES_SEEN)  # what the whole run loaded, at its end
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    # anyio's own pytest plugin (anyio comes with httpx) imports anyio whatever the harness does: left out here
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:anyio", timeout=120)
    result.assert_outcomes(passed=1, failed=1)
    loaded = set(json.loads((pytester.path / "modules.json").read_text()))
    ours = sorted(m for m in loaded if m.split(".")[0] in ("harness", "fakes"))
    assert ours == ["harness", "harness.pytest_plugin"]
    assert not [m for m in loaded if m.split(".")[0] in (*HEAVY, "anyio")]


def test_a_spec_module_that_imports_the_harness_gets_its_waits_reported_without_a_fixture_or_marker(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign_project(pytester, tmp_path / "state", monkeypatch)
    pytester.makepyfile(
        test_waits="import harness\n\n"
        "def test_red():\n"
        "    harness.wait_for_sync('the module-level import', lambda: None, timeout=0.2, interval=0.05)\n"
    )
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_waits.py", timeout=120)
    result.assert_outcomes(failed=1)
    assert any("harness waits" in line for line in result.outlines)
    assert any("test_red: timeout" in line and "the module-level import" in line for line in result.outlines)


def test_a_wait_imported_only_in_a_spec_body_is_still_clamped_to_the_spec_timeout(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign_project(pytester, tmp_path / "state", monkeypatch)
    pytester.makepyfile(
        test_late="import pytest\n\n"
        "@pytest.mark.timeout(30)\n"
        "def test_clamped():\n"
        "    from harness.waiting import test_time_left\n\n"
        "    left = test_time_left()\n"
        "    assert left is not None and 0 < left <= 30\n\n"
        "def test_after_it():\n"
        "    import sys\n\n"
        "    assert 'harness.cluster_plugin' in sys.modules  # registered after the spec that imported the harness\n"
    )
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "test_late.py", timeout=120)
    result.assert_outcomes(passed=2)


def test_the_entry_modules_copies_of_option_values_equal_their_sources() -> None:
    from harness import artifacts, progress, pytest_plugin, targets

    assert pytest_plugin.TARGETS == targets.TARGETS
    assert pytest_plugin.PROGRESS_MODES == progress.MODES
    assert pytest_plugin.EVIDENCE_BUDGET == artifacts.DEFAULT_EVIDENCE_BUDGET
