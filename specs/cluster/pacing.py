"""The cluster specs' pacing as formulas over the deployed timing profile, and the relations between them that the
specs rely on (:data:`RELATIONS`).

``specs/cluster/conftest.py`` checks every relation once per session, before the first cluster spec, against the
profile actually deployed: a violated one ends every cluster spec at set-up with one line naming both values and
where each came from (specs/cluster/README.md, "Headroom checked before the run").
"""

from __future__ import annotations

from specs.agent_controller.timing import Profile, Quantity, Relation, value


def _narration(profile: Profile) -> float:
    return 2 * profile.idle_window


NARRATION = Quantity(
    "narration",
    _narration,
    lambda p: f"2 x idle window, {p.source('idle_window')}",
)
"""How long the narrating run talks: two idle windows, so that only its narration keeps it alive."""

POLL_BUDGET = value("poll_budget", "the gateway's poll budget")
SHUTDOWN_DRAIN = value("shutdown_drain", "the orchestrator's shutdown drain")
POD_GRACE = value("pod_grace", "the orchestrator's pod grace")

RELATIONS: tuple[Relation, ...] = (
    Relation(
        "narration ends well inside the poll budget",
        # the narrating spec's reply must come back before the gateway gives up polling its turn
        smaller=NARRATION,
        larger=POLL_BUDGET,
        headroom=lambda p: p.idle_window,  # the run's start and the reply's way back: one more idle window
    ),
    Relation(
        "a stopping orchestrator drains before the kubelet kills it",
        # a rollout during a turn must never fail the live run (failure mode 30)
        smaller=SHUTDOWN_DRAIN,
        larger=POD_GRACE,
    ),
)
"""What the cluster specs rely on between profile values, each with its margin."""
