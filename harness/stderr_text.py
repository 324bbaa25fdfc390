"""kubectl's stderr as message text: distinct lines with their counts, the closing error, a one-line tail.

Below :mod:`harness.errors` and :mod:`harness.process` (both build messages with it), so it imports neither.
"""

from __future__ import annotations

import re

_KLOG_HEADER = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+(?=[\w.-]+:\d+\] )")
"""klog's line header (severity, date, time, pid) before ``file.go:NN]``: it differs on every repeat of a line."""

_MAX_LINE = 400
"""Characters kept of one stderr line in a message."""


def condense(text: str, max_lines: int = 6) -> list[str]:
    """Distinct non-empty lines of ``text``, klog headers dropped, each once with its count (``5× ...``).

    Ordered by last appearance, so kubectl's closing error stays last; at most ``max_lines`` are kept (the
    last ones), after a line saying how many earlier distinct lines were left out.
    """
    counts: dict[str, int] = {}
    for raw in text.splitlines():
        line = _KLOG_HEADER.sub("", raw.strip())
        if not line:
            continue
        counts[line] = counts.pop(line, 0) + 1  # re-inserted: dicts keep the order of last appearance
    lines = list(counts)
    kept = [_clip(f"{counts[line]}× {line}" if counts[line] > 1 else line) for line in lines[-max_lines:]]
    if len(lines) > max_lines:
        kept.insert(0, f"({len(lines) - max_lines} earlier distinct lines left out)")
    return kept


def final_line(text: str) -> str:
    """The cause as kubectl states it: its last line that is not a klog line (``error: ...``), else the last line."""
    lines = [raw.strip() for raw in text.splitlines() if raw.strip()]
    for line in reversed(lines):
        if not _KLOG_HEADER.match(line):
            return _clip(line)
    return _clip(_KLOG_HEADER.sub("", lines[-1])) if lines else ""


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…"


def tail(text: str, lines: int = 8) -> str:
    """The last ``lines`` non-empty lines of ``text``, joined by `` | `` for one-line messages."""
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])
