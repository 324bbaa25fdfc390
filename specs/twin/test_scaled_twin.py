"""A twin started at a time scale with one value mis-set, read back as a cluster is read: the ready line carries the
scale and the effective profile, and read_profile finds the same values in the twin's objects, each with its source.
Starts one twin (about 5 s), so it is marked ``twin`` (``make e2e``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from specs.agent_controller.timing import committed_profile, read_profile
from specs.agent_controller.twin import TwinSession

pytestmark = [pytest.mark.twin, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def session() -> Iterator[TwinSession]:
    twin = TwinSession(time_scale=4, overrides={"poll_budget": 7.5})
    try:
        twin.ensure_started()
        yield twin
    finally:
        twin.stop()


def test_the_ready_line_carries_the_scale_and_the_effective_profile(session: TwinSession) -> None:
    assert session.info is not None
    assert session.info.time_scale == 4
    expected = committed_profile(4)
    assert session.info.profile["poll_budget"] == 7.5, "the mis-set value is deployed as given"
    assert session.info.profile["idle_window"] == expected.idle_window
    assert session.info.profile["nats_reconnects"] == expected.nats_reconnects


def test_read_profile_finds_what_the_twin_runs(session: TwinSession) -> None:
    profile = read_profile(session.kube)
    assert profile == dataclasses.replace(committed_profile(4), poll_budget=7.5)
    assert profile.scale == 4
    assert profile.source("poll_budget") == "ConfigMap agent-controller-integration-gateway-config, POLL_TIMEOUT_MS"
    assert profile.source("chat_keepalive").endswith(
        "divided by time scale 4 (Namespace controller-agent, annotation twin.stack-harness.dev/time-scale)"
    )
