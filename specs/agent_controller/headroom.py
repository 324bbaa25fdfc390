"""The headroom check's pytest side: how a violated relation ends the cluster specs, and the summary that says it once.

``specs/cluster/conftest.py`` checks the deployed profile against the relations the cluster specs rely on, once per
session (per xdist worker: each may have its own twin), before the first cluster spec. A violation raises
:class:`HeadroomViolated` from that session fixture: pytest keeps the exception and raises it again for every cluster
spec, so each errors at set-up with the same line(s) and no spec body runs. :func:`mark_report` tags those reports;
:class:`HeadroomSummary` (registered by the stack layer's plugin, so it runs where the terminal summary is written:
the xdist controller too) prints each violated line once at the end of the run.
"""

from __future__ import annotations

import pytest
from _pytest.outcomes import Failed  # public as pytest.fail.Exception, a name mypy cannot subclass

HEADROOM_PROPERTY = "headroom"
"""The ``user_properties`` key a report carries its violated lines under (xdist ships it to the controller)."""


class HeadroomViolated(Failed):
    """The deployed profile violates a relation the cluster specs rely on: one line per violated relation, naming
    both values, the headroom and where each value came from (:meth:`specs.agent_controller.timing.Relation.violation`).
    A ``pytest.fail`` without a traceback: the lines are the whole report."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines), pytrace=False)
        self.lines = list(lines)


def mark_report(report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
    """Tag ``report`` with the violated lines when its set-up ended on :class:`HeadroomViolated`."""
    if call.excinfo is not None and isinstance(call.excinfo.value, HeadroomViolated):
        report.user_properties.append((HEADROOM_PROPERTY, call.excinfo.value.lines))


class HeadroomSummary:
    """Pytest plugin: after the run, each violated line once, with how many cluster specs it stopped."""

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        stopped = 0
        lines: dict[str, None] = {}
        for report in terminalreporter.stats.get("error", []):
            for key, value in getattr(report, "user_properties", ()):
                if key == HEADROOM_PROPERTY:
                    stopped += 1
                    lines.update(dict.fromkeys(value))
        if not lines:
            return
        terminalreporter.write_sep("=", "headroom checked before the run", red=True, bold=True)
        for line in lines:
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            f"{stopped} cluster spec(s) stopped at set-up; specs/cluster/README.md says which object and key to change"
        )
