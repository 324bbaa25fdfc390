"""The kubernetes Python client and the harness's ``Kube`` (real kubectl underneath) against the double: lists with
selectors, custom objects, status patches, 404s, ``kubectl_json``, ``server_time``/``clock_skew`` on a skewed API
clock, and ``agent_runs_since`` on an AgentRun CRD."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client as kube_client
from kubernetes import config as kube_config

import fakes.kube
from fakes.kube import KubeHandle
from harness.errors import KubectlError
from specs.agent_controller.agentruns import agent_runs_since
from specs.kube.conftest import manifest, require_kubectl

GROUP, VERSION, PLURAL = "core.controller-agent.dev", "v1alpha1", "agentruns"


@pytest.fixture(scope="module")
def served() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve(namespace="controller-agent") as handle:
        done = handle.kubectl("apply", "--server-side", "-f", manifest("agentrun-crd.yaml"))
        assert done.returncode == 0, done.stderr
        yield handle


@pytest.fixture
def api(served: KubeHandle) -> Iterator[kube_client.ApiClient]:
    client = kube_config.new_client_from_config(config_file=served.kubeconfig, context=served.context)
    yield client
    client.close()


def _run(name: str, agent: str = "stub-agent") -> dict:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "AgentRun",
        "metadata": {"name": name, "labels": {"e2e": "true"}},
        "spec": {"agentRef": agent},
    }


def test_core_lists_with_selectors_and_404s(served: KubeHandle, api: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api)
    for name, app in (("nats-0", "nats"), ("nats-box", "nats-box"), ("redis-0", "redis")):
        if served.store.get("pods", "controller-agent", name) is None:
            served.store.create(
                "pods",
                {
                    "metadata": {
                        "name": name,
                        "namespace": "controller-agent",
                        "labels": {"app.kubernetes.io/component": app},
                    },
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            )
    pods = core.list_namespaced_pod("controller-agent", label_selector="app.kubernetes.io/component=nats")
    assert [p.metadata.name for p in pods.items if p.metadata is not None] == ["nats-0"]
    assert pods.metadata is not None
    assert pods.metadata.resource_version
    with pytest.raises(kube_client.ApiException) as caught:
        core.read_namespaced_pod("nope", "controller-agent")
    assert caught.value.status == 404
    assert caught.value.body is not None
    assert '"reason":"NotFound"' in caught.value.body


def test_custom_objects_create_list_and_patch_status(served: KubeHandle, api: kube_client.ApiClient) -> None:
    custom = kube_client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(GROUP, VERSION, "controller-agent", PLURAL, _run("run-a"))
    listed: Any = custom.list_namespaced_custom_object(GROUP, VERSION, "controller-agent", PLURAL, label_selector="e2e")
    assert "run-a" in [i["metadata"]["name"] for i in listed["items"]]
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, "controller-agent", PLURAL, "run-a", {"status": {"phase": "Succeeded"}}
    )
    got: Any = custom.get_namespaced_custom_object(GROUP, VERSION, "controller-agent", PLURAL, "run-a")
    assert got["status"] == {"phase": "Succeeded"}
    with pytest.raises(kube_client.ApiException) as dup:
        custom.create_namespaced_custom_object(GROUP, VERSION, "controller-agent", PLURAL, _run("run-a"))
    assert dup.value.status == 409


def test_harness_kube_runs_the_real_kubectl(served: KubeHandle) -> None:
    kube = served.kube()
    try:
        assert kube.namespace == "controller-agent"
        listed = kube.kubectl_json("get", "namespaces")
        assert "controller-agent" in [i["metadata"]["name"] for i in listed["items"]]
        done = kube.kubectl("create", "configmap", "from-kube", "--from-literal=a=b")
        assert done.stdout.strip() == "configmap/from-kube created"
        with pytest.raises(KubectlError) as caught:
            kube.kubectl("get", "configmap", "absent")
        assert 'configmaps "absent" not found' in str(caught.value)
    finally:
        kube.close()


def test_server_time_and_clock_skew_read_the_doubles_clock(served: KubeHandle) -> None:
    kube = served.kube()
    try:
        served.clock.set_offset(-120.0)
        behind = kube.server_time()
        assert abs(behind.timestamp() - (time.time() - 120.0)) < 3.0
        assert 117.0 < kube.clock_skew() < 123.0  # positive: the host is ahead
        served.clock.set_offset(45.0)
        assert -48.0 < kube.clock_skew() < -42.0
    finally:
        served.clock.set_offset(0.0)
        kube.close()


def test_agent_runs_since_uses_whole_second_creation_timestamps(served: KubeHandle) -> None:
    kube = served.kube()
    try:
        clock = served.clock
        clock.set_time(datetime(2030, 5, 1, 14, 7, 4, 800000, tzinfo=UTC))
        served.store.create(
            PLURAL + "." + GROUP, dict(_run("run-old"), metadata={"name": "run-old", "namespace": "controller-agent"})
        )
        clock.set_time(datetime(2030, 5, 1, 14, 7, 30, 300000, tzinfo=UTC))
        served.store.create(
            PLURAL + "." + GROUP, dict(_run("run-new"), metadata={"name": "run-new", "namespace": "controller-agent"})
        )
        stamped = served.store.require(PLURAL + "." + GROUP, "controller-agent", "run-new")
        assert stamped["metadata"]["creationTimestamp"] == "2030-05-01T14:07:30Z"
        since = datetime(2030, 5, 1, 14, 7, 31, 900000, tzinfo=UTC)  # within 1 s + 2 s of run-new
        found = [r.name for r in agent_runs_since(since, kube=kube)]
        assert found == ["run-new"]
        wide = [r.name for r in agent_runs_since(since - timedelta(seconds=30), kube=kube)]
        assert wide[:2] == ["run-new", "run-old"]
    finally:
        served.clock.set_offset(0.0)
        kube.close()
