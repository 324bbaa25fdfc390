"""The orchestrator's programmatic entry point: ``POST /invoke``, then poll ``GET /invoke/<id>`` until it settles.

The contract is accept-then-poll (``specs/cluster/README.md`` §1): ``POST /invoke`` with ``Authorization: Bearer
<token>`` and a JSON body ``{"request": "<non-empty text>"[, "session_id", "tools", "tool_choice"]}`` answers **202**
``{"id": ..., "status": "pending"}`` (a body it rejects is a 400 ``{"error": ...}`` and never becomes an
invocation); ``GET /invoke/<id>`` answers 200 with the record ``{"id", "status": "pending" | "succeeded" |
"failed", "result"?, "error"?, "pendingToolCalls"?: [{"id", "name", "arguments"}], ...}`` and 404 (empty body) for an
id it does not hold. Records live in the serving process's memory, so an orchestrator restart turns a known id into a
404 for good (failure mode 33 in specs/cluster/README.md). An ``/invoke`` turn carries no user identity: it runs
as the shared subject of the bearer (``client-integration-gateway`` in e2e).

:class:`InvokeClient` sends everything through :func:`harness.fetch.fetch_through_sync` (one total deadline per
exchange; a port-forward's death or a stalled service is named as the hop that failed) and polls with
:func:`harness.wait_for_sync` (every 2 s up to 180 s by default, the upstream values: §6), so a poll that hangs is
bounded and counted. Sync API: call it from sync code, not from inside a running event loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from harness.errors import PortForwardBroken, PortForwardGone, StopWaiting, WaitTimeout
from harness.fetch import Forward, fetch_through_sync
from harness.waiting import wait_for_sync
from specs.agent_controller.errors import InvocationNotFound as InvocationNotFound
from specs.agent_controller.errors import InvokeError as InvokeError
from specs.agent_controller.errors import InvokeProtocolError as InvokeProtocolError
from specs.agent_controller.errors import InvokeRejected as InvokeRejected
from specs.agent_controller.errors import InvokeTimeout as InvokeTimeout

E2E_BEARER = "e2e-gateway-token"
"""The e2e orchestrator's static bearer (mapped to the shared subject ``client-integration-gateway``)."""
POLL_INTERVAL = 2.0
POLL_BUDGET = 180.0
REQUEST_TIMEOUT = 20.0
PROBE_GRACE = 1.0
"""Seconds a poll attempt outlives its request's own timeout, so the request's hop error (which names the hop)
ends the attempt rather than the attempt's bound (which can only say "hung")."""
STATUSES = ("pending", "succeeded", "failed")
Status = Literal["pending", "succeeded", "failed"]
_UNSET: Any = object()


@dataclass(frozen=True)
class PendingToolCall:
    """A tool call the turn wants the caller to run: ``id``, ``name``, ``arguments`` (JSON text, as on the wire)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Invocation:
    """One ``GET /invoke/<id>`` record: ``id``, ``status``, ``result`` (``None`` when absent; see ``has_result``),
    ``error``, ``pending_tool_calls`` and the whole ``raw`` JSON object."""

    id: str
    status: Status
    result: Any = None
    has_result: bool = False
    error: str | None = None
    pending_tool_calls: tuple[PendingToolCall, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Any) -> Invocation:
        """Read a record; raises :class:`InvokeProtocolError` naming the field that breaks the contract."""
        if not isinstance(body, dict):
            raise InvokeProtocolError(f"GET /invoke answered a JSON {type(body).__name__}, not a record object")
        status = body.get("status")
        if status not in STATUSES:
            raise InvokeProtocolError(
                f"GET /invoke answered status {status!r}; the contract allows {', '.join(STATUSES)}"
            )
        error = body.get("error")
        return cls(
            id=str(body.get("id", "")),
            status=status,
            result=body.get("result"),
            has_result="result" in body,
            error=error if isinstance(error, str) else None,
            pending_tool_calls=_tool_calls(body),
            raw=body,
        )

    def describe(self) -> str:
        """One line for messages: status and which fields the record carries (never their values)."""
        extras = sorted(k for k in self.raw if k not in ("id", "status"))
        return f"status {self.status}" + (f", fields {', '.join(extras)}" if extras else "")


class InvokeClient:
    """``/invoke`` through ``target`` (a :class:`harness.PortForward` to ``agent-orchestrator-invoke:8081`` or a base
    URL), authenticated with ``bearer``; ``timeout`` is seconds per HTTP exchange."""

    def __init__(self, target: Forward | str, *, bearer: str = E2E_BEARER, timeout: float = REQUEST_TIMEOUT) -> None:
        self.target = target
        self.bearer = bearer
        self.timeout = timeout

    def post(self, body: Any) -> httpx.Response:
        """``POST /invoke`` with ``body`` serialised as JSON, whatever the answer (for specs asserting a rejection,
        e.g. a 400 for an invalid tool name). Raises only the hop failures of ``fetch_through``."""
        return fetch_through_sync(
            self.target,
            "POST",
            "/invoke",
            timeout=self.timeout,
            headers=self._headers(),
            content=json.dumps(body).encode(),
        )

    def submit(
        self,
        request: str,
        *,
        tools: list[Any] | None = None,
        tool_choice: Any = _UNSET,
        session_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """Start a turn; returns its id. Raises :class:`InvokeRejected` unless the answer is 202 with an id."""
        body: dict[str, Any] = {"request": request, **(extra or {})}
        if session_id is not None:
            body["session_id"] = session_id
        if tools is not None:
            body["tools"] = tools
        if tool_choice is not _UNSET:
            body["tool_choice"] = tool_choice
        response = self.post(body)
        if response.status_code != 202:
            raise InvokeRejected(
                f"POST /invoke via {self._where()} answered HTTP {response.status_code}, not 202 "
                f"(a rejected body never becomes an invocation): {response.text[:300]!r}",
                status=response.status_code,
                body=response.text[:2000],
            )
        parsed = _json(response)
        invocation_id = parsed.get("id") if isinstance(parsed, dict) else None
        if not isinstance(invocation_id, str) or not invocation_id:
            raise InvokeRejected(
                f"POST /invoke via {self._where()} answered 202 without an id: {response.text[:300]!r}",
                status=202,
                body=response.text[:2000],
            )
        return invocation_id

    def fetch(self, invocation_id: str) -> Invocation:
        """One ``GET /invoke/<id>``. Raises :class:`InvocationNotFound` on 404, :class:`InvokeError` on any other
        status or a body that is not a record."""
        response = fetch_through_sync(
            self.target, "GET", f"/invoke/{invocation_id}", timeout=self.timeout, headers=self._headers()
        )
        if response.status_code == 404:
            raise InvocationNotFound(
                f"GET /invoke/{invocation_id} via {self._where()} answered 404: the orchestrator "
                "does not hold this id (records live in its memory: restarted since, or "
                "another replica answered)"
            )
        if response.status_code != 200:
            raise InvokeError(
                f"GET /invoke/{invocation_id} via {self._where()} answered HTTP "
                f"{response.status_code}: {response.text[:300]!r}"
            )
        return Invocation.from_json(_json(response))

    def wait(
        self,
        invocation_id: str,
        *,
        timeout: float = POLL_BUDGET,
        interval: float = POLL_INTERVAL,
        probe_timeout: float | None = None,
    ) -> Invocation:
        """Poll until the invocation is ``succeeded`` or ``failed`` and return that record (a ``failed`` one is a
        result to assert on, not an exception). Every ``interval`` seconds, up to ``timeout``; each poll is bounded
        by ``probe_timeout`` (default: the per-exchange timeout plus :data:`PROBE_GRACE`).

        A 404, an error status, a body that is not JSON or a service hop failure is a failed attempt (polling goes
        on; the last one is in the message); a record that breaks the contract (:class:`InvokeProtocolError`) or a
        port-forward that is gone or broken (:class:`harness.PortForwardGone`, :class:`harness.PortForwardBroken`: it
        will not come back) ends the wait at once with
        :class:`harness.StopWaiting`, the cause chained. Raises :class:`InvokeTimeout` (a ``WaitTimeout``) with the last
        record seen when the budget runs out.
        """
        seen: list[Invocation] = []

        def probe() -> Invocation | None:
            try:
                record = self.fetch(invocation_id)
            except (PortForwardGone, PortForwardBroken, InvokeProtocolError) as exc:
                raise StopWaiting(f"polling /invoke/{invocation_id} cannot go on: {exc}") from exc
            seen.append(record)
            return None if record.status == "pending" else record

        describe = f"/invoke/{invocation_id} via {self._where()} to settle (succeeded or failed)"
        try:
            result: Invocation = wait_for_sync(
                describe,
                probe,
                timeout=timeout,
                interval=interval,
                probe_timeout=probe_timeout or self.timeout + PROBE_GRACE,
            )
        except WaitTimeout as exc:
            last = seen[-1] if seen else None
            note = f"\n  last record: {last.describe()}" if last else "\n  no record was read"
            raise InvokeTimeout(f"{exc}{note}", exc.summary, last) from exc
        return result

    def turn(
        self, request: str, *, timeout: float = POLL_BUDGET, interval: float = POLL_INTERVAL, **submit: Any
    ) -> Invocation:
        """:meth:`submit` then :meth:`wait`: one whole turn; returns the settled record."""
        return self.wait(self.submit(request, **submit), timeout=timeout, interval=interval)

    def _headers(self) -> dict[str, str]:
        return {"content-type": "application/json", "authorization": f"Bearer {self.bearer}"}

    def _where(self) -> str:
        return self.target if isinstance(self.target, str) else self.target.target


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise InvokeError(
            f"{response.request.method} {response.request.url.path} answered HTTP "
            f"{response.status_code} with a body that is not JSON: {response.text[:300]!r}"
        ) from None


def _tool_calls(body: dict[str, Any]) -> tuple[PendingToolCall, ...]:
    calls = body.get("pendingToolCalls")
    if calls is None:
        return ()
    if not isinstance(calls, list):
        raise InvokeProtocolError(f"GET /invoke answered pendingToolCalls as a {type(calls).__name__}, not a list")
    out = []
    for index, call in enumerate(calls):
        if not isinstance(call, dict) or not all(isinstance(call.get(k), str) for k in ("id", "name", "arguments")):
            raise InvokeProtocolError(
                f"pendingToolCalls[{index}] is not {{id, name, arguments}} strings: {call!r:.200}"
            )
        out.append(PendingToolCall(call["id"], call["name"], call["arguments"]))
    return tuple(out)
