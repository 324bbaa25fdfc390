"""The webhook sender: serialise once, sign those bytes, send those bytes, record the delivery.

Like GitHub it waits at most 10 s for an answer, marks slower or non-2xx answers failed and never retries on its own;
:func:`redeliver` resends a recorded delivery with the same ``X-GitHub-Delivery`` GUID, as GitHub's manual redelivery
does. GitHub delivers nothing for a payload over 25 MB; neither does this sender (``ValueError``). Faults a receiver
must survive: ``duplicate=True`` (the same delivery twice), :func:`send_reordered` (a batch in reverse order),
``content_type="form"`` (``payload=<urlencoded json>``, signed as sent) and ``hostile=True`` (``\\/`` escapes and odd
whitespace, so a receiver that verifies a re-serialised copy fails). GitHub does not guarantee the order of
deliveries, which is why the reordering fault exists.

A failed delivery (no answer, or not a 2xx) raises :class:`DeliveryFailed` with the recorded :class:`Delivery`
attached, unless the caller passes ``check=False`` to get the delivery back instead: a spec cannot "send" without
noticing that nothing arrived. Deliveries go straight to the receiver whatever ``HTTP_PROXY``, ``HTTPS_PROXY``,
``ALL_PROXY`` or ``NO_PROXY`` say: receivers are on loopback or inside the cluster, never behind a proxy.

Why bytes matter: httpx 0.28 re-serialises ``json=`` bodies as compact UTF-8, so signing ``json.dumps(p)`` and sending
``json=p`` puts different bytes on the wire than were signed. Here the body is built once and sent with ``content=``.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx

from fakes.github.signing import sign_sha1, sign_sha256
from fakes.server import default_tls

DELIVERY_TIMEOUT = 10.0  # seconds GitHub waits for a receiver (GHES: 30 s); slower answers are failed deliveries
#: GitHub's cap on a webhook payload: "Payloads are capped at 25 MB" (GitHub docs, "Webhook events and payloads"); it
#: delivers nothing for a larger one. The docs do not say which megabyte: the sender takes the larger reading, 25 MiB,
#: so it never refuses a payload GitHub would deliver. Measured on the serialised JSON, before form encoding.
MAX_PAYLOAD_BYTES = 25 * 1024 * 1024
MAX_RECORDED = 1000  # deliveries a log keeps (oldest dropped first), so a long-running fake stays bounded
_HOOKSHOT = "GitHub-Hookshot/" + secrets.token_hex(4)[:7]


@dataclass
class Delivery:
    """One delivery attempt: what was sent (exact bytes and headers) and how the receiver answered.

    ``status`` is the HTTP status or ``None`` when no answer came (``error`` says why: timeout, refused, reset);
    ``duration`` is seconds from send to the end of the answer (or the failure); ``redelivery`` marks a manual resend
    (:func:`redeliver`), ``duplicate`` the second copy of a ``duplicate=True`` send.
    """

    id: str
    event: str
    action: str | None
    url: str
    headers: dict[str, str]
    body: bytes
    status: int | None = None
    error: str | None = None
    duration: float | None = None
    delivered_at: float | None = None
    redelivery: bool = False
    duplicate: bool = False
    response_body: bytes = b""

    @property
    def ok(self) -> bool:
        """GitHub's notion of success: a 2xx answer within the timeout."""
        return self.status is not None and 200 <= self.status < 300

    def summary(self) -> dict[str, Any]:
        """A JSON-safe view for the admin API and failure messages."""
        return {
            "id": self.id,
            "event": self.event,
            "action": self.action,
            "url": self.url,
            "status": self.status,
            "error": self.error,
            "duration": self.duration,
            "delivered_at": self.delivered_at,
            "redelivery": self.redelivery,
            "duplicate": self.duplicate,
            "ok": self.ok,
        }


class DeliveryLog:
    """Thread-safe record of deliveries in send order; ``by_id`` gives the first attempt of a GUID."""

    def __init__(self, max_recorded: int = MAX_RECORDED) -> None:
        self._lock = threading.Lock()
        self._items: list[Delivery] = []
        self._max = max_recorded

    def add(self, delivery: Delivery) -> None:
        with self._lock:
            self._items.append(delivery)
            del self._items[: max(0, len(self._items) - self._max)]

    def all(self) -> list[Delivery]:
        with self._lock:
            return list(self._items)

    def by_id(self, delivery_id: str) -> Delivery | None:
        with self._lock:
            return next((d for d in self._items if d.id == delivery_id), None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


DEFAULT_LOG = DeliveryLog()


class DeliveryFailed(Exception):
    """A webhook delivery failed as GitHub counts it: no complete answer within the timeout, or not a 2xx.

    ``delivery`` is the recorded :class:`Delivery` (its ``status``, ``error``, ``headers``, ``body`` and
    ``response_body``). Raised by :func:`send_webhook`, :func:`redeliver` and :func:`send_reordered` unless the caller
    passes ``check=False``.
    """

    def __init__(self, delivery: Delivery) -> None:
        answer = f"HTTP {delivery.status}" if delivery.status is not None else "no answer"
        excerpt = delivery.response_body[:200].decode("utf-8", "replace")
        why = delivery.error or (
            f"the receiver answered {answer}: {excerpt!r}" if excerpt else f"the receiver answered {answer}"
        )
        kind = f"{delivery.event}.{delivery.action}" if delivery.action else delivery.event
        super().__init__(
            f"webhook delivery {delivery.id} ({kind}) to {delivery.url} failed: {why}; pass check=False "
            "to get the Delivery back instead of this error"
        )
        self.delivery = delivery


def serialise(payload: Any, *, hostile: bool = False) -> bytes:
    """The body bytes: compact UTF-8 JSON like GitHub's; ``hostile`` adds ``\\/`` escapes and extra whitespace."""
    try:
        if not hostile:
            return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
        text = json.dumps(payload, separators=(" ,", ":  "), ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # Python would otherwise write NaN/Infinity, which no JSON parser accepts
        raise ValueError(f"webhook payload is not valid JSON: it contains NaN or Infinity ({exc})") from None
    return (text.replace("/", "\\/") + "\n").encode("utf-8")


def check_timeout(timeout: float) -> float:
    """``timeout`` as a positive finite float; ``ValueError`` otherwise (a caller's mistake, not a slow receiver)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
        raise ValueError(f"webhook delivery timeout must be a positive finite number of seconds, got {timeout!r}")
    return float(timeout)


def build_request(
    event: str,
    payload: Any,
    *,
    secret: str | bytes | None,
    delivery_id: str | None = None,
    hook_id: int = 1,
    target_type: str = "repository",
    target_id: int | None = None,
    content_type: str = "json",
    hostile: bool = False,
) -> tuple[str, dict[str, str], bytes]:
    """Serialise and sign once: ``(delivery_id, headers, body)`` ready to send as-is.

    ``payload`` is a JSON-able object, or ``bytes`` already serialised (sent exactly as given, e.g. the docs' test
    vector body ``Hello, World!``). Raises ``ValueError`` for an unknown ``content_type`` and for a payload over
    GitHub's cap (:data:`MAX_PAYLOAD_BYTES`), which GitHub would never deliver.
    """
    if content_type not in ("json", "form"):
        raise ValueError(f"webhook content_type must be 'json' or 'form', not {content_type!r}")
    delivery_id = delivery_id or str(uuid.uuid4())
    text = bytes(payload) if isinstance(payload, (bytes, bytearray)) else serialise(payload, hostile=hostile)
    if len(text) > MAX_PAYLOAD_BYTES:
        raise ValueError(
            f"webhook payload is {len(text)} bytes, over GitHub's 25 MB cap ({MAX_PAYLOAD_BYTES} bytes): "
            "GitHub delivers nothing for such an event, so the fake sends nothing either"
        )
    if content_type == "form":
        body = urlencode({"payload": text.decode("utf-8")}).encode("ascii")
        mime = "application/x-www-form-urlencoded"
    else:
        body, mime = text, "application/json"
    if target_id is None:
        target_id = int(((payload.get("repository") or {}) if isinstance(payload, dict) else {}).get("id") or 0)
    headers = {
        "Accept": "*/*",
        "Content-Type": mime,
        "User-Agent": _HOOKSHOT,
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-GitHub-Hook-ID": str(hook_id),
        "X-GitHub-Hook-Installation-Target-Type": target_type,
        "X-GitHub-Hook-Installation-Target-ID": str(target_id),
    }
    if secret is not None:
        headers["X-Hub-Signature"] = sign_sha1(secret, body)
        headers["X-Hub-Signature-256"] = sign_sha256(secret, body)
    return delivery_id, headers, body


def _post(delivery: Delivery, *, timeout: float, transport: httpx.AsyncBaseTransport | None) -> Delivery:
    """One attempt under one total deadline of ``timeout`` seconds (connect, send and the whole answer).

    httpx's own timeouts are per phase and per read, so a dripping receiver would stretch them without end
    (a slow-loris answer); ``anyio.fail_after`` around the whole exchange does not. Runs a private event loop, so call
    it from synchronous code (from async code: ``await anyio.to_thread.run_sync(...)``).
    """
    started = time.monotonic()
    delivery.delivered_at = time.time()

    async def exchange() -> None:
        # trust_env=False: receivers are on loopback or in the cluster, never behind HTTP_PROXY and friends.
        async with httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            trust_env=False,
            verify=default_tls(),
        ) as c:
            with anyio.fail_after(timeout):
                response = await c.post(delivery.url, content=delivery.body, headers=delivery.headers)
            delivery.status, delivery.response_body = response.status_code, response.content[:4096]

    try:
        anyio.run(exchange)
    except TimeoutError:
        delivery.error = f"timed out: no complete answer within the {timeout:g} s delivery deadline"
    except httpx.TimeoutException as exc:
        delivery.error = f"timed out: no complete answer within {timeout:g} s ({type(exc).__name__})"
    except httpx.HTTPError as exc:
        delivery.error = f"{type(exc).__name__}: {exc}"
    delivery.duration = time.monotonic() - started
    return delivery


def send_webhook(
    url: str,
    event: str,
    payload: Any,
    *,
    secret: str | bytes | None,
    delivery_id: str | None = None,
    hook_id: int = 1,
    target_type: str = "repository",
    target_id: int | None = None,
    content_type: str = "json",
    hostile: bool = False,
    duplicate: bool = False,
    timeout: float = DELIVERY_TIMEOUT,
    transport: httpx.AsyncBaseTransport | None = None,
    log: DeliveryLog | None = None,
    check: bool = True,
) -> Delivery:
    """Deliver ``payload`` as GitHub would and return the recorded :class:`Delivery`.

    ``secret`` None sends no signature headers (GitHub omits them when a hook has no secret). ``duplicate`` sends the
    identical request a second time (same GUID, same bytes) right after the first; both attempts are recorded and the
    first is returned. ``timeout`` is the total wait in seconds; there is no retry.

    Raises :class:`DeliveryFailed` (the failed delivery attached, after it is recorded) when an attempt got no complete
    answer in time or a non-2xx one; with ``check=False`` the delivery is returned instead, ``ok`` False. Raises
    ``ValueError`` before anything is sent for an unknown ``content_type``, a payload holding NaN or Infinity (not
    JSON), a payload over GitHub's 25 MB cap and a ``timeout`` that is not a positive finite number.
    """
    timeout = check_timeout(timeout)
    delivery_id, headers, body = build_request(
        event,
        payload,
        secret=secret,
        delivery_id=delivery_id,
        hook_id=hook_id,
        target_type=target_type,
        target_id=target_id,
        content_type=content_type,
        hostile=hostile,
    )
    action = payload.get("action") if isinstance(payload, dict) else None
    log = log if log is not None else DEFAULT_LOG
    attempts = []
    for attempt in range(2 if duplicate else 1):
        delivery = Delivery(delivery_id, event, action, url, dict(headers), body, duplicate=attempt > 0)
        _post(delivery, timeout=timeout, transport=transport)
        log.add(delivery)
        attempts.append(delivery)
    failed = next((d for d in attempts if not d.ok), None)
    if check and failed is not None:
        raise DeliveryFailed(failed)
    return attempts[0]


def redeliver(
    delivery_id: str,
    *,
    timeout: float = DELIVERY_TIMEOUT,
    transport: httpx.AsyncBaseTransport | None = None,
    log: DeliveryLog | None = None,
    check: bool = True,
) -> Delivery:
    """Resend a recorded delivery: same GUID, same headers, same bytes (GitHub's manual redelivery).

    Raises ``KeyError`` naming the GUID when ``log`` (default: the module's log) holds no such delivery, ``ValueError``
    for a ``timeout`` that is not a positive finite number, and :class:`DeliveryFailed` when the resend fails (unless
    ``check=False``).
    """
    timeout = check_timeout(timeout)
    log = log if log is not None else DEFAULT_LOG
    original = log.by_id(delivery_id)
    if original is None:
        raise KeyError(f"no recorded webhook delivery {delivery_id!r} to redeliver (log holds {len(log.all())})")
    delivery = Delivery(
        original.id,
        original.event,
        original.action,
        original.url,
        dict(original.headers),
        original.body,
        redelivery=True,
    )
    _post(delivery, timeout=timeout, transport=transport)
    log.add(delivery)
    if check and not delivery.ok:
        raise DeliveryFailed(delivery)
    return delivery


def send_reordered(
    url: str,
    events: list[tuple[str, Any]],
    *,
    secret: str | bytes | None,
    timeout: float = DELIVERY_TIMEOUT,
    transport: httpx.AsyncBaseTransport | None = None,
    log: DeliveryLog | None = None,
    check: bool = True,
    **options: Any,
) -> list[Delivery]:
    """The "reordered deliveries" fault: GUIDs are assigned in the given order, then sent last-first.

    Returns the deliveries in the order given (not the order sent). Every delivery is attempted; then, unless
    ``check=False``, the first failed one (in sending order) raises :class:`DeliveryFailed`.
    """
    prepared = [(event, payload, str(uuid.uuid4())) for event, payload in events]
    sent: dict[str, Delivery] = OrderedDict()
    for event, payload, guid in reversed(prepared):
        sent[guid] = send_webhook(
            url,
            event,
            payload,
            secret=secret,
            delivery_id=guid,
            timeout=timeout,
            transport=transport,
            log=log,
            check=False,
            **options,
        )
    failed = next((d for d in sent.values() if not d.ok), None)
    if check and failed is not None:
        raise DeliveryFailed(failed)
    return [sent[guid] for _, _, guid in prepared]


class Dispatcher:
    """A single background worker that sends deliveries caused by API calls, so ``handle()`` never waits on a receiver.

    Started on first use; :meth:`close` stops it within its timeout. Jobs are plain callables.
    """

    def __init__(self, name: str = "fake-github-webhooks") -> None:
        self.name = name
        self._jobs: list[Callable[[], None]] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._busy = False

    def submit(self, job: Callable[[], None]) -> None:
        with self._cond:
            if self._closing:
                return
            self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._closing:
                    self._cond.wait()
                if self._closing:
                    return
                job = self._jobs.pop(0)
                self._busy = True
            try:
                job()
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until every submitted delivery has been attempted; True if so."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._jobs or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def clear(self) -> None:
        """Drop deliveries not yet sent (a reset)."""
        with self._cond:
            self._jobs.clear()

    def close(self, timeout: float = DELIVERY_TIMEOUT + 2.0) -> None:
        """Stop the worker: pending deliveries are dropped, one in flight may finish (bounded by its own timeout)."""
        with self._cond:
            self._closing = True
            self._jobs.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                raise RuntimeError(f"{self.name}: webhook worker still busy {timeout:.0f} s after close()")
        with self._cond:
            self._thread = None
            self._closing = False
