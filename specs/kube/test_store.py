"""The double's store on its own: resourceVersions, generations, conflicts, deletion, garbage collection, history,
change feeds and timers, as a real API server (etcd behind it) behaves."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from fakes.kube import KubeHandle
from fakes.kube.clock import Clock, parse_rfc3339
from fakes.kube.errors import ApiError
from fakes.kube.resources import Registry
from fakes.kube.store import Store, StoreEvent
from specs.kube.conftest import bare

DEPLOY = {
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "img:1"}]}},
    },
}


@pytest.fixture
def store() -> Store:
    return Store(Registry(), Clock(), history_size=20)


@pytest.fixture(scope="module")
def served() -> Iterator[KubeHandle]:
    with bare() as handle:
        yield handle


def test_every_write_bumps_one_global_resource_version(store: Store) -> None:
    start = store.resource_version
    a = store.create("configmaps", {"metadata": {"name": "a", "namespace": "default"}})
    b = store.create("secrets", {"metadata": {"name": "b", "namespace": "default"}})
    assert int(a["metadata"]["resourceVersion"]) == start + 1
    assert int(b["metadata"]["resourceVersion"]) == start + 2
    _, list_rv = store.list("configmaps", "default")
    assert list_rv == start + 2


def test_create_sets_server_fields_and_truncates_creation_to_whole_seconds(store: Store) -> None:
    store.clock.set_time(1_700_000_000.75)
    obj = store.create(
        "configmaps",
        {"metadata": {"name": "c", "namespace": "default", "uid": "mine", "creationTimestamp": "2001-01-01T00:00:00Z"}},
    )
    assert obj["metadata"]["uid"] != "mine"
    assert obj["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    precise = store.created_at("configmaps", "default", "c")
    assert precise is not None
    assert 1_700_000_000.7 < precise < 1_700_000_001.5  # the instant itself, not the truncated second
    assert parse_rfc3339(obj["metadata"]["creationTimestamp"]) <= precise


def test_generation_bumps_on_spec_changes_only(store: Store) -> None:
    store.create("deployments", DEPLOY)
    current = store.require("deployments", "default", "web")
    current["metadata"].setdefault("labels", {})["x"] = "y"
    labelled = store.update("deployments", current)
    assert labelled["metadata"]["generation"] == 1
    labelled["spec"]["replicas"] = 3
    scaled = store.update("deployments", labelled)
    assert scaled["metadata"]["generation"] == 2
    scaled["status"] = {"observedGeneration": 2, "replicas": 3}
    status_write = store.update("deployments", scaled, subresource="status")
    assert status_write["metadata"]["generation"] == 2
    assert status_write["status"]["replicas"] == 3


def test_main_resource_update_ignores_status_and_status_update_ignores_spec(store: Store) -> None:
    store.create("deployments", DEPLOY)
    obj = store.require("deployments", "default", "web")
    obj["status"] = {"replicas": 9}
    assert "replicas" not in store.update("deployments", obj).get("status", {})
    obj = store.require("deployments", "default", "web")
    obj["spec"]["replicas"] = 7
    obj["status"] = {"replicas": 2}
    after = store.update("deployments", obj, subresource="status")
    assert after["spec"]["replicas"] == 1
    assert after["status"] == {"replicas": 2}


def test_stale_resource_version_is_a_conflict(store: Store) -> None:
    first = store.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}})
    store.update("configmaps", dict(first, data={"a": "2"}))
    with pytest.raises(ApiError) as caught:
        store.update("configmaps", dict(first, data={"a": "3"}))
    assert caught.value.code == 409
    assert caught.value.reason == "Conflict"
    assert "the object has been modified" in caught.value.message


def test_create_in_a_missing_namespace_and_twice_are_real_errors(store: Store) -> None:
    with pytest.raises(ApiError) as missing:
        store.create("configmaps", {"metadata": {"name": "c", "namespace": "nope"}})
    assert (missing.value.code, missing.value.message) == (404, 'namespaces "nope" not found')
    store.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}})
    with pytest.raises(ApiError) as dup:
        store.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}})
    assert (dup.value.code, dup.value.message) == (409, 'configmaps "c" already exists')


def test_finalizers_keep_an_object_until_they_are_emptied(store: Store) -> None:
    store.create("configmaps", {"metadata": {"name": "f", "namespace": "default", "finalizers": ["x/y"]}})
    obj, gone = store.delete("configmaps", "default", "f")
    assert gone is False
    assert obj["metadata"]["deletionTimestamp"]
    obj["metadata"]["finalizers"] = []
    store.update("configmaps", obj)
    assert store.get("configmaps", "default", "f") is None


def test_a_scheduled_pod_stays_terminating_for_the_kubelet(store: Store) -> None:
    spec = {"nodeName": "node-1", "terminationGracePeriodSeconds": 30, "containers": [{"name": "c", "image": "i"}]}
    store.create("pods", {"metadata": {"name": "p", "namespace": "default"}, "spec": spec})
    obj, gone = store.delete("pods", "default", "p")
    assert gone is False
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 30
    assert store.remove("pods", "default", "p") is not None
    assert store.get("pods", "default", "p") is None
    store.create("pods", {"metadata": {"name": "q", "namespace": "default"}, "spec": spec})
    _, forced = store.delete("pods", "default", "q", grace_seconds=0)
    assert forced is True


def test_dependents_are_collected_unless_orphaned(store: Store) -> None:
    owner = store.create("deployments", DEPLOY)
    ref = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    store.create("replicasets", {"metadata": {"name": "web-1", "namespace": "default", "ownerReferences": ref}})
    store.delete("deployments", "default", "web")
    assert store.get("replicasets", "default", "web-1") is None
    owner = store.create("deployments", DEPLOY)
    ref[0]["uid"] = owner["metadata"]["uid"]
    store.create("replicasets", {"metadata": {"name": "web-2", "namespace": "default", "ownerReferences": ref}})
    store.delete("deployments", "default", "web", propagation="Orphan")
    kept = store.require("replicasets", "default", "web-2")
    assert kept["metadata"]["ownerReferences"] == []


def test_deleting_a_namespace_deletes_its_contents(store: Store) -> None:
    store.create("namespaces", {"metadata": {"name": "team"}})
    store.create("configmaps", {"metadata": {"name": "c", "namespace": "team"}})
    store.delete("namespaces", None, "team")
    assert store.get("configmaps", "team", "c") is None
    assert store.get("namespaces", None, "team") is None


def test_history_reaches_back_only_so_far(store: Store) -> None:
    base = store.resource_version
    for i in range(30):
        store.create("configmaps", {"metadata": {"name": f"c{i}", "namespace": "default"}})
    recent = store.history_since(store.resource_version - 5, ["/configmaps"])
    assert [e.rv for e in recent] == list(range(store.resource_version - 4, store.resource_version + 1))
    with pytest.raises(ApiError) as caught:
        store.history_since(base, ["/configmaps"])
    assert caught.value.code == 410
    assert caught.value.reason == "Expired"
    assert caught.value.message.startswith(f"too old resource version: {base} (")


def test_dry_run_stores_nothing(store: Store) -> None:
    rv = store.resource_version
    shown = store.create("configmaps", {"metadata": {"name": "dry", "namespace": "default"}}, dry_run=True)
    assert shown["metadata"]["name"] == "dry"
    assert store.get("configmaps", "default", "dry") is None
    assert store.resource_version == rv


def test_crd_serves_its_kind_until_deleted(store: Store) -> None:
    crd = {
        "metadata": {"name": "widgets.example.dev"},
        "spec": {
            "group": "example.dev",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}],
        },
    }
    stored = store.create("customresourcedefinitions", crd)
    conditions = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    rt = store.registry.resolve("widgets.example.dev")
    assert rt.status_subresource
    store.create(rt, {"metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 1}})
    store.delete("customresourcedefinitions", None, "widgets.example.dev")
    with pytest.raises(KeyError):
        store.registry.resolve("widgets.example.dev")


def test_subscribers_get_changes_in_order_on_the_doubles_loop(served: KubeHandle) -> None:
    seen: list[tuple[str, str, bool]] = []
    done = threading.Event()
    loop_thread: list[threading.Thread] = []

    def on_change(event: StoreEvent) -> None:
        loop_thread.append(threading.current_thread())
        seen.append((event.type, event.name, event.old is None))
        if event.type == "DELETED":
            done.set()

    sub = served.store.subscribe(on_change, ["/configmaps"])
    try:
        served.store.create("secrets", {"metadata": {"name": "ignored", "namespace": "default"}})
        served.store.create("configmaps", {"metadata": {"name": "watched", "namespace": "default"}})
        served.store.mutate("configmaps", "default", "watched", lambda o: o.update(data={"a": "b"}))
        served.store.delete("configmaps", "default", "watched")
        assert done.wait(5.0), f"no DELETED event within 5 s; saw {seen}"
    finally:
        sub.cancel()
    assert seen == [("ADDED", "watched", True), ("MODIFIED", "watched", False), ("DELETED", "watched", False)]
    assert all(t.name.startswith("fake-kube-") for t in loop_thread)


def test_timers_run_on_the_doubles_clock(served: KubeHandle) -> None:
    fired = threading.Event()
    assert served.double.timers is not None
    served.double.timers.call_later(3600.0, fired.set)
    assert not fired.wait(0.2)
    started = time.monotonic()
    served.clock.advance(3601.0)
    try:
        assert fired.wait(5.0), "a timer due an hour ahead did not fire when the clock moved an hour"
    finally:
        served.clock.set_offset(0.0)
    assert time.monotonic() - started < 5.0


def test_secret_string_data_is_written_into_data_and_never_stored(served: KubeHandle) -> None:
    manifest = (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\n"
        "data: {kept: a2VwdA==, token: b2xk}\nstringData: {token: new, plain: text}\n"
    )
    done = served.kubectl("apply", "-f", "-", input=manifest)
    assert done.returncode == 0, done.stderr
    secret = json.loads(served.kubectl("get", "secret", "creds", "-o", "json").stdout)
    assert "stringData" not in secret
    assert secret["data"] == {"kept": "a2VwdA==", "token": "bmV3", "plain": "dGV4dA=="}  # stringData's keys win
    patched = served.kubectl("patch", "secret", "creds", "--type", "merge", "-p", '{"stringData": {"kept": "again"}}')
    assert patched.returncode == 0, patched.stderr
    secret = json.loads(served.kubectl("get", "secret", "creds", "-o", "json").stdout)
    assert secret["data"]["kept"] == "YWdhaW4="
    assert "stringData" not in secret
