"""The in-cluster cluster lock (:class:`harness.lease.LeaseLock`) on the double and on the real control plane: one
holder at a time, a waiter told who holds it, a silent holder taken over after the Lease's duration and told at its
next renewal that it lost it, a release that leaves a taken-over Lease alone.

Conditional replace and delete follow the apiserver's optimistic concurrency (a ``resourceVersion`` in the body,
``DeleteOptions.preconditions``: apiserver ``pkg/registry/generic/registry/store.go``); the real server decides.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from harness.lease import LeaseLock
from harness.waiting import wait_for_sync
from specs.targets import Target, double_with_kubectl

pytestmark = pytest.mark.timeout(120)
SHORT = 2.0
"""Seconds of a Lease's duration in the takeover specs."""


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    yield from double_with_kubectl()


def holder_of(target: Target, name: str) -> str | None:
    found = target.kube.kubectl_json("get", "lease", name, "--ignore-not-found")
    return None if found is None else str(found["spec"].get("holderIdentity"))


def test_one_holder_at_a_time_and_a_waiter_is_told_who_holds_it(target: Target) -> None:
    first, second = LeaseLock(target.kube, "lock", "first"), LeaseLock(target.kube, "lock", "second")
    assert first.acquire(10.0) is None
    try:
        assert holder_of(target, "lock") == "first"
        why = second.acquire(0.5)
        assert why is not None
        assert "still held after 0.5s by first" in why
    finally:
        first.release()
    assert holder_of(target, "lock") is None
    assert second.acquire(10.0) is None
    second.release()


def test_a_holder_that_stops_renewing_is_taken_over_and_learns_it_lost(target: Target) -> None:
    silent = LeaseLock(target.kube, "lock", "silent", duration=SHORT)
    assert silent.acquire(10.0) is None
    silent._stop.set()  # its renewer ends, as when its process is frozen: the Lease stays, unrenewed
    assert silent._renewer is not None
    silent._renewer.join(5.0)
    waiter = LeaseLock(target.kube, "lock", "waiter", duration=SHORT)
    try:
        assert waiter.acquire(30.0) is None
        assert holder_of(target, "lock") == "waiter"
    finally:
        silent.release()  # its delete is conditional on its own resourceVersion: the waiter's Lease stays
        assert holder_of(target, "lock") == "waiter"
        waiter.release()


def test_a_renewal_after_a_takeover_marks_the_lock_lost_and_its_release_leaves_the_new_holder(target: Target) -> None:
    old = LeaseLock(target.kube, "lock", "old", duration=SHORT * 3)
    assert old.acquire(10.0) is None
    try:
        current = target.kube.kubectl_json("get", "lease", "lock")
        current["spec"]["holderIdentity"] = "usurper"
        target.kube.kubectl("replace", "-f", "-", input=json.dumps(current))
        wait_for_sync("the old holder to notice at its renewal", lambda: old.lost, timeout=SHORT * 3, interval=0.2)
        assert "taken over or deleted" in str(old.lost)
    finally:
        old.release()
    assert holder_of(target, "lock") == "usurper"
    target.kube.kubectl("delete", "lease", "lock")


def test_the_holder_renews_so_a_waiter_never_takes_a_live_lock(target: Target) -> None:
    live = LeaseLock(target.kube, "lock", "live", duration=SHORT)
    assert live.acquire(10.0) is None
    try:
        why = LeaseLock(target.kube, "lock", "waiter", duration=SHORT).acquire(SHORT * 3)
        assert why is not None
        assert "by live" in why
        assert live.lost is None
    finally:
        live.release()
