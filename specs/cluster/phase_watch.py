"""Every phase one AgentRun passes through while something disruptive happens: a watch, not a look afterwards.

A phase read once after a rollout misses a ``Failed`` that one component wrote during it and another overwrote a
moment later; a poll misses it too when the overwrite comes between two polls. :class:`PhaseWatch` lists the run,
then watches it with the kubernetes client (``watch=1``, ``fieldSelector=metadata.name=<run>``, from the listed
``resourceVersion``) on a thread of its own, and records the phase of every version of the object the API server
sends, in order. Each watch request stays open at most ``window`` seconds, rounded up to whole seconds
(``timeoutSeconds``), and the next one resumes from the last ``resourceVersion`` seen, so stopping takes at most
one window and no change between two requests is lost. A ``410 Gone`` (the API server no longer holds that
history) re-lists the run; the record then notes the gap, since changes inside it cannot be known.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness import Kube
from specs.agent_controller.agentruns import AGENTRUN_RESOURCE

PLURAL, VERSION, GROUP = AGENTRUN_RESOURCE.split(".", 2)


class PhaseWatchFailed(RuntimeError):
    """The watch itself could not go on (the API server refused or hung up on it): its record is incomplete."""


@dataclass(frozen=True)
class PhaseSeen:
    """One version of the run: its ``status.phase`` (``None`` before the controller set one), ``resourceVersion``
    and ``time.monotonic()`` when it arrived."""

    phase: str | None
    resource_version: str
    at: float


@dataclass
class PhaseWatch:
    """Use as a context manager around the disruptive step: ``with PhaseWatch(kube, run, window=2.0) as watch:``;
    then :meth:`phases` (every phase seen, consecutive repeats folded) and :attr:`gaps`.

    ``window`` is seconds per watch request, and so the longest :meth:`stop` waits for the thread. Entering lists
    the run (``KubectlError``-free: the kubernetes client's ``ApiException`` when the run cannot be read).
    Leaving stops the thread; it raises :class:`PhaseWatchFailed` when the watch broke off, naming why.
    """

    kube: Kube
    run: str
    window: float
    seen: list[PhaseSeen] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)
    error: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> PhaseWatch:
        version = self._list()
        self._thread = threading.Thread(target=self._loop, args=(version,), name=f"phase-watch-{self.run}")
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.stop()
            return
        with contextlib.suppress(PhaseWatchFailed):  # the body's own failure is the one to report
            self.stop()

    def stop(self) -> list[str | None]:
        """End the watch (at most one window plus one wait interval later) and return :meth:`phases`."""
        self._stop.set()
        if self._thread is not None:
            bound = self._request_bound() + self._seconds()
            self._thread.join(bound)
            if self._thread.is_alive():
                raise PhaseWatchFailed(
                    f"the watch of AgentRun {self.run} did not end within {bound:.0f}s "
                    "of being stopped (a watch request the API server neither answered nor closed)"
                )
            self._thread = None
        if self.error is not None:
            raise PhaseWatchFailed(
                f"the watch of AgentRun {self.run} broke off ({type(self.error).__name__}: {self.error}); "
                f"phases seen until then: {self.phases()}"
            ) from self.error
        return self.phases()

    def phases(self) -> list[str | None]:
        """The phases seen, in order, with consecutive repeats folded (``[None, "Running", "Succeeded"]``)."""
        folded: list[str | None] = []
        for seen in self.seen:
            if not folded or folded[-1] != seen.phase:
                folded.append(seen.phase)
        return folded

    def describe(self) -> str:
        """The record for a failure message: phases in order, with their resourceVersions and any gaps."""
        steps = ", ".join(f"{s.phase or '(no phase)'}@rv{s.resource_version}" for s in self.seen)
        gaps = f"; gaps (changes there unknown): {'; '.join(self.gaps)}" if self.gaps else ""
        return f"{steps or 'nothing'}{gaps}"

    # --- the thread -----------------------------------------------------------------------------------------------

    def _api(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.kube.api_client())

    def _seconds(self) -> int:
        """The watch request's ``timeoutSeconds``: the API server counts whole seconds, so the window rounded up."""
        return math.ceil(self.window)

    def _request_bound(self) -> float:
        """The client's bound on one request: twice what the API server holds it open (a window under a second is
        still held a whole second, so the bound follows the rounded value, not the window)."""
        return 2.0 * self._seconds()

    def _record(self, obj: dict[str, Any]) -> str:
        version = str(obj["metadata"]["resourceVersion"])
        phase = (obj.get("status") or {}).get("phase")
        self.seen.append(PhaseSeen(phase, version, time.monotonic()))
        return version

    def _list(self) -> str:
        obj = self._api().get_namespaced_custom_object(
            GROUP, VERSION, self.kube.namespace, PLURAL, self.run, _request_timeout=self._request_bound()
        )
        return self._record(obj)

    def _loop(self, version: str) -> None:
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        try:
            while not self._stop.is_set():
                try:
                    version = self._watch_once(watch.Watch(), version)
                except ApiException as exc:
                    if exc.status != 410:
                        raise
                    self.gaps.append(f"after rv{version}: {exc.reason or 'Gone'}, re-listed")
                    version = self._list()
        except BaseException as exc:  # the spec reads it from stop(); a thread's exception would be lost
            self.error = exc

    def _watch_once(self, stream: Any, version: str) -> str:
        events = stream.stream(
            self._api().list_namespaced_custom_object,
            GROUP,
            VERSION,
            self.kube.namespace,
            PLURAL,
            field_selector=f"metadata.name={self.run}",
            resource_version=version,
            timeout_seconds=self._seconds(),
            _request_timeout=self._request_bound(),
        )
        for event in events:
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and isinstance(event.get("raw_object"), dict):
                version = self._record(event["raw_object"])
            if self._stop.is_set():
                stream.stop()
                break
        return version
