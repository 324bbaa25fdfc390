"""Specs of specs.agent_controller.pacing: only the STUB_* entries change, by name, and spec.env comes back exactly
(failure mode 44)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import KubectlError
from specs.agent_controller.pacing import (
    PacingNotRestored,
    pace_stub_agent,
    paced_env,
    pacing_entries,
    read_env,
    restore_env,
)

CRDS = Path(__file__).resolve().parents[2] / "fakes" / "stack" / "manifests" / "10-crds.yaml"
HOLD = {"name": "AGENT_REPLY_ACK_TIMEOUT_MS", "value": "90000"}


def test_entries_are_milliseconds_by_name() -> None:
    assert pacing_entries(narrate_for=60.0, narrate_every=5.0, silent_for=None) == {
        "STUB_NARRATE_FOR_MS": "60000",
        "STUB_NARRATE_EVERY_MS": "5000",
    }


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf"), True, "5"])
def test_bad_values_are_refused(value: object) -> None:
    with pytest.raises(ValueError, match="narrate_for"):
        pacing_entries(narrate_for=value)  # type: ignore[arg-type]


def test_unknown_knobs_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown pacing knob 'narrate'"):
        pacing_entries(narrate=1.0)


def test_paced_env_keeps_everything_else_in_order() -> None:
    env: list[dict[str, Any]] = [
        HOLD,
        {"name": "STUB_SILENT_FOR_MS", "value": "1"},
        {"name": "X", "valueFrom": {"secretKeyRef": {}}},
    ]
    paced = paced_env(env, {"STUB_SILENT_FOR_MS": "0", "STUB_NARRATE_FOR_MS": "20000"})
    assert paced == [
        HOLD,
        {"name": "STUB_SILENT_FOR_MS", "value": "0"},
        env[2],
        {"name": "STUB_NARRATE_FOR_MS", "value": "20000"},
    ]
    assert env[1] == {"name": "STUB_SILENT_FOR_MS", "value": "1"}, "the input list was changed"


def test_paced_env_replaces_the_entry_that_wins() -> None:
    env = [{"name": "STUB_SILENT_FOR_MS", "value": "1"}, {"name": "STUB_SILENT_FOR_MS", "value": "2"}]
    assert paced_env(env, {"STUB_SILENT_FOR_MS": "9"})[1] == {"name": "STUB_SILENT_FOR_MS", "value": "9"}


@pytest.fixture
def agent_kube(fake_kube):
    assert fake_kube.kubectl("apply", "--server-side", "-f", str(CRDS)).returncode == 0
    kube = fake_kube.kube(namespace="default")
    return kube


def _agent(kube, env: list[dict] | None) -> None:
    spec: dict = {"image": "twin.stack-harness.dev/stub-agent:e2e"}
    if env is not None:
        spec["env"] = env
    kube.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "core.controller-agent.dev/v1alpha1",
                "kind": "Agent",
                "metadata": {"name": "stub-agent"},
                "spec": spec,
            }
        ),
    )


def test_pacing_applies_and_restores_spec_env_exactly(agent_kube) -> None:
    before = [HOLD, {"name": "STUB_NARRATE_EVERY_MS", "value": "1000"}, {"name": "OTHER", "value": "x"}]
    _agent(agent_kube, before)
    with pace_stub_agent(agent_kube, narrate_for=60.0, narrate_every=5.0) as paced:
        during = read_env(agent_kube)
        assert during == paced
        assert HOLD in during, "pacing removed the reply hold"
        assert {"name": "STUB_NARRATE_EVERY_MS", "value": "5000"} in during
        assert {"name": "STUB_NARRATE_FOR_MS", "value": "60000"} in during
    assert read_env(agent_kube) == before


def test_restored_on_failure_too(agent_kube) -> None:
    _agent(agent_kube, [HOLD])
    with pytest.raises(RuntimeError, match="boom"), pace_stub_agent(agent_kube, silent_for=60.0):
        raise RuntimeError("boom")
    assert read_env(agent_kube) == [HOLD]


def test_an_agent_without_env_gets_its_key_removed_again(agent_kube) -> None:
    _agent(agent_kube, None)
    with pace_stub_agent(agent_kube, silent_for=1.0):
        assert read_env(agent_kube) == [{"name": "STUB_SILENT_FOR_MS", "value": "1000"}]
    assert read_env(agent_kube) is None


def test_a_concurrent_change_is_not_overwritten(agent_kube, monkeypatch: pytest.MonkeyPatch) -> None:
    _agent(agent_kube, [HOLD])
    import specs.agent_controller.pacing as pacing

    real = pacing.read_env
    monkeypatch.setattr(pacing, "read_env", lambda kube, agent="stub-agent": [])  # a stale read
    with pytest.raises(KubectlError), pace_stub_agent(agent_kube, silent_for=1.0):
        pass
    monkeypatch.setattr(pacing, "read_env", real)
    assert read_env(agent_kube) == [HOLD]


def test_restore_checks_what_it_reads_back(agent_kube, monkeypatch: pytest.MonkeyPatch) -> None:
    _agent(agent_kube, [HOLD])
    import specs.agent_controller.pacing as pacing

    monkeypatch.setattr(pacing, "read_env", lambda kube, agent="stub-agent": [])
    with pytest.raises(PacingNotRestored, match="not what it was before"):
        restore_env(agent_kube, [HOLD])
