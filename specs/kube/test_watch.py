"""Watches as a real API server streams them: initial ADDED events, changes after a resourceVersion, selector
transitions, bookmarks, timeoutSeconds, 410 Expired, a silent watch, and the stream's end when the client leaves or
the double stops. Read raw with httpx (newline-delimited JSON) and with the kubernetes client."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as kube_client
from kubernetes import config as kube_config
from kubernetes import watch as kube_watch

from fakes.kube import KubeHandle
from specs.kube.conftest import bare

CM = "/api/v1/namespaces/default/configmaps"
SETTLE_SECONDS = 30.0
"""Seconds for the double to open or drop a watch's feed (milliseconds when idle; generous for a loaded runner)."""


@pytest.fixture(scope="module")
def served() -> Iterator[KubeHandle]:
    with bare(history_size=50) as handle:
        yield handle


def _cm(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "labels": labels or {}}}


def _events(kd: KubeHandle, query: str, *, until: int, deadline: float = 10.0) -> list[dict[str, Any]]:
    """Read watch events until ``until`` arrived, the stream ended, or ``deadline`` seconds passed."""
    out: list[dict[str, Any]] = []
    timeout = httpx.Timeout(deadline, connect=5.0)
    with httpx.stream("GET", f"{kd.url}{CM}?watch=true&{query}", timeout=timeout) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        started = time.monotonic()
        for line in response.iter_lines():
            if line:
                out.append(json.loads(line))
            if len(out) >= until or time.monotonic() - started > deadline:
                break
    return out


def _later(seconds: float, action) -> threading.Thread:
    def run() -> None:
        time.sleep(seconds)  # the spacing of the change under test, not a readiness wait
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_watch_without_version_lists_then_follows(served: KubeHandle) -> None:
    served.reset()
    served.store.create("configmaps", _cm("first"))
    _later(0.2, lambda: served.store.create("configmaps", _cm("second")))
    events = _events(served, "timeoutSeconds=10", until=2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "first"), ("ADDED", "second")]
    assert events[0]["object"]["kind"] == "ConfigMap"
    assert events[0]["object"]["apiVersion"] == "v1"


def test_watch_from_a_version_gets_only_later_changes(served: KubeHandle) -> None:
    served.reset()
    before = served.store.create("configmaps", _cm("old"))
    rv = before["metadata"]["resourceVersion"]
    served.store.mutate("configmaps", "default", "old", lambda o: o.update(data={"k": "v"}))
    served.store.delete("configmaps", "default", "old")
    events = _events(served, f"resourceVersion={rv}&timeoutSeconds=5", until=2)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]


def test_selector_transitions_are_added_and_deleted(served: KubeHandle) -> None:
    served.reset()
    served.store.create("configmaps", _cm("moving", {"tier": "db"}))
    rv = served.store.resource_version

    def relabel(value: str):
        return lambda: served.store.mutate(
            "configmaps", "default", "moving", lambda o: o["metadata"]["labels"].update(tier=value)
        )

    relabel("web")()
    relabel("cache")()
    events = _events(served, f"resourceVersion={rv}&labelSelector=tier%3Dweb&timeoutSeconds=5", until=2)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


def test_bookmarks_and_the_timeout_end_the_stream(served: KubeHandle) -> None:
    served.reset()
    served.double.bookmark_interval = 0.3
    try:
        started = time.monotonic()
        events = _events(
            served,
            f"allowWatchBookmarks=true&timeoutSeconds=2&resourceVersion={served.store.resource_version}",
            until=100,
            deadline=15.0,
        )
        elapsed = time.monotonic() - started
    finally:
        served.double.bookmark_interval = 10.0
    assert events, "no bookmark in 2 s with a 0.3 s interval"
    assert {e["type"] for e in events} == {"BOOKMARK"}
    assert events[0]["object"]["metadata"]["resourceVersion"] == str(served.store.resource_version)
    assert 1.5 < elapsed < 12.0, f"the watch with timeoutSeconds=2 lasted {elapsed:.1f} s"


def test_initial_events_end_with_an_annotated_bookmark(served: KubeHandle) -> None:
    served.reset()
    served.store.create("configmaps", _cm("one"))
    events = _events(
        served,
        "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=5",
        until=2,
    )
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_a_too_old_version_is_an_expired_error_event(served: KubeHandle) -> None:
    served.reset()
    first = served.store.create("configmaps", _cm("churn"))
    for i in range(60):
        served.store.mutate("configmaps", "default", "churn", _data_i(i))
    events = _events(served, f"resourceVersion={first['metadata']['resourceVersion']}&timeoutSeconds=5", until=5)
    assert len(events) == 1
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")


def test_after_a_compaction_only_newer_versions_can_be_watched(served: KubeHandle) -> None:
    served.reset()
    before = served.store.create("configmaps", _cm("old"))
    served.store.mutate("configmaps", "default", "old", _data_i(1))  # an event after `before`, forgotten below
    served.store.compact()
    after = served.store.create("configmaps", _cm("new"))
    gone = _events(served, f"resourceVersion={before['metadata']['resourceVersion']}&timeoutSeconds=5", until=1)
    assert (gone[0]["type"], gone[0]["object"]["code"]) == ("ERROR", 410)
    since = int(after["metadata"]["resourceVersion"]) - 1
    kept = _events(served, f"resourceVersion={since}&timeoutSeconds=1", until=2)  # the server ends it: no watch left
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in kept] == [("ADDED", "new")]


def test_a_client_that_leaves_takes_its_watch_with_it() -> None:
    # A double of its own: on the module's, the watches earlier specs' servers ended may still be leaving, and the
    # count this spec compares would move under it.
    with bare() as served:
        baseline = served.store.subscriber_count
        with httpx.stream(
            "GET", f"{served.url}{CM}?watch=true&timeoutSeconds=300", timeout=httpx.Timeout(10.0)
        ) as response:
            assert response.status_code == 200
            deadline = time.monotonic() + SETTLE_SECONDS
            while served.store.subscriber_count == baseline and time.monotonic() < deadline:
                time.sleep(0.02)
            assert served.store.subscriber_count == baseline + 1
        deadline = time.monotonic() + SETTLE_SECONDS
        while served.store.subscriber_count > baseline and time.monotonic() < deadline:
            time.sleep(0.05)
        assert served.store.subscriber_count == baseline, "the server kept the watch of a client that went away"


def test_a_silent_watch_stays_open_and_sends_nothing(served: KubeHandle) -> None:
    served.reset()
    served.store.create("configmaps", _cm("listed"))
    served.silence_watches(True)
    try:
        _later(0.2, lambda: served.store.create("configmaps", _cm("unheard")))
        started = time.monotonic()
        events = _events(served, "timeoutSeconds=2", until=1, deadline=10.0)  # not even the initial ADDED
        assert events == []
        assert time.monotonic() - started > 1.5  # open until its timeout, not closed
    finally:
        served.silence_watches(False)
    served.store.create("configmaps", _cm("heard"))
    resumed = _events(served, "timeoutSeconds=5", until=3)
    assert [e["object"]["metadata"]["name"] for e in resumed] == ["heard", "listed", "unheard"]  # key order


def test_stopping_the_double_ends_open_watches_quickly() -> None:
    with bare() as kd:
        opened = threading.Event()
        ended: list[float] = []

        def watch() -> None:
            try:
                with httpx.stream(
                    "GET", f"{kd.url}{CM}?watch=true&timeoutSeconds=300", timeout=httpx.Timeout(30.0)
                ) as response:
                    opened.set()
                    for _ in response.iter_lines():
                        pass
            except httpx.HTTPError:
                pass
            ended.append(time.monotonic())

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        assert opened.wait(5.0)
        stop_started = time.monotonic()
    thread.join(10.0)
    assert not thread.is_alive()
    assert ended[0] - stop_started < 8.0


def test_the_kubernetes_client_watch_ends_at_timeout_and_raises_410(served: KubeHandle) -> None:
    served.reset()
    api = kube_config.new_client_from_config(config_file=served.kubeconfig, context=served.context)
    try:
        core = kube_client.CoreV1Api(api)
        listed = core.list_namespaced_config_map("default").metadata
        assert listed is not None
        rv = listed.resource_version
        _later(0.2, lambda: served.store.create("configmaps", _cm("seen")))
        started = time.monotonic()
        names = [
            e["object"].metadata.name
            for e in kube_watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=2
            )
        ]
        elapsed = time.monotonic() - started
        assert names == ["seen"]
        assert 1.5 < elapsed < 12.0, f"a 2 s watch ended after {elapsed:.1f} s"
        for i in range(60):
            served.store.mutate("configmaps", "default", "seen", _data_i(i))
        with pytest.raises(kube_client.ApiException) as caught:
            for _ in kube_watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
            ):
                pass
        assert caught.value.status == 410
    finally:
        api.close()


def _data_i(i: int) -> Callable[[dict[str, Any]], None]:
    """A store change that sets ``data`` to ``{"i": "<i>"}``."""

    def change(obj: dict[str, Any]) -> None:
        obj["data"] = {"i": str(i)}

    return change
