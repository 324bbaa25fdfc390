"""The comparison's line in pytest's summary: how many differences the kubectl runs outside the supported skew had
(compared and reported, never judged). Loaded from the root conftest, so that under xdist the controller, which
receives every spec's report, prints it."""

from __future__ import annotations

from typing import Any

import pytest

SKEW_KEY = "parity_out_of_skew"
_seen: list[tuple[str, int]] = []  # (node id, differences) of this process's run


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    found = [int(str(v)) for k, v in report.user_properties if k == SKEW_KEY and v]
    if report.when == "call" and found:
        _seen.append((report.nodeid, found[0]))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _seen:
        total = sum(n for _, n in _seen)
        terminalreporter.write_line(
            f"parity: {total} differences in {len(_seen)} cases run with a kubectl outside the supported skew "
            "(reported, not judged: each case's report is in its spec's captured output, -rA)"
        )
