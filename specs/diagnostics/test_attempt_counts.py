"""The lines that count a wait's attempts read right: "1 attempt", "3 attempts", elided attempts counted too.

A wait that ended at its first attempt (the common case now that ``Done(value)`` settles a falsy answer at once) used
to close its progress line with "ok, 1 attempts" and draw "1 attempts" in report.html; a wait whose attempts were
elided from the page counted only those drawn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Done, progress, report, wait_for_sync

T0 = 1_795_000_000.0


@pytest.fixture
def shown() -> Iterator[list[str]]:
    lines: list[str] = []
    lock = threading.Lock()

    def write(text: str) -> None:
        with lock:
            lines.append(text)

    before = progress.configure(write=write, threshold=0.05, period=0.1, mode="lines", prefix="")
    yield lines
    progress.restore(before)


def test_a_wait_settled_at_its_first_attempt_closes_with_1_attempt(shown: list[str]) -> None:
    def probe() -> Done[int]:
        deadline = time.monotonic() + 20.0
        while not shown and time.monotonic() < deadline:  # answer once a progress line is out: the wait is "long"
            time.sleep(0.02)
        return Done(0)

    assert wait_for_sync("the queue to drain", probe, timeout=30.0, interval=0.1) == 0
    closing = shown[-1]
    assert closing.startswith("done waiting for the queue to drain after ")
    assert closing.endswith(": ok, 1 attempt\n"), closing


def _spec_with(wait: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeid": "specs/test_a.py::test_waits",
        "outcome": "passed",
        "start": T0,
        "end": T0 + 4,
        "evidence": None,
        "phases": {"call": [T0, T0 + 4, "passed"]},
        "waits": [wait],
        "rollouts": [],
        "forwards": [],
    }


@pytest.mark.parametrize(
    ("attempts", "elided", "said"),
    [(1, 0, "(ok, 0.1s, 1 attempt)"), (3, 0, "(ok, 0.1s, 3 attempts)"), (4, 96, "(ok, 0.1s, 100 attempts)")],
)
def test_the_reports_wait_label_counts_every_attempt(tmp_path: Path, attempts: int, elided: int, said: str) -> None:
    wait = {
        "what": "the queue to drain",
        "start": T0 + 1,
        "elapsed": 0.1,
        "budget": 3.0,
        "outcome": "ok",
        "elided": elided,
        "attempts": [[0.01 * i, 0.005, "not-yet" if i < attempts - 1 else "ok", None] for i in range(attempts)],
    }
    page = report.render([_spec_with(wait)], "run-1", tmp_path)
    assert f"wait: the queue to drain {said}" in page
