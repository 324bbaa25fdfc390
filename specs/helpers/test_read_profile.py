"""Specs of specs.agent_controller.timing.read_profile: the deployed timing profile read back from the objects the
twin applies (its manifests rendered at a time scale, on the standalone API double with real kubectl), and
ProfileUnreadable naming the object, the field and why when a value cannot be read.

Only the objects the profile names are applied (no twin runs): the namespace, the two ConfigMaps, the Agents and the
orchestrator's Deployment, as ``fakes/stack/manifests`` renders them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes.kube import KubeHandle
from fakes.stack.profile import TIME_SCALE_ANNOTATION, Effective, effective
from fakes.stack.up import render
from harness import Kube
from specs.agent_controller.errors import ProfileUnreadable
from specs.agent_controller.timing import Profile, committed_profile, read_profile

CRDS = Path(__file__).resolve().parents[2] / "fakes" / "stack" / "manifests" / "10-crds.yaml"
NAMESPACE = "controller-agent"
GATEWAY_CONFIG = "agent-controller-integration-gateway-config"
READ = {"Namespace", "ConfigMap", "Agent"}


def _objects(timing: Effective) -> list[dict[str, Any]]:
    docs = []
    for name in ("00-namespace.yaml", "40-release.yaml", "50-catalog.yaml"):
        docs += [d for d in yaml.safe_load_all(render(name, timing)) if d]
    return [
        d
        for d in docs
        if d["kind"] in READ or (d["kind"] == "Deployment" and d["metadata"]["name"] == "agent-orchestrator")
    ]


@pytest.fixture(scope="module")
def double(fake_kube_module: KubeHandle) -> KubeHandle:
    assert fake_kube_module.kubectl("apply", "--server-side", "-f", str(CRDS)).returncode == 0
    return fake_kube_module


@pytest.fixture
def kube(double: KubeHandle) -> Kube:
    """The objects at scale 5, applied afresh for each spec (a spec may break one)."""
    kube: Kube = double.kube(namespace=NAMESPACE)
    deploy(kube, effective(5))
    return kube


def deploy(kube: Kube, timing: Effective) -> None:
    items = _objects(timing)
    kube.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


def test_the_deployed_values_are_read_from_their_objects(kube: Kube) -> None:
    profile = read_profile(kube)
    assert profile == committed_profile(5), "the twin's objects at scale 5 read back as the profile at scale 5"
    assert profile.scale == 5
    assert profile.source("poll_budget") == f"ConfigMap {GATEWAY_CONFIG}, POLL_TIMEOUT_MS"
    assert profile.source("idle_window") == "ConfigMap agent-orchestrator-config, AGENT_IDLE_TIMEOUT_SECONDS"
    assert profile.source("reply_hold") == "Agent stub-agent, spec.env AGENT_REPLY_ACK_TIMEOUT_MS"
    assert (
        profile.source("pod_grace") == "Deployment agent-orchestrator, spec.template.spec.terminationGracePeriodSeconds"
    )
    assert profile.source("resume_every") == (
        f"committed profile profile.toml [resume_every], divided by time scale 5 "
        f"(Namespace {NAMESPACE}, annotation {TIME_SCALE_ANNOTATION})"
    )


def test_a_mis_set_value_is_read_as_deployed(kube: Kube) -> None:
    deploy(kube, effective(5, {"poll_budget": 7.5, "pod_grace": 2.0}))
    profile = read_profile(kube)
    assert (profile.poll_budget, profile.pod_grace) == (7.5, 2.0)
    assert profile.poll_interval == committed_profile(5).poll_interval


def test_without_the_annotation_the_rhythms_are_the_committed_ones(kube: Kube) -> None:
    deploy(kube, effective(1))  # the stack's own values...
    kube.kubectl("annotate", f"namespace/{NAMESPACE}", f"{TIME_SCALE_ANNOTATION}-")  # ...and no twin's annotation
    profile = read_profile(kube)
    assert profile.scale == 1
    assert profile == committed_profile(1)
    assert profile.source("heartbeat") == "committed profile profile.toml [heartbeat]"


def _unreadable(kube: Kube) -> str:
    with pytest.raises(ProfileUnreadable) as raised:
        read_profile(kube)
    return str(raised.value)


def _patch(kube: Kube, obj: str, operations: list[dict[str, Any]]) -> None:
    kube.kubectl("patch", obj, "--type=json", "-p", json.dumps(operations))


def test_a_missing_key_names_the_configmap_and_the_key(kube: Kube) -> None:
    _patch(kube, f"configmap/{GATEWAY_CONFIG}", [{"op": "remove", "path": "/data/POLL_TIMEOUT_MS"}])
    message = _unreadable(kube)
    assert message.startswith(
        f"cannot read the stack's timing profile from the cluster: ConfigMap {GATEWAY_CONFIG}, POLL_TIMEOUT_MS: "
        "no such key (the ConfigMap has: "
    ), message
    assert "POLL_INTERVAL_MS" in message


def test_a_value_that_is_not_a_number_is_named(kube: Kube) -> None:
    _patch(
        kube,
        "configmap/agent-orchestrator-config",
        [{"op": "replace", "path": "/data/AGENT_IDLE_TIMEOUT_SECONDS", "value": "30s"}],
    )
    assert _unreadable(kube).endswith(
        "ConfigMap agent-orchestrator-config, AGENT_IDLE_TIMEOUT_SECONDS: '30s' is not a number of seconds"
    )


def test_a_missing_object_is_named(kube: Kube) -> None:
    kube.kubectl("delete", "agents.core.controller-agent.dev", "stub-agent", "--wait=false")
    assert _unreadable(kube).endswith(
        "Agent stub-agent, spec.env AGENT_REPLY_ACK_TIMEOUT_MS: the object does not exist"
    )


def test_a_missing_env_entry_is_named(kube: Kube) -> None:
    _patch(
        kube,
        "agents.core.controller-agent.dev/stub-agent",
        [{"op": "replace", "path": "/spec/env", "value": [{"name": "OTHER", "value": "1"}]}],
    )
    assert _unreadable(kube).endswith(
        "Agent stub-agent, spec.env AGENT_REPLY_ACK_TIMEOUT_MS: no entry named AGENT_REPLY_ACK_TIMEOUT_MS in spec.env"
    )


def test_a_missing_path_step_is_named(kube: Kube) -> None:
    path = "/spec/template/spec/containers/0/readinessProbe"
    _patch(kube, "deployment/agent-orchestrator", [{"op": "remove", "path": path}])
    assert _unreadable(kube).endswith(
        "Deployment agent-orchestrator, spec.template.spec.containers[0].readinessProbe.periodSeconds: "
        "spec.template.spec.containers[0] has no readinessProbe"
    )


def test_a_junk_time_scale_is_named(kube: Kube) -> None:
    kube.kubectl("annotate", "--overwrite", f"namespace/{NAMESPACE}", f"{TIME_SCALE_ANNOTATION}=0.5")
    assert _unreadable(kube).endswith(
        f"Namespace {NAMESPACE}, annotation {TIME_SCALE_ANNOTATION}: '0.5' is not a number >= 1"
    )


def test_kubectl_failing_is_named_with_the_objects(fake_kube: KubeHandle) -> None:
    # A cluster without the stack's CRDs: kubectl cannot get the Agent at all (not "not found").
    message = _unreadable(fake_kube.kube(namespace=NAMESPACE))
    assert re.search(r"Namespace controller-agent, .*Agent stub-agent.*: kubectl get failed: ", message), message


def test_every_profile_value_is_read(kube: Kube) -> None:
    profile = read_profile(kube)
    assert set(profile.sources) == set(Profile.names())
