"""The API client the twin's services and the local node use (``fakes.kube.client``), its watch-backed cache
(``fakes.kube.informer``) and the twin's read-change-write (``fakes.stack.cluster_api``), on the double and on the
real control plane (specs/targets.py). A watch resumes from its resourceVersion and lists again on ``410 Gone`` as
client-go's reflector does (``tools/cache/reflector.go``); an update with a stale resourceVersion is ``409
Conflict`` (``staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go``), retried as
``retry.RetryOnConflict`` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from fakes.kube.client import Api, ApiError
from fakes.kube.informer import Informer, InformerNotSynced
from fakes.stack.cluster_api import ClusterApi
from specs.targets import Target, double_with_kubectl

pytestmark = pytest.mark.timeout(120)
T = TypeVar("T")
EVENT_WAIT = 10.0
"""Seconds a watch event may take to reach the cache (milliseconds when all is well)."""


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    yield from double_with_kubectl()


def run(target: Target, body: Callable[[ClusterApi], Awaitable[T]]) -> T:
    """``body`` on a fresh event loop with a client of the target's namespace (admin credentials)."""

    async def main() -> T:
        api = Api.from_kubeconfig(str(target.kube.kubeconfig), target.kube.context)
        try:
            return await body(ClusterApi(api, str(target.kube.namespace)))
        finally:
            await api.aclose()

    return asyncio.run(main())


def config_map(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def until(check: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + EVENT_WAIT
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what} not seen within {EVENT_WAIT} s")
        await asyncio.sleep(0.01)


def test_the_cache_follows_creates_updates_and_deletes(target: Target) -> None:
    async def body(api: ClusterApi) -> list[tuple[str, str]]:
        await api.create("configmaps", config_map("before", k="1"))
        seen: list[tuple[str, str]] = []
        informer = api.informer("configmaps", lambda kind, obj: seen.append((kind, obj["metadata"]["name"])))
        await informer.start(EVENT_WAIT)
        try:
            assert informer.get("before", api.namespace) is not None
            await api.create("configmaps", config_map("after", k="1"))
            await until(lambda: informer.get("after", api.namespace) is not None, "the created ConfigMap")
            await api.mutate("configmaps", "after", lambda obj: bool(obj["data"].update(k="2")) or True)
            await until(lambda: (informer.get("after", api.namespace) or {}).get("data") == {"k": "2"}, "the update")
            await api.delete("configmaps", "before")
            await until(lambda: informer.get("before", api.namespace) is None, "the deletion")
        finally:
            await informer.stop()
        return [event for event in seen if event[1] in ("before", "after")]

    assert run(target, body) == [
        ("ADDED", "before"),
        ("ADDED", "after"),
        ("MODIFIED", "after"),
        ("DELETED", "before"),
    ]


def test_a_stale_write_is_a_conflict_and_concurrent_mutates_all_land(target: Target) -> None:
    def increment(obj: dict[str, Any]) -> bool:
        obj["data"]["n"] = str(int(obj["data"]["n"]) + 1)
        return True

    async def body(api: ClusterApi) -> tuple[int, str]:
        await api.create("configmaps", config_map("contended", n="0"))
        stale = await api.get("configmaps", "contended")
        assert stale is not None
        await api.mutate("configmaps", "contended", increment)
        try:
            await api.replace("configmaps", stale)
            conflict = 0
        except ApiError as exc:
            conflict = exc.code
        # Three read-change-writes at once: each that loses the race gets 409 and reads again.
        await asyncio.gather(*(api.mutate("configmaps", "contended", increment) for _ in range(3)))
        final = await api.get("configmaps", "contended")
        assert final is not None
        return conflict, final["data"]["n"]

    assert run(target, body) == (409, "4")


def test_a_list_that_keeps_failing_is_named_when_the_start_gives_up(target: Target) -> None:
    async def body(api: ClusterApi) -> str:
        informer = Informer(api.api, api.path("configmaps").replace("/configmaps", "/no-such-things"))
        try:
            await informer.start(1.5)
        except InformerNotSynced as exc:
            return str(exc)
        finally:
            await informer.stop()
        return "synced"

    message = run(target, body)
    assert "no-such-things" in message
    assert "not in within 1.5 s" in message
    assert "404" in message


def test_a_failed_list_is_retried_and_the_watch_starts_after_it(target: Target) -> None:
    if not target.on_double:
        pytest.skip("on the control plane no fault can be put in front of one list")
    target.double.fault("status", f"/api/v1/namespaces/{target.kube.namespace}/configmaps", status=503, times=1)

    async def body(api: ClusterApi) -> tuple[bool, str]:
        informer = api.informer("configmaps")
        try:
            await informer.start(EVENT_WAIT)
            await api.create("configmaps", config_map("late", k="1"))
            await until(lambda: informer.get("late", api.namespace) is not None, "a ConfigMap after the retry")
            return informer.synced, str(informer.last_error)
        finally:
            await informer.stop()

    synced, last_error = run(target, body)
    assert synced
    assert last_error.startswith("503")
