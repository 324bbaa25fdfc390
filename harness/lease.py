"""Exclusion between processes on different machines: a ``coordination.k8s.io/v1`` Lease as a lock.

The in-cluster mode's cluster lock (:mod:`harness.incluster`): specs running in several pods against one stack take
it where a run on one machine takes a file lock. The protocol is client-go's leader election
(``k8s.io/client-go/tools/leaderelection``), without its clock trust:

- **take**: create the Lease with ``holderIdentity`` = this holder; 409 AlreadyExists means it is held;
- **expiry**: a waiter notes when it last saw the Lease change (its ``resourceVersion``), by its own monotonic clock;
  once it has not changed for the Lease's ``leaseDurationSeconds``, the holder is taken as gone and the Lease
  replaced with this holder, conditional on that ``resourceVersion`` (a 409 means someone else won). No timestamp
  of another machine is compared with this one's, so clock skew cannot expire a live holder;
- **renew**: the holder sets ``renewTime`` (a replace) every third of the duration from a thread, conditional on its own
  last ``resourceVersion``; a 409 or 404 means the Lease was lost (:attr:`LeaseLock.lost` says why);
- **release**: delete with a ``resourceVersion`` precondition, so a Lease taken over meanwhile is left alone.

Every API call is bounded by :data:`API_TIMEOUT` seconds.
"""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import UTC, datetime
from typing import Any

from harness.kube import Kube

API_TIMEOUT = 10.0
"""Seconds one API call may take."""
DEFAULT_DURATION = 15.0
"""Seconds a Lease stays held without renewal (client-go's leader election default)."""
POLL = 0.25
"""Seconds between a waiter's looks at a held Lease."""


class LeaseLock:
    """An exclusive lock named ``name`` in ``kube``'s namespace for ``holder`` (a string naming this process).

    ``duration``: seconds without renewal after which waiters take the Lease (> 3 * :data:`API_TIMEOUT` is not
    required, but a renewal that takes longer than the duration loses the lock)."""

    def __init__(self, kube: Kube, name: str, holder: str, *, duration: float = DEFAULT_DURATION) -> None:
        if not duration >= 1:
            raise ValueError(f"duration must be at least 1 second, got {duration!r}")
        self.kube, self.name, self.holder, self.duration = kube, name, holder, duration
        self.lost: str | None = None
        self._version: str | None = None
        self._acquired: str | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._guard = threading.Lock()

    def _api(self) -> Any:
        from kubernetes import client as kube_client

        return kube_client.CoordinationV1Api(self.kube.api_client())

    def acquire(self, timeout: float) -> str | None:
        """Take the Lease within ``timeout`` seconds; ``None`` on success, else why not (names the holder). API
        errors other than a conflict end the wait with their status and reason."""
        from kubernetes.client.exceptions import ApiException

        api, deadline = self._api(), time.monotonic() + timeout
        seen: tuple[str, float] | None = None  # the holder's resourceVersion and when it was first seen here
        while True:
            try:
                try:
                    made = api.create_namespaced_lease(
                        self.kube.namespace, self._body(None), _request_timeout=API_TIMEOUT
                    )
                    self._held(made)
                    return None
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                current = api.read_namespaced_lease(self.name, self.kube.namespace, _request_timeout=API_TIMEOUT)
            except ApiException as exc:
                if exc.status == 404:
                    continue  # released between the create and the read: create again
                return f"lease {self.kube.namespace}/{self.name}: the API server answered {exc.status} {exc.reason}"
            version = current.metadata.resource_version
            if seen is None or seen[0] != version:
                seen = (version, time.monotonic())
            held_for = float(current.spec.lease_duration_seconds or self.duration)
            if time.monotonic() - seen[1] >= held_for:
                try:
                    taken = api.replace_namespaced_lease(
                        self.name, self.kube.namespace, self._body(version), _request_timeout=API_TIMEOUT
                    )
                    self._held(taken)
                    return None
                except ApiException as exc:
                    if exc.status not in (404, 409):
                        return f"lease {self.kube.namespace}/{self.name}: taking it over: {exc.status} {exc.reason}"
                    seen = None  # someone else took it, or it went: look again
            if time.monotonic() >= deadline:
                return (
                    f"lease {self.kube.namespace}/{self.name} still held after {timeout:.1f}s by "
                    f"{current.spec.holder_identity or 'an unnamed holder'}"
                )
            time.sleep(POLL)  # polling the Lease itself, bounded by the deadline

    def _body(self, version: str | None, acquired: str | None = None) -> dict[str, Any]:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.kube.namespace}
        if version is not None:
            metadata["resourceVersion"] = version
        spec = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": max(1, round(self.duration)),
            "acquireTime": acquired or now,
            "renewTime": now,
        }
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}

    def _held(self, lease: Any) -> None:
        self._version, self.lost = lease.metadata.resource_version, None
        self._acquired = lease.spec.acquire_time.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew, name=f"lease-{self.name}", daemon=True)
        self._renewer.start()

    def _renew(self) -> None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        api = self._api()
        while not self._stop.wait(self.duration / 3):
            with self._guard:
                try:
                    renewed = api.replace_namespaced_lease(
                        self.name,
                        self.kube.namespace,
                        self._body(self._version, self._acquired),
                        _request_timeout=API_TIMEOUT,
                    )
                    self._version = renewed.metadata.resource_version
                except ApiException as exc:
                    if exc.status in (404, 409):
                        self.lost = f"lost at renewal ({exc.status} {exc.reason}): taken over or deleted"
                        return
                except (HTTPError, OSError):
                    continue  # one failed renewal: the next may land before the duration runs out

    def release(self) -> None:
        """Stop renewing and delete the Lease if it is still this holder's (bounded; errors are not raised: the
        Lease expires after its duration anyway)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        if self._renewer is None:
            return
        self._stop.set()
        self._renewer.join(API_TIMEOUT + 1)
        self._renewer = None
        if self.lost is not None:
            return
        # Taken over (409), gone (404) or unreachable: left alone, it expires on its own.
        with self._guard, contextlib.suppress(ApiException, HTTPError, OSError):
            self._api().delete_namespaced_lease(
                self.name,
                self.kube.namespace,
                body={"preconditions": {"resourceVersion": self._version}},
                _request_timeout=API_TIMEOUT,
            )
