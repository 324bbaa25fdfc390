"""The double measured against the real API server, case by case: each corpus case runs on both sides (real
first), the records are normalised (:mod:`specs.parity.normalise`) and every difference must be an entry of
``known-differences.yaml`` or ``open-differences.yaml``; an entry of the case that explains nothing fails too. A case
that fails runs once more and only what both runs found fails it: a read racing a controller on a loaded machine
can see a state the entries do not list yet (printed, not judged). A case
run with a kubectl outside the supported skew is compared and reported, never judged. The report of a failing case
lists its differences, by group; ``python -m specs.parity.check`` runs the same against a running plane."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from specs.parity import check, compare, corpus, runner
from specs.parity.summary import SKEW_KEY

pytestmark = pytest.mark.control_plane
CASES = corpus.load()
ENTRIES = check.all_entries()
#: One spec per case, with every kubectl minor's run of it: an entry naming the case is judged over all of them.
RUNS: dict[str, list[corpus.Case]] = {}
for _case in CASES:
    RUNS.setdefault(_case.id.split("@")[0], []).append(_case)


def entries_of(case: corpus.Case) -> list[compare.Entry]:
    base = case.id.split("@")[0]
    return [e for e in ENTRIES if e.case.split("@")[0] == base]


@pytest.mark.parametrize("case", list(RUNS), ids=list(RUNS))
def test_the_double_answers_as_the_real_api_server(
    case: str, real: runner.Side, double: tuple[runner.Side, Any], record_property: Any
) -> None:
    outcome, once = check.confirmed(real, double[0], RUNS[case], entries_of(RUNS[case][0]))
    print(outcome.report())
    if once:
        print("Seen in one of two runs only (not judged):\n  " + "\n  ".join(once))
    record_property(SKEW_KEY, len(outcome.verdict.out_of_skew))
    assert outcome.verdict.ok, outcome.report()


def test_a_difference_the_double_is_made_to_answer_fails_naming_its_case_and_path(
    real: runner.Side, double: tuple[runner.Side, Any]
) -> None:
    """The double answers one GET of the configmap case with another value (its fault API); the check fails on it.
    The case runs under a namespace of its own so that it never meets the case's own run on a shared plane."""
    side, handle = double
    case = replace(next(c for c in CASES if c.id == "crud/configmap-crud"), name="injected-configmap-crud")
    faked = b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"one"},"data":{"a":"injected"}}'
    path = f"/api/v1/namespaces/{case.namespace}/configmaps/one"
    headers = [("Content-Type", "application/json")]
    handle.fault("status", path, method="GET", status=200, body=faked, headers=headers, times=1)
    entries = [replace(e, case=case.id) for e in entries_of(replace(case, name="configmap-crud"))]
    try:
        outcome = check.compare_cases(real, side, [case], entries)
    finally:
        handle.clear_faults()
    assert not outcome.verdict.ok
    named = [d for d in outcome.verdict.unexplained if d.path == "get.body.data.a"]
    assert named, outcome.report()
    assert (named[0].real, named[0].double) == ("1", "injected")
    assert "crud/injected-configmap-crud  get.body.data.a" in outcome.report()
