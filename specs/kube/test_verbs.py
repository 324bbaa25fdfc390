"""The real kubectl (the build the dispatcher on PATH picks for the double's v1.32.4) against the double: the verbs
the harness and the stack's scripts use, with the output and exit codes a real cluster gives."""

from __future__ import annotations

import json
import threading

from fakes.kube import KubeHandle
from specs.kube.conftest import manifest


def _ok(done) -> str:
    assert done.returncode == 0, f"kubectl exited {done.returncode}: {done.stderr.strip()}"
    return done.stdout


def test_get_json_lists_the_initial_namespaces(kd: KubeHandle) -> None:
    listed = json.loads(_ok(kd.kubectl("get", "namespaces", "-o", "json")))
    names = [item["metadata"]["name"] for item in listed["items"]]
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= set(names)
    assert listed["kind"] == "List"
    assert all(item["kind"] == "Namespace" for item in listed["items"])


def test_get_without_output_prints_the_servers_table(kd: KubeHandle) -> None:
    lines = _ok(kd.kubectl("get", "namespaces")).splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "AGE"]
    assert any(line.split()[:2] == ["default", "Active"] for line in lines[1:])
    tables = [e for e in kd.requests(path_prefix="/api/v1/namespaces") if "as=Table" in e.headers.get("accept", "")]
    assert tables, "kubectl did not ask for a Table"


def test_apply_creates_then_updates_with_a_strategic_merge(kd: KubeHandle, ns: str) -> None:
    created = _ok(kd.kubectl("apply", "-f", manifest("api.yaml"), namespace=ns))
    assert "deployment.apps/api created" in created
    assert "configmap/api-config created" in created
    first = kd.store.require("deployments", ns, "api")
    assert first["metadata"]["generation"] == 1
    assert "kubectl.kubernetes.io/last-applied-configuration" in first["metadata"]["annotations"]

    updated = _ok(kd.kubectl("apply", "-f", manifest("api-v2.yaml"), namespace=ns))
    assert "deployment.apps/api configured" in updated
    assert "configmap/api-config configured" in updated
    after = kd.store.require("deployments", ns, "api")
    container = after["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.local/api:1.1"
    assert container["env"] == [{"name": "MODE", "value": "green"}]  # LEVEL deleted by the 3-way merge
    assert after["metadata"]["generation"] == 2
    assert kd.store.require("configmaps", ns, "api-config")["data"] == {"mode": "green"}
    patches = kd.requests(path_prefix=f"/apis/apps/v1/namespaces/{ns}/deployments/api", method="PATCH")
    assert patches[-1].headers["content-type"] == "application/strategic-merge-patch+json"

    again = _ok(kd.kubectl("apply", "-f", manifest("api-v2.yaml"), namespace=ns))
    assert "deployment.apps/api unchanged" in again
    assert kd.store.require("deployments", ns, "api")["metadata"]["generation"] == 2


def test_label_selectors_filter_lists(kd: KubeHandle, ns: str) -> None:
    for name, labels in (("web-a", {"tier": "web", "app": "a"}), ("db-b", {"tier": "db", "app": "b"}), ("bare", {})):
        if kd.store.get("configmaps", ns, name) is None:
            kd.store.create("configmaps", {"metadata": {"name": name, "namespace": ns, "labels": labels}})

    def names(selector: str) -> set[str]:
        out = _ok(kd.kubectl("get", "configmaps", "-l", selector, "-o", "name", namespace=ns))
        return {line.split("/", 1)[1] for line in out.split()}

    assert names("tier=web") == {"web-a"}
    assert names("tier!=web") == {"db-b", "bare"}
    assert names("tier in (db)") == {"db-b"}
    assert names("tier notin (web),app") == {"db-b"}
    assert names("!tier") == {"bare"}


def test_delete_ignore_not_found_is_silent_and_zero(kd: KubeHandle, ns: str) -> None:
    missing = kd.kubectl("delete", "configmap", "never-existed", "--ignore-not-found", "--wait=false", namespace=ns)
    assert missing.returncode == 0
    assert missing.stdout.strip() == ""
    kd.store.create("configmaps", {"metadata": {"name": "doomed", "namespace": ns}})
    gone = _ok(kd.kubectl("delete", "configmap", "doomed", "--wait=false", namespace=ns))
    assert 'configmap "doomed" deleted' in gone
    assert kd.store.get("configmaps", ns, "doomed") is None
    again = kd.kubectl("delete", "configmap", "doomed", namespace=ns)
    assert again.returncode == 1
    assert 'Error from server (NotFound): configmaps "doomed" not found' in again.stderr


def test_create_namespace(kd: KubeHandle) -> None:
    out = _ok(kd.kubectl("create", "namespace", "team-a"))
    assert out.strip() == "namespace/team-a created"
    assert kd.store.require("namespaces", None, "team-a")["status"]["phase"] == "Active"
    dup = kd.kubectl("create", "namespace", "team-a")
    assert dup.returncode == 1
    assert 'namespaces "team-a" already exists' in dup.stderr


def test_unknown_resource_type_is_kubectls_own_message(kd: KubeHandle) -> None:
    done = kd.kubectl("get", "frobnicators")
    assert done.returncode == 1
    assert 'the server doesn\'t have a resource type "frobnicators"' in done.stderr


def _apply_api(kd: KubeHandle, ns: str) -> None:
    _ok(kd.kubectl("apply", "-f", manifest("api.yaml"), namespace=ns))


def _complete_rollout(kd: KubeHandle, ns: str, name: str) -> None:
    """Write what the deployment controller writes when a rollout has finished (the controllers are not under test
    here: this sets the status kubectl reads)."""

    def finished(obj: dict) -> None:
        replicas = obj["spec"]["replicas"]
        now = "2026-01-01T00:00:00Z"
        obj["status"] = {
            "observedGeneration": obj["metadata"]["generation"],
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "MinimumReplicasAvailable",
                    "message": "Deployment has minimum availability.",
                    "lastUpdateTime": now,
                    "lastTransitionTime": now,
                },
                {
                    "type": "Progressing",
                    "status": "True",
                    "reason": "NewReplicaSetAvailable",
                    "message": "ReplicaSet has successfully progressed.",
                    "lastUpdateTime": now,
                    "lastTransitionTime": now,
                },
            ],
        }

    kd.store.mutate("deployments", ns, name, finished, subresource="status")


def test_server_side_apply_creates_and_updates(kd: KubeHandle, ns: str) -> None:
    kd.store.remove("deployments", ns, "api")
    first = _ok(kd.kubectl("apply", "--server-side", "--force-conflicts", "-f", manifest("api.yaml"), namespace=ns))
    assert "deployment.apps/api serverside-applied" in first
    assert (
        kd.store.require("deployments", ns, "api")["spec"]["template"]["spec"]["containers"][0]["image"]
        == "registry.local/api:1.0"
    )
    _ok(kd.kubectl("apply", "--server-side", "--force-conflicts", "-f", manifest("api-v2.yaml"), namespace=ns))
    after = kd.store.require("deployments", ns, "api")
    assert after["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.local/api:1.1"
    assert {m["manager"] for m in after["metadata"]["managedFields"]} >= {"kubectl"}
    applies = kd.requests(path_prefix=f"/apis/apps/v1/namespaces/{ns}/deployments/api", method="PATCH")
    assert applies[-1].headers["content-type"] == "application/apply-patch+yaml"
    assert applies[-1].query_params["force"] == ["true"]


def test_patch_label_annotate_scale_and_set_image(kd: KubeHandle, ns: str) -> None:
    _apply_api(kd, ns)
    _ok(
        kd.kubectl(
            "patch", "configmap", "api-config", "--type", "merge", "-p", '{"data": {"extra": "1"}}', namespace=ns
        )
    )
    _ok(kd.kubectl("label", "configmap", "api-config", "owner=team-a", namespace=ns))
    _ok(kd.kubectl("annotate", "configmap", "api-config", "note=hi", namespace=ns))
    config = kd.store.require("configmaps", ns, "api-config")
    assert config["data"]["extra"] == "1"
    assert config["metadata"]["labels"]["owner"] == "team-a"
    assert config["metadata"]["annotations"]["note"] == "hi"
    assert "deployment.apps/api scaled" in _ok(kd.kubectl("scale", "deployment", "api", "--replicas=4", namespace=ns))
    assert kd.store.require("deployments", ns, "api")["spec"]["replicas"] == 4
    _ok(kd.kubectl("set", "image", "deployment/api", "api=registry.local/api:2.0", namespace=ns))
    image = kd.store.require("deployments", ns, "api")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "registry.local/api:2.0"


def test_rollout_restart_bumps_the_generation_and_rollout_status_reads_it(kd: KubeHandle, ns: str) -> None:
    _apply_api(kd, ns)
    before = kd.store.require("deployments", ns, "api")["metadata"]["generation"]
    assert "deployment.apps/api restarted" in _ok(kd.kubectl("rollout", "restart", "deployment/api", namespace=ns))
    after = kd.store.require("deployments", ns, "api")
    assert after["metadata"]["generation"] == before + 1
    assert "kubectl.kubernetes.io/restartedAt" in after["spec"]["template"]["metadata"]["annotations"]
    restart = kd.requests(path_prefix=f"/apis/apps/v1/namespaces/{ns}/deployments/api", method="PATCH")[-1]
    assert restart.query_params["fieldManager"] == ["kubectl-rollout"]
    timer = threading.Timer(0.5, _complete_rollout, (kd, ns, "api"))  # the status arrives while kubectl watches
    timer.start()
    try:
        done = kd.kubectl("rollout", "status", "deployment/api", "--timeout=20s", namespace=ns)
    finally:
        timer.join(5.0)
    assert done.returncode == 0, done.stderr
    assert 'deployment "api" successfully rolled out' in done.stdout
    watched = [
        e
        for e in kd.requests(path_prefix=f"/apis/apps/v1/namespaces/{ns}/deployments")
        if e.query_params.get("watch") == ["true"]
    ]
    assert watched, "rollout status never watched"
    assert watched[-1].query_params["fieldSelector"] == ["metadata.name=api"]


def test_rollout_status_reports_a_progress_deadline(kd: KubeHandle, ns: str) -> None:
    _apply_api(kd, ns)

    def stalled(obj: dict) -> None:
        obj["status"] = {
            "observedGeneration": obj["metadata"]["generation"],
            "replicas": 1,
            "updatedReplicas": 0,
            "conditions": [
                {
                    "type": "Progressing",
                    "status": "False",
                    "reason": "ProgressDeadlineExceeded",
                    "message": 'ReplicaSet "api-x" has timed out progressing.',
                }
            ],
        }

    kd.store.mutate("deployments", ns, "api", stalled, subresource="status")
    done = kd.kubectl("rollout", "status", "deployment/api", "--timeout=10s", namespace=ns)
    assert done.returncode == 1
    assert 'deployment "api" exceeded its progress deadline' in done.stderr


def test_wait_for_a_condition(kd: KubeHandle, ns: str) -> None:
    _apply_api(kd, ns)
    _complete_rollout(kd, ns, "api")
    done = kd.kubectl("wait", "--for=condition=Available", "deployment/api", "--timeout=10s", namespace=ns)
    assert done.returncode == 0, done.stderr
    assert "deployment.apps/api condition met" in done.stdout


def test_describe_and_events_sorted_by_time(kd: KubeHandle, ns: str) -> None:
    if kd.store.get("pods", ns, "api-0") is None:
        kd.store.create(
            "pods",
            {
                "metadata": {"name": "api-0", "namespace": ns, "labels": {"app": "api"}},
                "spec": {"containers": [{"name": "api", "image": "registry.local/api:1.0"}]},
            },
        )
    pod = kd.store.require("pods", ns, "api-0")
    for i, (reason, at) in enumerate(
        (("Started", "2026-11-30T11:00:00Z"), ("Scheduled", "2026-11-30T09:00:00Z"), ("Pulled", "2026-11-30T10:00:00Z"))
    ):
        kd.store.create(
            "events",
            {
                "metadata": {"name": f"api-0.{i}", "namespace": ns},
                "involvedObject": {
                    "kind": "Pod",
                    "name": "api-0",
                    "namespace": ns,
                    "uid": pod["metadata"]["uid"],
                    "apiVersion": "v1",
                },
                "reason": reason,
                "message": f"{reason} it",
                "type": "Normal",
                "count": 1,
                "firstTimestamp": at,
                "lastTimestamp": at,
                "source": {"component": "kubelet"},
            },
        )
    described = _ok(kd.kubectl("describe", "pod", "api-0", namespace=ns))
    assert "Name:             api-0" in described  # aligned to "Service Account:", the longest label
    assert described.index("Scheduled it") < described.index("Pulled it") < described.index("Started it")
    asked = kd.requests(path_prefix=f"/api/v1/namespaces/{ns}/events")[-1]
    assert f"involvedObject.uid={pod['metadata']['uid']}" in asked.query_params["fieldSelector"][0]
    rows = _ok(kd.kubectl("get", "events", "--sort-by=.lastTimestamp", namespace=ns)).splitlines()
    reasons = [line.split()[2] for line in rows[1:]]
    assert reasons == ["Scheduled", "Pulled", "Started"]
    sorted_get = kd.requests(path_prefix=f"/api/v1/namespaces/{ns}/events")[-1]
    assert sorted_get.query_params["includeObject"] == ["Object"]


def test_create_generators_send_protobuf_the_double_reads(kd: KubeHandle, ns: str) -> None:
    _ok(kd.kubectl("create", "secret", "generic", "creds", "--from-literal=token=s3cret", namespace=ns))
    assert kd.store.require("secrets", ns, "creds")["data"] == {"token": "czNjcmV0"}
    _ok(
        kd.kubectl(
            "create", "deployment", "gen", "--image=registry.local/gen:1", "--replicas=0", "--port=9000", namespace=ns
        )
    )
    gen = kd.store.require("deployments", ns, "gen")
    assert gen["spec"]["replicas"] == 0
    assert gen["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 9000, "protocol": "TCP"}]
    _ok(kd.kubectl("create", "service", "clusterip", "gen", "--tcp=80:9000", namespace=ns))
    port = kd.store.require("services", ns, "gen")["spec"]["ports"][0]
    assert (port["port"], port["targetPort"]) == (80, 9000)
    _ok(kd.kubectl("create", "job", "once", "--image=busybox", "--", "echo", "hi", namespace=ns))
    job = kd.store.require("jobs", ns, "once")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    bodies = {
        e.headers.get("content-type")
        for e in kd.requests(method="POST")
        if e.query_params.get("fieldManager") == ["kubectl-create"]
    }
    assert "application/vnd.kubernetes.protobuf" in bodies


def test_replace_diff_and_wide_output(kd: KubeHandle, ns: str) -> None:
    _apply_api(kd, ns)
    kd.store.create(
        "pods",
        {
            "metadata": {"name": "api-0", "namespace": ns},
            "spec": {"containers": [{"name": "api", "image": "registry.local/api:1.0"}]},
        },
    )
    _ok(kd.kubectl("replace", "-f", manifest("api.yaml"), namespace=ns))
    differs = kd.kubectl("diff", "-f", manifest("api-v2.yaml"), namespace=ns)
    assert differs.returncode == 1  # kubectl diff: 1 means "there are differences"
    assert "+        image: registry.local/api:1.1" in differs.stdout
    wide = _ok(kd.kubectl("get", "pods", "-o", "wide", namespace=ns)).splitlines()
    assert wide[0].split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert "NOMINATED" in wide[0]
    pending = _ok(kd.kubectl("get", "pods", "--field-selector", "status.phase=Pending", "-o", "name", namespace=ns))
    assert "pod/api-0" in pending.split()


def test_get_watch_prints_rows_in_the_same_columns(kd: KubeHandle, ns: str) -> None:
    kd.store.create("configmaps", {"metadata": {"name": "watched-a", "namespace": ns}, "data": {"x": "1"}})
    timer = threading.Timer(
        0.7,
        lambda: kd.store.create(
            "configmaps", {"metadata": {"name": "watched-b", "namespace": ns}, "data": {"y": "1", "z": "2"}}
        ),
    )
    timer.start()
    try:
        done = kd.kubectl("get", "configmaps", "-w", "--request-timeout=2s", namespace=ns)
    finally:
        timer.join(5.0)
    lines = [line.split() for line in done.stdout.splitlines()]
    assert lines[0] == ["NAME", "DATA", "AGE"]
    assert [row[:2] for row in lines[1:]] == [["watched-a", "1"], ["watched-b", "2"]]
