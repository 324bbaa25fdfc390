"""The real kubectl (the build the dispatcher on PATH picks for the double's v1.32.4) against the double: the verbs
the harness and the stack's scripts use, with the output and exit codes a real cluster gives."""

from __future__ import annotations

import json

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


def test_apply_creates_then_updates_with_a_strategic_merge(kd: KubeHandle) -> None:
    created = _ok(kd.kubectl("apply", "-f", manifest("api.yaml"), namespace="default"))
    assert "deployment.apps/api created" in created
    assert "configmap/api-config created" in created
    first = kd.store.require("deployments", "default", "api")
    assert first["metadata"]["generation"] == 1
    assert "kubectl.kubernetes.io/last-applied-configuration" in first["metadata"]["annotations"]

    updated = _ok(kd.kubectl("apply", "-f", manifest("api-v2.yaml"), namespace="default"))
    assert "deployment.apps/api configured" in updated
    assert "configmap/api-config configured" in updated
    after = kd.store.require("deployments", "default", "api")
    container = after["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.local/api:1.1"
    assert container["env"] == [{"name": "MODE", "value": "green"}]  # LEVEL deleted by the 3-way merge
    assert after["metadata"]["generation"] == 2
    assert kd.store.require("configmaps", "default", "api-config")["data"] == {"mode": "green"}
    patches = kd.requests(path_prefix="/apis/apps/v1/namespaces/default/deployments/api", method="PATCH")
    assert patches[-1].headers["content-type"] == "application/strategic-merge-patch+json"

    again = _ok(kd.kubectl("apply", "-f", manifest("api-v2.yaml"), namespace="default"))
    assert "deployment.apps/api unchanged" in again
    assert kd.store.require("deployments", "default", "api")["metadata"]["generation"] == 2


def test_label_selectors_filter_lists(kd: KubeHandle) -> None:
    for name, labels in (("web-a", {"tier": "web", "app": "a"}), ("db-b", {"tier": "db", "app": "b"}),
                         ("bare", {})):
        if kd.store.get("configmaps", "default", name) is None:
            kd.store.create("configmaps", {"metadata": {"name": name, "namespace": "default", "labels": labels}})

    def names(selector: str) -> set[str]:
        out = _ok(kd.kubectl("get", "configmaps", "-l", selector, "-o", "name", namespace="default"))
        return {line.split("/", 1)[1] for line in out.split()}

    assert names("tier=web") == {"web-a", "api-config"}
    assert names("tier!=web") == {"db-b", "bare"}
    assert names("tier in (db)") == {"db-b"}
    assert names("tier notin (web),app") == {"db-b"}
    assert names("!tier") == {"bare"}


def test_delete_ignore_not_found_is_silent_and_zero(kd: KubeHandle) -> None:
    missing = kd.kubectl("delete", "configmap", "never-existed", "--ignore-not-found", "--wait=false",
                         namespace="default")
    assert missing.returncode == 0
    assert missing.stdout.strip() == ""
    kd.store.create("configmaps", {"metadata": {"name": "doomed", "namespace": "default"}})
    gone = _ok(kd.kubectl("delete", "configmap", "doomed", "--wait=false", namespace="default"))
    assert 'configmap "doomed" deleted' in gone
    assert kd.store.get("configmaps", "default", "doomed") is None
    again = kd.kubectl("delete", "configmap", "doomed", namespace="default")
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
