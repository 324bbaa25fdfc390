"""What happens to one request, decided once for every adapter (ASGI server, in-process transport).

:class:`FakeRuntime` wraps a :class:`~fakes.core.FakeApp` with its journal and fault table. ``dispatch`` answers
admin routes, records the request, picks a fault and calls the fake; the adapter then *enacts* the outcome in its own
medium (a socket RST, or the httpx exception a socket client would see).
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic

from fakes.admin import handle_admin, is_admin_path
from fakes.core import FakeApp, FakeRequest, FakeResponse, NonJsonValue
from fakes.faults import BODYLESS_STATUSES, STREAM_KINDS, Fault, FaultTable
from fakes.journal import Journal, JournalEntry

log = logging.getLogger("fakes")

#: The fake a runtime (and a ``FakeHandle``) wraps, so ``handle.app`` has the fake's own type. Its default (PEP 696,
#: for the type checker only: Python 3.11's TypeVar has none) lets a bare ``FakeHandle`` mean "any fake".
if TYPE_CHECKING:
    from typing_extensions import TypeVar

    AppT = TypeVar("AppT", bound=FakeApp, covariant=True, default=FakeApp)
else:
    from typing import TypeVar

    AppT = TypeVar("AppT", bound=FakeApp, covariant=True)


@dataclass
class Outcome:
    """The decision for one request.

    ``response`` is what to send (``None`` for hang and reset); ``fault`` is the fault to enact, if any (for drip the
    response is dripped, for latency it is delayed, for a stream fault it is cut, paused or reset between chunks);
    ``entry`` is the journal entry (``None`` for admin and health).
    """

    response: FakeResponse | None
    fault: Fault | None = None
    entry: JournalEntry | None = None


class FakeRuntime(Generic[AppT]):
    """A fake plus its journal and faults. Thread-safe: adapters may dispatch from any thread."""

    def __init__(self, app: AppT) -> None:
        self.app = app
        self.journal = Journal()
        self.faults = FaultTable()
        #: Set when the serving adapter shuts down: in-flight hangs and drips end at once.
        self.stopping = threading.Event()

    def dispatch(self, request: FakeRequest) -> Outcome:
        """Decide the outcome of ``request``; never raises (a crash in the fake becomes a 500 naming it)."""
        if is_admin_path(request.path):
            return Outcome(self._guarded(lambda: handle_admin(self, request)))
        health = request.path in self.app.unrecorded_paths
        fault = self.faults.take(request.method, request.path, health=health)
        entry = None if health else self.journal.record(request, fault=fault.kind if fault else None)
        response: FakeResponse | None
        if fault is None or fault.kind in ("drip", "latency") or fault.kind in STREAM_KINDS:
            response = self._guarded(lambda: self.app.handle(request))
        else:
            if fault.apply:
                self._guarded(lambda: self.app.handle(request))
            response = self._fault_response(fault) if fault.kind == "status" else None
        if entry is not None:
            self.journal.stamp(entry, response.status if response is not None else None)
        return Outcome(response, fault, entry)

    def reset(self) -> None:
        """Clear the fake's state, the journal and the faults."""
        self.app.reset()
        self.journal.clear()
        self.faults.clear()

    def _fault_response(self, fault: Fault) -> FakeResponse:
        response = self._fault_answer(fault)
        if fault.status in BODYLESS_STATUSES:  # a body here would be a protocol error on the socket (h11 refuses it)
            response.body = b""
            response.headers = [
                (k, v) for k, v in response.headers if k.lower() not in ("content-length", "content-type")
            ]
        return response

    def _fault_answer(self, fault: Fault) -> FakeResponse:
        if fault.body is not None:
            base: list[tuple[str, str]] = []
            if not any(k.lower() == "content-type" for k, _ in fault.headers):
                json_like = fault.body[:1] in (b"{", b"[")
                base = [("content-type", "application/json" if json_like else "text/plain; charset=utf-8")]
            return FakeResponse(fault.status, base + list(fault.headers), fault.body)
        own: Callable[[int], FakeResponse] | None = getattr(self.app, "error_response", None)
        if own is not None:
            response = own(fault.status)
            overridden = {k.lower() for k, _ in fault.headers}  # the fault's headers win over the fake's defaults
            kept = [(k, v) for k, v in response.headers if k.lower() not in overridden]
            response.headers = kept + list(fault.headers)
            return response
        return FakeResponse.text(fault.status, f"injected fault: HTTP {fault.status}", list(fault.headers))

    def _guarded(self, call: Callable[[], FakeResponse]) -> FakeResponse:
        try:
            return call()
        except NonJsonValue as exc:  # the fake computed NaN/Infinity: say so rather than put invalid JSON on the wire
            log.error("fake %s: %s", self.app.name, exc)
            return FakeResponse.text(500, f"fake {self.app.name} refused to send invalid JSON: {exc}")
        except Exception as exc:  # a bug in the fake must reach the spec as a loud 500, not a dropped connection
            log.error("fake %s crashed: %s", self.app.name, traceback.format_exc())
            return FakeResponse.text(500, f"fake {self.app.name} crashed: {type(exc).__name__}: {exc}")
