"""Differences between the two sides' normalised records, the two committed lists that explain them, and the report.

A difference is one case, one JSON path (``<step>.body.status.conditions[2].reason``) and the two values (``<absent>``
where one side has none; a subtree one side lacks is one difference, not one per leaf). An entry of
``known-differences.yaml`` or ``open-differences.yaml`` names a case (``group/name``: every kubectl minor's run of
it; ``group/name@1.NN``: that run alone) and a path whose list indices are ``[*]``, with its ``reason``; a known one
also its ``class``, one of :data:`KNOWN_CLASSES`; ``sometimes: true`` marks one seen in some runs only (a step that
reads while a controller or the kubelet may or may not have acted yet), which is never stale. The check fails on a
difference no entry explains and on an entry that explains nothing. Runs of a kubectl outside the supported skew
are reported apart and fail nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

HERE = os.path.dirname(__file__)
KNOWN = os.path.join(HERE, "known-differences.yaml")
OPEN = os.path.join(HERE, "open-differences.yaml")
KNOWN_CLASSES = ("kubelet", "node", "container runtime", "cluster-wide timing")
"""What alone may differ for good: the parts a real cluster has that are not the API server."""
ABSENT = "<absent>"
_INDEX = re.compile(r"\[\d+\]")


class EntriesError(ValueError):
    """A differences file that cannot be read: names the file, the entry and the key."""


@dataclass(frozen=True)
class Difference:
    case: str
    group: str
    path: str
    real: Any
    double: Any
    out_of_skew: bool = False
    kind: str = ""
    """The ``kind`` of the innermost object (on the real side) holding the path."""

    @property
    def pattern(self) -> str:
        return _INDEX.sub("[*]", self.path)

    def __str__(self) -> str:
        return f"{self.case}  {self.path}\n    real:   {_show(self.real)}\n    double: {_show(self.double)}"


@dataclass(frozen=True)
class Entry:
    case: str
    path: str
    reason: str
    file: str
    kind: str = ""
    sometimes: bool = False
    """Seen in some runs only: it depends on whether a controller or the kubelet has acted when the step reads."""

    def explains(self, difference: Difference) -> bool:
        case = difference.case if "@" in self.case else difference.case.split("@")[0]
        return case == self.case and difference.pattern == self.path


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 300 else text[:300] + f"... ({len(text)} characters)"


def differences(case: str, group: str, real: Any, double: Any, *, out_of_skew: bool = False) -> list[Difference]:
    """Every path where the normalised records differ, in document order."""
    return [Difference(case, group, p, r, d, out_of_skew, k) for p, r, d, k in _diff(real, double, "", "")]


def _diff(real: Any, double: Any, path: str, kind: str) -> Iterator[tuple[str, Any, Any, str]]:
    if isinstance(real, Mapping) and isinstance(double, Mapping):
        if isinstance(real.get("kind"), str) and "metadata" in real:
            kind = real["kind"]  # a list's items carry no kind: they take the list's (PodList -> Pod)
        for key in list(real) + [k for k in double if k not in real]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in double:
                yield sub, real[key], ABSENT, kind
            elif key not in real:
                yield sub, ABSENT, double[key], kind
            else:
                inner = kind[: -len("List")] if key == "items" and kind.endswith("List") else kind
                yield from _diff(real[key], double[key], sub, inner)
    elif isinstance(real, list) and isinstance(double, list):
        for i in range(max(len(real), len(double))):
            sub = f"{path}[{i}]"
            if i >= len(double):
                yield sub, real[i], ABSENT, kind
            elif i >= len(real):
                yield sub, ABSENT, double[i], kind
            else:
                yield from _diff(real[i], double[i], sub, kind)
    elif real != double or type(real) is not type(double):
        yield path, real, double, kind


def load_entries(path: str, *, known: bool) -> list[Entry]:
    """The entries of one differences file. Raises :class:`EntriesError` for a malformed entry or, in the known
    file, a class that is not one of :data:`KNOWN_CLASSES`."""
    with open(path, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle) or []
    if not isinstance(doc, list):
        raise EntriesError(f"{path}: a list of entries, each with case, path and reason")
    entries = []
    for i, raw in enumerate(doc):
        if not isinstance(raw, Mapping) or not all(isinstance(raw.get(k), str) for k in ("case", "path", "reason")):
            raise EntriesError(f"{path}: entry {i} needs case, path and reason (strings)")
        if _INDEX.search(raw["path"]):
            raise EntriesError(f"{path}: entry {i} ({raw['case']}): list indices are [*] in a path, not numbers")
        kind = str(raw.get("class", ""))
        if known and kind not in KNOWN_CLASSES:
            raise EntriesError(
                f"{path}: entry {i} ({raw['case']} {raw['path']}): class {kind!r} is not one of "
                f"{', '.join(KNOWN_CLASSES)}: an API-server difference belongs in open-differences.yaml"
            )
        sometimes = bool(raw.get("sometimes", False))
        entries.append(Entry(raw["case"], raw["path"], raw["reason"], os.path.basename(path), kind, sometimes))
    return entries


@dataclass
class Verdict:
    unexplained: list[Difference]
    stale: list[Entry]
    explained: dict[Entry, list[Difference]]
    out_of_skew: list[Difference]

    @property
    def ok(self) -> bool:
        return not self.unexplained and not self.stale


def judge(found: Sequence[Difference], entries: Sequence[Entry], cases: set[str]) -> Verdict:
    """Which differences the entries explain; an entry is stale when it explains nothing of the cases that ran
    (``cases``: the ids run, so a partial run does not call the rest stale)."""
    explained: dict[Entry, list[Difference]] = {e: [] for e in entries}
    unexplained, skew = [], []
    for difference in found:
        if difference.out_of_skew:
            skew.append(difference)
            continue
        entry = next((e for e in entries if e.explains(difference)), None)
        if entry is None:
            unexplained.append(difference)
        else:
            explained[entry].append(difference)
    ran = {c.split("@")[0] for c in cases} | cases
    stale = [e for e, hits in explained.items() if not hits and e.case in ran and not e.sometimes]
    return Verdict(unexplained, stale, explained, skew)


def report(verdict: Verdict, cases: int) -> str:
    """The differences by group: unexplained first, then stale entries, then the explained ones counted."""
    lines = [f"{cases} cases compared; {_counts(verdict)}"]
    if verdict.unexplained:
        lines.append("\nDifferences no entry explains (fix the double, or add an entry with its reason):")
        lines += _by_group(verdict.unexplained)
    if verdict.stale:
        lines.append("\nEntries that explain nothing any more (remove them):")
        lines += [f"  {e.file}: {e.case}  {e.path}  ({e.reason})" for e in verdict.stale]
    counted: dict[str, dict[str, int]] = {}
    for entry, hits in verdict.explained.items():
        for difference in hits:
            per = counted.setdefault(difference.group, {})
            per[entry.file] = per.get(entry.file, 0) + 1
    if counted:
        lines.append("\nExplained, per group:")
        lines += [f"  {g}: " + ", ".join(f"{n} {f}" for f, n in sorted(c.items())) for g, c in sorted(counted.items())]
    if verdict.out_of_skew:
        lines.append("\nkubectl outside the supported skew (reported, not judged):")
        lines += _by_group(verdict.out_of_skew)
    return "\n".join(lines)


def _counts(verdict: Verdict) -> str:
    explained = sum(len(h) for h in verdict.explained.values())
    return (
        f"{len(verdict.unexplained)} unexplained, {len(verdict.stale)} stale entries, {explained} explained, "
        f"{len(verdict.out_of_skew)} outside kubectl's skew"
    )


def _by_group(found: Sequence[Difference]) -> list[str]:
    lines: list[str] = []
    for group in sorted({d.group for d in found}):
        lines.append(f"  [{group}]")
        lines += ["  " + str(d).replace("\n", "\n  ") for d in found if d.group == group]
    return lines


__all__ = ["Difference", "Entry", "EntriesError", "KNOWN_CLASSES", "Verdict", "differences", "judge", "load_entries"]
