"""The fake OpenAI API as a :class:`fakes.core.FakeApp`: routes, bearer auth, rules, capture, admin routes.

Routes: ``POST /v1/chat/completions`` (whole or ``stream: true``), ``POST /v1/responses`` (whole or streamed),
``POST /v1/embeddings``, ``GET /v1/models``, ``GET /v1/models/{model}``; ``GET /healthz`` (not an OpenAI route;
never journaled, never faulted: the readiness probe). Anything else under the fake answers the real API's 404
``Invalid URL (METHOD /path)`` and is recorded as ``unserved``.

Auth: every ``/v1/`` request needs ``Authorization: Bearer <key>`` (401 ``You didn't provide an API key`` without
one). With ``api_keys`` configured a key outside them is a 401 ``invalid_api_key`` echoing the key masked; with
``api_keys=None`` any non-empty key is accepted.

Every answer carries ``x-request-id: req_...`` (the ``openai`` client exposes it as ``_request_id``),
``openai-processing-ms`` and ``openai-version: 2020-10-01``, as the real API's do.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from openai.types import Model

from fakes.core import BadJson, FakeRequest, FakeResponse, StreamChunk
from fakes.openai import embeddings, errors, ids, quirks, render_chat, validate
from fakes.openai.answer import Answer, plan
from fakes.openai.capture import CallLog, ModelCall
from fakes.openai.catalog import Catalog
from fakes.openai.errors import ApiError
from fakes.openai.render_responses import ResponseRender
from fakes.openai.rules import Reply, Rule, RuleBook, RuleSpecError, Script
from fakes.openai.turn import Message, Turn
from fakes.openai.wire import KEEPALIVE, checked, sse

HEALTH_PATH = "/healthz"
ADMIN_PREFIX = "/_fake/openai/"
API_VERSION = "2020-10-01"
MAX_CALLS = 1_000
"""Calls kept by the capture (the newest); with :data:`MAX_CAPTURED_BODY` this bounds a long-running fake's memory."""
MAX_CAPTURED_BODY = 256 * 1024
"""Bytes of request body above which a call keeps its parsed ``body`` only in the journal (``ModelCall.body`` is
``None``; the flattened tools, ``tool_choice`` and messages are kept)."""
MAX_STORED_RESPONSES = 1_000


class OpenAIFake:
    """The fake model endpoint: thread-safe state (rules, capture, stored responses) and the wire in :meth:`handle`.

    ``api_keys``: accepted bearer keys (``None``: any non-empty key). ``rules``: a :class:`Script`, a list of rules or
    ``{"rules", "default"}`` (see :mod:`fakes.openai.rules`); :meth:`reset` returns to them. ``models`` /
    ``embedding_models`` (name to dimension) extend the served catalog. ``clock`` gives epoch seconds for
    ``created``. Raises :class:`~fakes.openai.rules.RuleSpecError` for bad rules, ``ValueError`` for a bad key list.
    """

    name = "openai"
    unrecorded_paths = frozenset({HEALTH_PATH})

    def __init__(
        self,
        *,
        api_keys: Iterable[str] | None = None,
        rules: Script | list[Any] | dict[str, Any] | None = None,
        models: Iterable[str] = (),
        embedding_models: dict[str, int] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if api_keys is not None:
            api_keys = frozenset(api_keys)
            if not api_keys or not all(isinstance(k, str) and k.strip() for k in api_keys):
                raise ValueError(f"api_keys must be non-empty strings (or None for any key), got {sorted(api_keys)!r}")
        self.api_keys: frozenset[str] | None = api_keys
        self.catalog = Catalog(tuple(models), embedding_models)
        script = rules if isinstance(rules, Script) else Script.from_spec(rules if rules is not None else [])
        self._initial = {"rules": [r.to_spec() for r in script.rules], "default": script.default.to_spec()}
        self.rules = RuleBook(Script.from_spec(self._initial))
        self.fingerprint = ids.fingerprint()
        self._clock = clock
        self._lock = threading.Lock()
        self._calls: collections.deque[ModelCall] = collections.deque(maxlen=MAX_CALLS)
        self._seq = 0
        self._stored: collections.OrderedDict[str, tuple[Message, ...]] = collections.OrderedDict()

    # -- the Python side: rules and capture ---------------------------------------------------------------------

    def add_rules(self, *rules: Rule | dict[str, Any]) -> list[Rule]:
        """Append rules (checked first; a bad one raises ``RuleSpecError`` and adds none)."""
        return self.rules.add(*rules)

    def set_rules(self, rules: Script | list[Any] | dict[str, Any]) -> None:
        """Replace every rule; the default too when ``rules`` is a :class:`Script` or ``{"rules", "default"}`` with a
        ``default`` (otherwise the current default stays)."""
        script = rules if isinstance(rules, Script) else Script.from_spec(rules)
        if not isinstance(rules, Script) and not (isinstance(rules, dict) and rules.get("default") is not None):
            script.default = Reply.from_spec(self.rules.to_spec()["default"], "default")
        self.rules.replace(script)

    def set_default(self, reply: Reply | dict[str, Any]) -> None:
        """The reply when no rule matches (e.g. ``{"text": "ok"}``)."""
        self.rules.set_default(reply)

    def log(self) -> CallLog:
        """Every ``/v1/`` request so far and its answer, oldest first (the newest :data:`MAX_CALLS` kept; the raw
        requests stay in the shared journal, the newest 10,000)."""
        with self._lock:
            return CallLog(list(self._calls))

    def reset(self) -> None:
        """Back to the rules the fake started with; capture and stored responses forgotten."""
        self.rules.replace(Script.from_spec(self._initial))
        with self._lock:
            self._calls.clear()
            self._stored.clear()

    def error_response(self, status: int) -> FakeResponse:
        """The body a ``status`` fault sends: the real API's error shape for that status."""
        return errors.for_status(status).response()

    # -- the wire ---------------------------------------------------------------------------------------------------

    def handle(self, request: FakeRequest) -> FakeResponse:
        if request.path == HEALTH_PATH:
            return FakeResponse.text(200, "ok")
        started, request_id = time.monotonic(), ids.request_id()
        method, path = request.method.upper(), request.path
        endpoint = _endpoint(method, path)
        body: Any = None
        turn: Turn | None = None
        try:
            self._authenticate(request)
            if endpoint == "unserved":
                raise errors.invalid_url(method, path)
            if method == "POST":
                body = _json(request)
            response, turn, answer = self._answer(endpoint, path, body)
        except ApiError as exc:
            response, answer = exc.response(), {"error": exc.body()["error"]}
        headers = [
            ("x-request-id", request_id),
            ("openai-version", API_VERSION),
            ("openai-processing-ms", str(int((time.monotonic() - started) * 1000))),
        ]
        response.headers.extend(headers)
        kept = body if len(request.body) <= MAX_CAPTURED_BODY else None
        self._record(method, path, endpoint, response.status, request_id, kept, turn, answer)
        return response

    def _authenticate(self, request: FakeRequest) -> None:
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            raise errors.missing_key()
        if self.api_keys is not None and key not in self.api_keys:
            raise errors.wrong_key(key)

    def _answer(self, endpoint: str, path: str, body: Any) -> tuple[FakeResponse, Turn | None, dict[str, Any]]:
        if endpoint == "models":
            return self._models(path), None, {}
        if endpoint == "embeddings":
            return FakeResponse.json(200, embeddings.create(body, self.catalog)), None, {}
        if endpoint == "chat":
            turn = validate.chat_turn(body, self.catalog)
        else:
            turn = validate.responses_turn(body, self.catalog, self._history)
        rule, reply = self.rules.choose(turn)
        if reply.error is not None and not (reply.error.in_stream and turn.stream):
            exc = reply.error.api_error()
            return exc.response(), turn, {"rule": rule, "error": exc.body()["error"]}
        answer = plan(turn, reply)
        record = {"rule": rule, "emitted": answer.calls, "text": answer.text}
        if endpoint == "chat":
            response, record["answer_id"] = self._chat(turn, reply, answer)
        else:
            response, record["answer_id"] = self._responses(turn, reply, answer, body)
        return response, turn, record

    def _chat(self, turn: Turn, reply: Reply, answer: Answer) -> tuple[FakeResponse, str]:
        completion_id, created = ids.chat_completion_id(), int(self._clock())
        if not turn.stream:
            return FakeResponse.json(
                200, render_chat.completion(turn, answer, completion_id, created, self.fingerprint)
            ), completion_id
        if reply.error is not None:  # in_stream: text so far, then the error event, no [DONE]
            events = [
                sse(c)
                for c in render_chat.text_chunks(
                    turn, answer.text or "", reply, completion_id, created, self.fingerprint
                )
            ]
            events.append(sse(reply.error.api_error().body()))
        else:
            chunks = render_chat.chunks(turn, answer, reply, completion_id, created, self.fingerprint)
            events = quirks.frames(chunks, reply.quirks)
        return _stream(events, reply), completion_id

    def _responses(self, turn: Turn, reply: Reply, answer: Answer, body: dict[str, Any]) -> tuple[FakeResponse, str]:
        failing = turn.stream and reply.error is not None  # in_stream: the text's events, then an error event
        if failing:
            answer = dataclasses.replace(answer, text=answer.text or "", calls=())
        render = ResponseRender(turn, answer, int(self._clock()), body.get("tools") or [])
        self._store(
            render.id,
            turn.messages
            + (
                Message("assistant", answer.text or "", None, tuple((c.id, c.name, c.arguments) for c in answer.calls)),
            ),
        )
        if not turn.stream:
            return FakeResponse.json(200, render.response()), render.id
        events = render.events(reply)
        frames = [sse(e, e["type"]) for e in (events[:-1] if failing else events)]
        if failing:
            assert reply.error is not None
            error = reply.error.api_error()
            frames.append(sse(render.error_event(error.message, error.code, error.param, len(events) - 1), "error"))
        return _stream(frames, reply), render.id

    def _models(self, path: str) -> FakeResponse:
        listed = [
            {"id": m.id, "object": "model", "created": m.created, "owned_by": m.owned_by}
            for m in self.catalog.models.values()
        ]
        if path.rstrip("/") == "/v1/models":
            for item in listed:
                checked(Model, item)
            return FakeResponse.json(200, {"object": "list", "data": listed})
        name = path[len("/v1/models/") :]
        found = next((m for m in listed if m["id"] == name), None)
        if found is None:
            raise ApiError(404, f"The model '{name}' does not exist", param="model", code="model_not_found")
        return FakeResponse.json(200, checked(Model, found))

    def _history(self, response_id: str) -> tuple[Message, ...] | None:
        with self._lock:
            return self._stored.get(response_id)

    def _store(self, response_id: str, messages: tuple[Message, ...]) -> None:
        with self._lock:
            self._stored[response_id] = messages
            while len(self._stored) > MAX_STORED_RESPONSES:
                self._stored.popitem(last=False)

    def _record(
        self,
        method: str,
        path: str,
        endpoint: str,
        status: int,
        request_id: str,
        body: Any,
        turn: Turn | None,
        answer: dict[str, Any],
    ) -> None:
        with self._lock:
            self._seq += 1
            self._calls.append(
                ModelCall.of(self._seq, time.time(), method, path, endpoint, status, request_id, body, turn, **answer)
            )

    # -- admin routes under /_fake/openai/ ----------------------------------------------------------------------

    def admin(self, request: FakeRequest) -> FakeResponse | None:
        """``GET|POST|PUT|DELETE /_fake/openai/rules``, ``PUT|POST /_fake/openai/default``, ``GET
        /_fake/openai/calls``; ``None`` for anything else (the machinery's 404)."""
        if not request.path.startswith(ADMIN_PREFIX):
            return None
        route, method = request.path[len(ADMIN_PREFIX) :].strip("/"), request.method.upper()
        try:
            if route == "calls" and method == "GET":
                return FakeResponse.json(200, {"calls": [c.to_dict() for c in self.log()]})
            if route == "rules" and method == "GET":
                return FakeResponse.json(200, self.rules.to_spec())
            if route == "rules" and method == "DELETE":
                self.rules.clear()
                return FakeResponse.json(200, self.rules.to_spec())
            if route == "rules" and method in ("POST", "PUT"):
                spec = _admin_json(request)
                if method == "PUT":
                    self.set_rules(spec)
                    return FakeResponse.json(200, self.rules.to_spec())
                added = self.add_rules(*(spec if isinstance(spec, list) else [spec]))
                return FakeResponse.json(201, {"added": [r.to_spec() for r in added]})
            if route == "default" and method in ("POST", "PUT"):
                self.set_default(_admin_json(request))
                return FakeResponse.json(200, self.rules.to_spec())
        except RuleSpecError as exc:
            return FakeResponse.json(400, {"error": str(exc)})
        return None


def _endpoint(method: str, path: str) -> str:
    if method == "POST" and path == "/v1/chat/completions":
        return "chat"
    if method == "POST" and path == "/v1/responses":
        return "responses"
    if method == "POST" and path == "/v1/embeddings":
        return "embeddings"
    if method == "GET" and (
        path.rstrip("/") == "/v1/models"
        or path.startswith("/v1/models/")
        and path.count("/") == 3
        and len(path) > len("/v1/models/")
    ):
        return "models"
    return "unserved"


def _json(request: FakeRequest) -> Any:
    try:
        return request.json()
    except BadJson:
        raise errors.unparseable_body() from None


def _admin_json(request: FakeRequest) -> Any:
    try:
        return request.json()
    except BadJson as exc:
        raise RuleSpecError(f"{request.method} {request.path}: body is not JSON ({exc.detail})") from None


def _stream(frames: list[bytes], reply: Reply) -> FakeResponse:
    """Frames as paced chunks: the first at once, each later one ``reply.pace`` seconds after the previous; with
    ``keepalive`` an SSE comment goes out in each pause, just before the frame it precedes."""
    chunks: list[StreamChunk] = []
    for i, frame in enumerate(frames):
        delay = reply.pace if i else 0.0
        if reply.keepalive:
            chunks += [StreamChunk(KEEPALIVE, delay), StreamChunk(frame)]
        else:
            chunks.append(StreamChunk(frame, delay))
    return FakeResponse.streamed(200, chunks, "text/event-stream; charset=utf-8")
