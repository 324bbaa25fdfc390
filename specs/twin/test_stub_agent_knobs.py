"""Cluster-free specs of the twin's stub agent pacing knobs (milliseconds in, seconds out, clamped)."""

from __future__ import annotations

import pytest

from fakes.stack.agent import knob


@pytest.mark.parametrize(
    ("raw", "seconds"), [("60000", 60.0), ("0", 0.0), ("999999999", 600.0), ("junk", 7.0), ("-5", 7.0), ("nan", 7.0)]
)
def test_knobs_are_milliseconds_clamped_with_junk_meaning_the_default(raw: str, seconds: float) -> None:
    assert knob({"K": raw}, "K", 7.0, clamp=600.0) == seconds


def test_a_missing_knob_is_the_default() -> None:
    assert knob({}, "AGENT_REPLY_ACK_TIMEOUT_MS", 600.0, clamp=600.0) == 600.0
