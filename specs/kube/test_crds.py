"""CustomResourceDefinitions through the real kubectl: creating one serves its kind (discovery refreshes by
itself), its printer columns and ``status`` subresource work, strategic merge is refused as on a real server, and
deleting it takes its objects and its kind away."""

from __future__ import annotations

import json

from fakes.kube import KubeHandle
from specs.kube.conftest import manifest

CRD = "agentruns.core.controller-agent.dev"


def _ok(done) -> str:
    assert done.returncode == 0, f"kubectl exited {done.returncode}: {done.stderr.strip()}"
    return done.stdout


def test_crd_lifecycle_through_kubectl(kd: KubeHandle) -> None:
    before = kd.kubectl("get", "agentruns", namespace="default")
    assert before.returncode == 1
    assert 'the server doesn\'t have a resource type "agentruns"' in before.stderr

    applied = _ok(kd.kubectl("apply", "--server-side", "--force-conflicts", "-f", manifest("agentrun-crd.yaml")))
    assert f"customresourcedefinition.apiextensions.k8s.io/{CRD} serverside-applied" in applied
    crd = kd.store.require("customresourcedefinitions", None, CRD)
    assert {c["type"]: c["status"] for c in crd["status"]["conditions"]}["Established"] == "True"

    # kubectl's cached discovery predates the CRD; it refreshes by itself when the type is missing.
    created = _ok(kd.kubectl("apply", "-f", manifest("agentrun.yaml"), namespace="default"))
    assert "agentrun.core.controller-agent.dev/run-1 created" in created

    table = _ok(kd.kubectl("get", "ar", namespace="default")).splitlines()
    assert table[0].split() == ["NAME", "AGENT", "PHASE", "AGE"]
    assert table[1].split()[:2] == ["run-1", "stub-agent"]

    # status is a subresource: the main resource ignores it, /status takes it.
    _ok(
        kd.kubectl(
            "patch",
            "agentrun",
            "run-1",
            "--type",
            "merge",
            "-p",
            '{"status": {"phase": "Failed"}}',
            namespace="default",
        )
    )
    assert "status" not in kd.store.require(CRD, "default", "run-1")
    _ok(
        kd.kubectl(
            "patch",
            "agentrun",
            "run-1",
            "--subresource=status",
            "--type",
            "merge",
            "-p",
            '{"status": {"phase": "Running"}}',
            namespace="default",
        )
    )
    run = kd.store.require(CRD, "default", "run-1")
    assert run["status"] == {"phase": "Running"}
    assert run["metadata"]["generation"] == 1
    assert (
        _ok(
            kd.kubectl(
                "get",
                "agentruns.v1alpha1.core.controller-agent.dev",
                "run-1",
                "-o",
                "jsonpath={.status.phase}",
                namespace="default",
            )
        )
        == "Running"
    )

    strategic = kd.kubectl("patch", "agentrun", "run-1", "-p", '{"spec": {"agentRef": "x"}}', namespace="default")
    assert strategic.returncode == 1
    assert "application/strategic-merge-patch+json is not supported by" in strategic.stderr
    assert "accepted media types include: application/json-patch+json, application/merge-patch+json" in strategic.stderr

    _ok(
        kd.kubectl(
            "patch",
            "agentrun",
            "run-1",
            "--type",
            "merge",
            "-p",
            '{"spec": {"agentRef": "other"}}',
            namespace="default",
        )
    )
    assert kd.store.require(CRD, "default", "run-1")["metadata"]["generation"] == 2

    listed = json.loads(_ok(kd.kubectl("get", "agentruns", "-o", "json", namespace="default")))
    assert [i["kind"] for i in listed["items"]] == ["AgentRun"]

    deleted = _ok(kd.kubectl("delete", "crd", CRD, "--wait=false"))
    assert f'customresourcedefinition.apiextensions.k8s.io "{CRD}" deleted' in deleted
    assert kd.store.get("customresourcedefinitions", None, CRD) is None
    gone = kd.kubectl("get", "agentruns", namespace="default")
    assert gone.returncode == 1


def test_custom_resource_missing_a_required_field_is_invalid(kd: KubeHandle) -> None:
    _ok(kd.kubectl("apply", "-f", manifest("agentrun-crd.yaml")))
    bad = kd.kubectl(
        "create",
        "-f",
        "-",
        namespace="default",
        input=json.dumps(
            {
                "apiVersion": "core.controller-agent.dev/v1alpha1",
                "kind": "AgentRun",
                "metadata": {"name": "run-2"},
                "spec": {"secretEnv": []},
            }
        ),
    )
    assert bad.returncode == 1
    assert 'The AgentRun "run-2" is invalid: spec.agentRef: Required value' in bad.stderr  # kubectl's rewording
