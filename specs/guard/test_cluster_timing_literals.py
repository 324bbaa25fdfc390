"""No timing literal in the cluster specs beyond failure-path budgets: every pacing, negative window and
expected timing of ``specs/cluster/`` is a formula over the deployed profile; only the generous budgets named in
``FAILURE_PATH_BUDGETS`` (``specs/cluster/stack.py``) are literals. The scanner is :mod:`specs.guard.timing_literals`
(:mod:`ast`, nothing imported or run); these specs also show what it counts as a timing and what as a factor.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from specs.guard.timing_literals import ALLOW_LIST, allow_list, find_timing_literals

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "specs" / "cluster"


def test_the_cluster_specs_carry_no_timing_literal_beyond_failure_path_budgets() -> None:
    found = find_timing_literals(CLUSTER, root=ROOT)
    assert not found, (
        f"{len(found)} timing literal(s) in specs/cluster: derive each from the profile (specs/cluster/pacing.py), "
        f"or, for a failure-path budget, name it in {ALLOW_LIST} in specs/cluster/stack.py:\n"
        + "\n".join(str(f) for f in found)
    )


def test_a_literal_planted_in_a_copy_of_the_cluster_specs_is_named_by_file_and_line(tmp_path: Path) -> None:
    copy = tmp_path / "cluster"
    shutil.copytree(CLUSTER, copy, ignore=shutil.ignore_patterns("__pycache__", "*.md"))
    before = {(str(f.path), f.slot, f.literal) for f in find_timing_literals(copy, root=tmp_path)}
    spec = copy / "test_happy_path.py"
    lines = spec.read_text(encoding="utf-8").splitlines()
    planted = [
        "PLANTED_WINDOW = 45",
        "@pytest.mark.timeout(600)",
        "def test_planted(stack) -> None:",
        "    stack.wait(timeout=TOOL_TURN * 2, interval=WAIT + 1.5)",
    ]
    spec.write_text("\n".join([*lines, *planted]) + "\n", encoding="utf-8")

    found = [f for f in find_timing_literals(copy, root=tmp_path) if (str(f.path), f.slot, f.literal) not in before]

    first = len(lines) + 1
    assert [str(f) for f in found] == [
        f"cluster/test_happy_path.py:{first}: PLANTED_WINDOW = 45",
        f"cluster/test_happy_path.py:{first + 1}: timeout(...) 600",
        f"cluster/test_happy_path.py:{first + 3}: interval= 1.5",
    ]


def _scan(tmp_path: Path, source: str, *, allowed: str = "") -> list[str]:
    (tmp_path / "stack.py").write_text(f"{ALLOW_LIST} = frozenset({{{allowed}}})\n", encoding="utf-8")
    (tmp_path / "test_x.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return [f"{f.slot} {f.literal}" for f in find_timing_literals(tmp_path)]


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("wait(timeout=20.0)", ["timeout= 20.0"]),
        ("pace(narrate_for=60.0, narrate_every=5.0)", ["narrate_for= 60.0", "narrate_every= 5.0"]),
        ("pace(silent_for=60)", ["silent_for= 60"]),
        ("mint(user, expires_in=600)", ["expires_in= 600"]),
        ("mint(user, expires_in=-60.0)", ["expires_in= -60.0"]),
        ("when = start + timedelta(seconds=narrate + 10)", ["seconds= 10"]),
        ("time.sleep(min(2.0, remaining))", ["sleep(...) 2.0"]),
        ("@pytest.mark.timeout(timeout_for(120.0))\ndef test_a(): ...", ["timeout(...) 120.0"]),
        ("IDLE_WINDOW = 30", ["IDLE_WINDOW = 30"]),
        ("PARK_READ = 20.0", ["PARK_READ = 20.0"]),
        ("EXPIRED_JWT = -60.0", ["EXPIRED_JWT = -60.0"]),
        ("LONG = 60.0 * 2", ["LONG = 60.0 * 2"]),
        ("REPLY_OFFERED = NARRATION + 10.0", ["REPLY_OFFERED = 10.0"]),
        ("def wait(what, timeout: float = 30.0): ...", ["timeout= 30.0"]),
        ("R = Relation('x', A, B, headroom=lambda p: 5.0)", ["headroom= 5.0"]),
        ("class Pace:\n    interval: float = 2.0", ["interval = 2.0"]),
        ("def f():\n    deadline = time.monotonic() + 30", ["deadline = 30"]),
        # factors, counts, instants, strings and zero are not times
        ("wait(timeout=TOOL_TURN * 3, interval=profile.poll_interval / 2)", []),
        ("NOTHING_MORE = TRIGGER_SPACING / 2", []),
        ("NARRATION = Quantity('n', lambda p: 2 * p.idle_window, origin)", []),
        ("R = Relation('x', A, B, 3, headroom=lambda p: p.idle_window)", []),
        ("TOP_K = 3\nMARK = '41'\nISSUES = range(1, 40_000)", []),
        ("AT_SCALE_1 = committed_profile(1.0)", []),
        ("def f():\n    clock = [1_000_000.0]", []),
        ("pace(narrate_for=0, silent_for=0.0)", []),
        ("wait(timeout=budgets[1])", []),
        ("watch(timeout_seconds=max(1, int(window)))", []),
        ("watch(timeout_seconds=max(1, int(window) + 5))", ["timeout_seconds= 5"]),
        ("watch(timeout_seconds=max(2, int(window)))", ["timeout_seconds= 2"]),
        ("time.sleep(max(1.0, remaining))", ["sleep(...) 1.0"]),
        ("assert 'went silent for 30000ms' in comment", []),
    ],
)
def test_what_counts_as_a_timing_literal(tmp_path: Path, source: str, found: list[str]) -> None:
    assert _scan(tmp_path, source) == found


def test_an_allow_listed_budget_may_be_a_literal_where_it_is_defined_and_nowhere_else(tmp_path: Path) -> None:
    source = """
        RUN_CREATED = 420.0
        COMMENT = 180.0
        wait(timeout=RUN_CREATED)
        wait(timeout=420.0)
    """
    # a bare name is a constant of stack.py; another module's constant is listed as module.NAME
    assert _scan(tmp_path, source, allowed="'RUN_CREATED'") == [
        "RUN_CREATED = 420.0",
        "COMMENT = 180.0",
        "timeout= 420.0",
    ]
    assert _scan(tmp_path, source, allowed="'test_x.RUN_CREATED', 'other.COMMENT'") == [
        "COMMENT = 180.0",
        "timeout= 420.0",
    ]
    (tmp_path / "stack.py").write_text(f"RUN_CREATED = 420.0\n{ALLOW_LIST} = ('RUN_CREATED',)\n", encoding="utf-8")
    assert [f for f in find_timing_literals(tmp_path) if f.path.name == "stack.py"] == []


def test_the_allow_list_is_read_as_names_or_strings_in_any_collection(tmp_path: Path) -> None:
    stack = tmp_path / "stack.py"
    for value in ("frozenset({'A', 'B'})", "('A', 'B')", "{'A': 'why', 'B': 'why'}", "frozenset((A, B))"):
        stack.write_text(f"A = 1.0\nB = 2.0\n{ALLOW_LIST} = {value}\n", encoding="utf-8")
        assert allow_list(stack) >= {"A", "B"}, value
    stack.write_text("A = 1.0\n", encoding="utf-8")
    assert allow_list(stack) == frozenset()
    assert allow_list(tmp_path / "missing.py") == frozenset()
