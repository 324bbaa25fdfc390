"""What the turn-shaped cluster specs share beyond :mod:`specs.cluster.stack`: a turn's end, and windows in which
something must not happen.

The gateway posts its comment and then deletes the trigger label: the DELETE in the fake GitHub's journal is the
turn's last step, so after it anything more on the issue (a second comment, another AgentRun) is a duplicate.
Windows in which nothing may happen last :func:`~specs.cluster.pacing.nothing_more` of the stack's profile (half
the trigger spacing, several gateway polls) and are checked every wait interval, once more at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness import wait_for_sync
from specs.cluster.pacing import nothing_more
from specs.cluster.stack import LABEL, Stack, Trigger


def wait_turn_ended(stack: Stack, trigger: Trigger, timeout: float) -> None:
    """Wait for the DELETE of the trigger label on ``trigger``'s issue (the turn's last step)."""

    def probe() -> bool | None:
        return True if stack.label_removals(trigger.issue) else None

    wait_for_sync(
        f"the end of the turn on issue #{trigger.issue} (its {LABEL} label's DELETE)",
        probe,
        timeout=timeout,
        interval=stack.interval,
    )


def nothing_within(stack: Stack, complaint: Callable[[], str | None], window: float | None = None) -> None:
    """Assert that ``complaint()`` stays ``None`` for ``window`` seconds (default: the profile's
    :func:`~specs.cluster.pacing.nothing_more`), checked every wait interval and once at the end; the first
    complaint fails the spec with its own text."""
    deadline = time.monotonic() + (nothing_more(stack.profile) if window is None else window)
    while True:
        said = complaint()
        assert said is None, said
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        time.sleep(min(stack.interval, remaining))
