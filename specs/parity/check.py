"""The comparison itself: run cases on both sides, normalise, find the differences, judge them against the two files.

``python -m specs.parity.check --kubeconfig K --context C [--case PREFIX]`` runs it against an already running
real API server (``python -m harness.controlplane run``) and prints the report; the spec
(:mod:`specs.parity.test_parity`) does the same on the run's control plane.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import fakes.kube
from fakes.kube.kubectl_builds import SUPPORTED_MINORS
from specs.parity import compare, corpus, normalise, runner

#: The double's minors (those its kubectl matrix is held to): a real release outside them is a finding, not a quiet
#: comparison.
DOUBLE_MINORS = SUPPORTED_MINORS


@dataclass
class Outcome:
    verdict: compare.Verdict
    found: list[compare.Difference]
    cases: list[corpus.Case]

    def report(self) -> str:
        return compare.report(self.verdict, len(self.cases))


def real_version(side: runner.Side) -> str:
    """The real server's ``gitVersion`` (``/version``). Raises ``LookupError`` when the double does not serve that
    minor (teach the double the release first: its catalog, texts and kubectl matrix)."""
    answer = runner.request(side, "GET", "/version")
    version = str(answer["body"]["gitVersion"])
    minor = int(re.match(r"v?1\.(\d+)", version).group(1))  # type: ignore[union-attr]
    if minor not in DOUBLE_MINORS:
        raise LookupError(
            f"the real API server is {version}, a minor the double does not serve (it serves 1.{DOUBLE_MINORS[0]} to "
            f"1.{DOUBLE_MINORS[-1]}): teach the double that release before comparing"
        )
    return version


@contextlib.contextmanager
def double_side(version: str, workdir: str) -> Iterator[tuple[runner.Side, Any]]:
    """A fresh double reporting ``version``, with its controllers, as a side; yields it and its handle. Both sides
    then expire the same requests: a resourceVersion from before the comparison began is a 410 on each (the real
    server's watch cache began at its start; the double's history is compacted at its own), one of a case's own writes
    is in both windows (the double keeps its last 1000 events; the real cache sizes itself to keep at least its last
    75 s, ``eventFreshDuration`` in the apiserver's ``storage/cacher``)."""
    from fakes.kube.controllers.node import NODE

    with fakes.kube.serve(os.path.join(workdir, "double.kubeconfig"), kubectl_version=version) as handle:
        handle.store.compact()  # its window starts now, as the real server's watch cache began at its start
        side = runner.Side("double", handle.kubeconfig, handle.context, handle.cache_dir, (NODE,))
        try:
            yield side, handle
        finally:
            side.close()


def compare_cases(
    real: runner.Side,
    double: runner.Side,
    cases: Sequence[corpus.Case],
    entries: Sequence[compare.Entry],
    progress: Callable[[str], None] = lambda _: None,
) -> Outcome:
    """Run every case on both sides (real first) and judge the differences."""
    found: list[compare.Difference] = []
    for case in cases:
        progress(case.id)
        records = {}
        for side in (real, double):
            records[side.name] = normalise.normalise(runner.run_case(side, case), side.node_names, side.context)
        found += compare.differences(
            case.id, case.group, records["real"], records["double"], out_of_skew=case.out_of_skew
        )
    verdict = compare.judge(found, entries, {c.id for c in cases if not c.out_of_skew})
    return Outcome(verdict, found, list(cases))


def confirmed(
    real: runner.Side, double: runner.Side, cases: Sequence[corpus.Case], entries: Sequence[compare.Entry]
) -> tuple[Outcome, list[str]]:
    """One case (its runs, one per kubectl minor) judged, and judged again when it fails: only what both runs found
    fails (a difference, or an entry explaining nothing). A finding of one run alone is a timing the entries do not
    list yet; it is returned as text (add it with ``sometimes: true`` if it recurs)."""
    first = compare_cases(real, double, cases, entries)
    if first.verdict.ok:
        return first, []
    second = compare_cases(real, double, cases, entries)
    again = {(d.case, d.pattern) for d in second.verdict.unexplained}
    verdict = second.verdict
    verdict.unexplained = [d for d in first.verdict.unexplained if (d.case, d.pattern) in again]
    verdict.stale = [e for e in first.verdict.stale if e in set(second.verdict.stale)]
    both = {(d.case, d.pattern) for d in verdict.unexplained}
    once = [str(d) for d in first.verdict.unexplained + second.verdict.unexplained if (d.case, d.pattern) not in both]
    once += [
        f"{e.file}: {e.case}  {e.path} explained nothing in one run"
        for e in first.verdict.stale + second.verdict.stale
        if e not in verdict.stale
    ]
    return Outcome(verdict, second.found, list(cases)), once


def all_entries() -> list[compare.Entry]:
    return compare.load_entries(compare.KNOWN, known=True) + compare.load_entries(compare.OPEN, known=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specs.parity.check", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", required=True)
    parser.add_argument("--case", default="", help="run only the cases whose id starts with this")
    parser.add_argument("--propose", action="store_true", help="add an entry for each unexplained difference")
    parser.add_argument(
        "--sometimes",
        action="store_true",
        help="with --propose, on a run after the first: new entries and stale ones are marked as seen sometimes",
    )
    args = parser.parse_args(argv)
    cases = [c for c in corpus.load() if c.id.startswith(args.case)]
    with tempfile.TemporaryDirectory(prefix="parity-") as workdir:
        real = runner.Side("real", args.kubeconfig, args.context, os.path.join(workdir, "real-cache"))
        real.node_names = runner.node_names(real)
        with double_side(real_version(real), workdir) as (double, _handle):
            outcome = compare_cases(real, double, cases, all_entries(), lambda c: print(c, file=sys.stderr))
        real.close()
    print(outcome.report())
    if args.propose:
        _write_proposals(outcome, sometimes=args.sometimes)
    return 0 if outcome.verdict.ok else 1


def _write_proposals(outcome: Outcome, *, sometimes: bool) -> None:
    from dataclasses import replace

    from specs.parity import propose

    added = propose.propose(outcome.verdict.unexplained, all_entries(), sometimes=sometimes)
    stale = set(outcome.verdict.stale)
    for path, known in ((compare.KNOWN, True), (compare.OPEN, False)):
        entries = compare.load_entries(path, known=known)
        if sometimes:
            kept = [replace(e, sometimes=True) if e in stale else e for e in entries]
        else:
            kept = [e for e in entries if e not in stale]
        propose.write(path, kept, added[os.path.basename(path)], header=_header(path))


def _header(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return "".join(line for line in handle if line.startswith("#"))


if __name__ == "__main__":
    sys.exit(main())
