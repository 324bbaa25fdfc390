"""Specs of specs.cluster.phase_watch: every phase an AgentRun passes through is recorded, also one overwritten at
once (what a single read, or a poll, misses), and the watch's thread ends with the context."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from specs.cluster.phase_watch import PhaseWatch

CRDS = Path(__file__).resolve().parents[2] / "fakes" / "stack" / "manifests" / "10-crds.yaml"
RUN = "watched-run"
AGENTRUNS = "agentruns.core.controller-agent.dev"
WINDOW = 1.0  # seconds per watch request: short, so the spec's stop() comes back quickly


@pytest.fixture
def run_kube(fake_kube: Any) -> Any:
    assert fake_kube.kubectl("apply", "--server-side", "-f", str(CRDS)).returncode == 0
    kube = fake_kube.kube(namespace="default")
    kube.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "core.controller-agent.dev/v1alpha1",
                "kind": "AgentRun",
                "metadata": {"name": RUN},
                "spec": {"agentRef": "stub-agent", "goal": "watched"},
            }
        ),
    )
    return kube


def _phase(kube: Any, phase: str) -> None:
    patch = json.dumps({"status": {"phase": phase}})
    kube.kubectl("patch", AGENTRUNS, RUN, "--subresource=status", "--type=merge", "-p", patch)


def test_a_phase_overwritten_at_once_is_still_seen(run_kube: Any) -> None:
    threads = threading.active_count()
    with PhaseWatch(run_kube, RUN, window=WINDOW) as watch:
        for phase in ("Running", "Failed", "Running", "Succeeded"):
            _phase(run_kube, phase)
    assert watch.phases() == [None, "Running", "Failed", "Running", "Succeeded"], watch.describe()
    assert threading.active_count() == threads, "the watch's thread outlived the context"


def test_the_watch_resumes_across_its_request_windows(run_kube: Any) -> None:
    with PhaseWatch(run_kube, RUN, window=WINDOW) as watch:
        _phase(run_kube, "Running")
        time.sleep(WINDOW * 2.5)  # two request windows end while nothing changes: the watch is resumed twice
        _phase(run_kube, "Failed")
    assert watch.phases() == [None, "Running", "Failed"], watch.describe()
    assert not watch.gaps


def test_a_missing_run_fails_on_entry(fake_kube: Any) -> None:
    from kubernetes.client.exceptions import ApiException

    assert fake_kube.kubectl("apply", "--server-side", "-f", str(CRDS)).returncode == 0
    kube = fake_kube.kube(namespace="default")
    with pytest.raises(ApiException) as raised, PhaseWatch(kube, "no-such-run", window=WINDOW):
        pass
    assert raised.value.status == 404
