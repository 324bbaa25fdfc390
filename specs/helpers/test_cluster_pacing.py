"""Specs of specs.cluster.pacing: the cluster specs' pacing at the stack's own cadence is upstream's, it shrinks with
the twin's time scale down to its floors, and every relation the specs rely on holds for the committed profile at
K=1 and at the twin's default scale.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from specs.agent_controller.timing import Profile, Relation, committed_profile
from specs.agent_controller.twin import DEFAULT_TIME_SCALE
from specs.cluster import pacing

AT_1 = committed_profile(1.0)
AT_DEFAULT = committed_profile(DEFAULT_TIME_SCALE)


@pytest.mark.parametrize(
    ("formula", "upstream"),
    [
        (pacing.narration, 60.0),
        (pacing.narration_cadence, 5.0),
        (pacing.silence, 60.0),
        (pacing.long_narration, 120.0),
        (pacing.wait_interval, 2.0),
        (pacing.trigger_spacing, 20.0),
        (pacing.nothing_more, 10.0),
        (pacing.nothing_launched, 20.0),
        (pacing.keying_window, 60.0),
        (pacing.owner_park, 10.0),
        (pacing.parked_read, 20.0),
        (pacing.roll_cadence, 2.0),
    ],
)
def test_at_the_stacks_own_cadence_a_pacing_is_upstreams(formula: Callable[[Profile], float], upstream: float) -> None:
    assert formula(AT_1) == upstream


def test_the_expected_messages_are_the_deployed_values_in_milliseconds() -> None:
    assert pacing.went_silent(AT_1) == "went silent for 30000ms"
    assert pacing.reply_hold_ms(AT_1) == "90000"
    scaled = AT_DEFAULT
    assert pacing.went_silent(scaled) == f"went silent for {round(scaled.idle_window * 1000)}ms"
    assert pacing.went_silent(scaled) != pacing.went_silent(AT_1)


def test_a_pacing_shrinks_with_the_scale_but_not_below_its_floor() -> None:
    assert pacing.narration(AT_DEFAULT) < pacing.narration(AT_1)
    assert pacing.jwt_lifetime(AT_1) == 4 * AT_1.resume_every
    assert pacing.jwt_lifetime(AT_DEFAULT) == max(4 * AT_DEFAULT.resume_every, pacing.JWT_FLOOR)
    assert pacing.jwt_lifetime(AT_DEFAULT) >= pacing.JWT_FLOOR
    assert pacing.parked_read(AT_DEFAULT) >= pacing.PROMPT_FLOOR
    assert pacing.owner_park(AT_DEFAULT) >= pacing.PROMPT_FLOOR


@pytest.mark.parametrize("profile", [AT_1, AT_DEFAULT], ids=["K=1", "K=default"])
@pytest.mark.parametrize("relation", pacing.RELATIONS, ids=lambda r: r.what[:60])
def test_every_relation_holds_for_the_committed_profile(profile: Profile, relation: Relation) -> None:
    needed = relation.factor * relation.smaller.seconds(profile) + relation.headroom(profile)
    assert needed <= relation.larger.seconds(profile), (
        f"{relation.what}: {relation.factor:g} x {relation.smaller.name} {relation.smaller.seconds(profile):g}s + "
        f"{relation.headroom(profile):g}s headroom > {relation.larger.name} {relation.larger.seconds(profile):g}s"
    )


def test_a_mis_set_value_breaks_the_relation_that_rests_on_it() -> None:
    short_poll = replace(AT_1, poll_budget=60.0)
    broken = [
        r.what
        for r in pacing.RELATIONS
        if r.factor * r.smaller.seconds(short_poll) + r.headroom(short_poll) > r.larger.seconds(short_poll)
    ]
    assert "the narration ends well inside the poll budget (the launch, up to an idle window, comes first)" in broken


def test_a_pacings_origin_names_the_profile_values_it_is_made_of() -> None:
    origin = pacing.NARRATION.origin(AT_1)
    assert "2 x idle window" in origin
    assert AT_1.source("idle_window") in origin
