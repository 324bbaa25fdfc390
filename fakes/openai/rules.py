"""Scripting the fake model: rules choose each answer from the request; a default rule answers the rest.

A rule is ``{"name", "when", "reply", "times"?, "ignore_tool_choice"?}`` (JSON, so the same rules work from Python,
the admin API and a ``--rules`` file). The first rule whose ``when`` matches, and whose reply the request's
``tool_choice`` allows, answers; ``times`` (default: unlimited) spends it.

``when`` (every key given must hold; text matchers are a string (substring), or ``{"contains"|"regex"|"equals": s}``):

- ``endpoint``: ``"chat"`` or ``"responses"``; ``model``: text matcher; ``stream``: true/false;
- ``last_user``, ``system`` (system + developer messages + Responses ``instructions``), ``last_tool_result``: text
  matchers; ``last_role``: ``"user"``, ``"tool"``, ...;
- ``tools``: names that must all be advertised; ``no_tools``: true (nothing advertised) or false (something is);
- ``tool_choice``: ``"none"``, ``"auto"``, ``"required"`` (as it takes effect: absent means auto with tools, none
  without) or the name of the function it forces.

``reply`` (one of text, tool calls, error):

- ``{"text": "..."}``: ``{last_user}`` and ``{last_tool_result}`` in it are replaced by those texts;
- ``{"tool_calls": [{"name", "arguments": {...} | "raw string", "id"?}], "text"?}``: the call may name a tool that was
  not advertised (a spec can then check the stack refuses it); ``parallel_tool_calls: false`` keeps the first call;
- ``{"error": {"status", "message"?, "type"?, "param"?, "code"?, "headers"?, "in_stream"?}}``: an error answer (the
  body defaults to the real API's for that status); ``in_stream: true`` on a streamed request sends the reply's text
  chunks, then an ``error`` event, and ends without ``[DONE]``;
- stream shaping: ``pace`` (seconds between chunks), ``chunk_chars`` (text and arguments split into pieces of that
  many characters; default: text by words, arguments by 6 characters), ``keepalive`` (an SSE comment before every
  chunk: the real API does not send them, the stack's own chat facade may), ``finish_reason`` (``length``,
  ``content_filter``), ``quirks`` (a streamed chat answer in the shapes other OpenAI-compatible providers send, e.g.
  ``["no_index", "error_null"]``: :mod:`fakes.openai.quirks` lists them).

``tool_choice`` is honoured the way the model would: a tool-call reply is skipped under ``"none"`` or when another
function is forced, a text reply under ``"required"`` or a forced function (``ignore_tool_choice: true`` lifts this).
The default rule (settable) answers when no rule does: ``fake reply to: {last_user}``; when ``tool_choice`` demands
a call it calls the forced (or first callable) tool with ``{}``.

Raises :class:`RuleSpecError` (a ``ValueError``) naming the offending key for a malformed rule; nothing is changed then.
"""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakes.openai import errors
from fakes.openai.errors import ApiError
from fakes.openai.quirks import QUIRKS
from fakes.openai.turn import Turn

DEFAULT_TEXT = "fake reply to: {last_user}"
_WHEN_KEYS = {
    "endpoint",
    "model",
    "stream",
    "last_user",
    "system",
    "last_tool_result",
    "last_role",
    "tools",
    "no_tools",
    "tool_choice",
}
_REPLY_KEYS = {"text", "tool_calls", "error", "pace", "chunk_chars", "keepalive", "finish_reason", "quirks"}
_RULE_KEYS = {"name", "when", "reply", "times", "ignore_tool_choice"}
_ERROR_KEYS = {"status", "message", "type", "param", "code", "headers", "in_stream"}


class RuleSpecError(ValueError):
    """A rule (or reply) that cannot be used; the message names the key and what was wrong."""


def _need(condition: bool, message: str) -> None:
    if not condition:
        raise RuleSpecError(message)


def _unknown(spec: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(spec) - allowed)
    _need(not extra, f"{where}: unknown key(s) {extra}; allowed: {sorted(allowed)}")


@dataclass(frozen=True)
class TextMatch:
    """Substring (``contains``), regular expression (``regex``, searched) or exact (``equals``) match on a text."""

    contains: str | None = None
    regex: str | None = None
    equals: str | None = None

    def __call__(self, text: str) -> bool:
        if self.contains is not None:
            return self.contains in text
        if self.regex is not None:
            return re.search(self.regex, text) is not None
        return text == self.equals

    def to_spec(self) -> Any:
        if self.contains is not None:
            return self.contains
        return {"regex": self.regex} if self.regex is not None else {"equals": self.equals}

    @classmethod
    def from_spec(cls, spec: Any, where: str) -> TextMatch:
        if isinstance(spec, str):
            return cls(contains=spec)
        _need(
            isinstance(spec, dict)
            and len(spec) == 1
            and next(iter(spec)) in ("contains", "regex", "equals")
            and isinstance(next(iter(spec.values())), str),
            f"{where}: give a string (substring) or one of {{'contains'|'regex'|'equals': string}}, got {spec!r}",
        )
        if "regex" in spec:
            try:
                re.compile(spec["regex"])
            except re.error as exc:
                raise RuleSpecError(f"{where}: regex {spec['regex']!r} does not compile ({exc})") from None
        return cls(**spec)


@dataclass(frozen=True)
class When:
    """The conditions of a rule (see the module docstring); an empty ``When`` matches every request."""

    endpoint: str | None = None
    model: TextMatch | None = None
    stream: bool | None = None
    last_user: TextMatch | None = None
    system: TextMatch | None = None
    last_tool_result: TextMatch | None = None
    last_role: str | None = None
    tools: tuple[str, ...] = ()
    no_tools: bool | None = None
    tool_choice: str | None = None

    def matches(self, turn: Turn) -> bool:
        texts = {
            "model": turn.model,
            "last_user": turn.last_user,
            "system": turn.system,
            "last_tool_result": turn.last_tool_result,
        }
        if any(
            m is not None and not m(texts[k])
            for k, m in (
                ("model", self.model),
                ("last_user", self.last_user),
                ("system", self.system),
                ("last_tool_result", self.last_tool_result),
            )
        ):
            return False
        exact = (
            (self.endpoint, turn.endpoint),
            (self.stream, turn.stream),
            (self.last_role, turn.last_role),
            (self.no_tools, not turn.tool_names),
            (self.tool_choice, turn.forced or turn.choice),
        )
        if any(want is not None and want != have for want, have in exact):
            return False
        return all(name in turn.tool_names for name in self.tools)

    def to_spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in sorted(_WHEN_KEYS):
            value = getattr(self, key)
            if value is None or value == ():
                continue
            out[key] = value.to_spec() if isinstance(value, TextMatch) else list(value) if key == "tools" else value
        return out

    @classmethod
    def from_spec(cls, spec: Any, where: str) -> When:
        spec = {} if spec is None else spec
        _need(isinstance(spec, dict), f"{where}: give an object of conditions, got {spec!r}")
        _unknown(spec, _WHEN_KEYS, where)
        kwargs: dict[str, Any] = {}
        for key in ("model", "last_user", "system", "last_tool_result"):
            if key in spec:
                kwargs[key] = TextMatch.from_spec(spec[key], f"{where}.{key}")
        for key, kind in (
            ("endpoint", str),
            ("last_role", str),
            ("tool_choice", str),
            ("stream", bool),
            ("no_tools", bool),
        ):
            if key in spec:
                _need(isinstance(spec[key], kind), f"{where}.{key}: give a {kind.__name__}, got {spec[key]!r}")
                kwargs[key] = spec[key]
        if "endpoint" in kwargs:
            _need(kwargs["endpoint"] in ("chat", "responses"), f"{where}.endpoint: 'chat' or 'responses'")
        if "tools" in spec:
            tools = spec["tools"]
            _need(
                isinstance(tools, list) and all(isinstance(t, str) for t in tools),
                f"{where}.tools: give a list of tool names, got {tools!r}",
            )
            kwargs["tools"] = tuple(tools)
        return cls(**kwargs)


@dataclass(frozen=True)
class PlannedCall:
    """A tool call a reply makes: ``name``, ``arguments`` (the JSON text sent), optional fixed ``id``."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class ErrorReply:
    """An error answer: the real API's body for ``status`` unless ``message``/``type``/``param``/``code`` say
    otherwise; ``in_stream`` sends it as an event inside a 200 stream instead."""

    status: int
    message: str | None = None
    type: str | None = None
    param: str | None = None
    code: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    in_stream: bool = False

    def api_error(self) -> ApiError:
        base = errors.for_status(self.status)
        return ApiError(
            self.status,
            self.message or base.message,
            type=self.type or base.type,
            param=self.param if self.param is not None else base.param,
            code=self.code if self.code is not None else base.code,
            headers=list(self.headers) or base.headers,
        )


@dataclass(frozen=True)
class Reply:
    """What a rule answers (see the module docstring)."""

    text: str | None = None
    tool_calls: tuple[PlannedCall, ...] = ()
    error: ErrorReply | None = None
    pace: float = 0.0
    chunk_chars: int | None = None
    keepalive: bool = False
    finish_reason: str | None = None
    quirks: tuple[str, ...] = ()

    def render_text(self, turn: Turn) -> str | None:
        if self.text is None:
            return None
        return self.text.replace("{last_user}", turn.last_user).replace("{last_tool_result}", turn.last_tool_result)

    def allowed_by(self, turn: Turn) -> bool:
        """Whether the model could give this reply under the request's ``tool_choice``."""
        if self.error is not None:
            return True
        if self.tool_calls:
            return turn.choice != "none" and (
                turn.forced is None or all(c.name == turn.forced for c in self.tool_calls)
            )
        return turn.choice not in ("required", "function")

    def to_spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.text is not None:
            out["text"] = self.text
        if self.tool_calls:
            out["tool_calls"] = [
                {"name": c.name, "arguments": c.arguments, **({"id": c.id} if c.id else {})} for c in self.tool_calls
            ]
        if self.error is not None:
            e = self.error
            out["error"] = {
                "status": e.status,
                "message": e.message,
                "type": e.type,
                "param": e.param,
                "code": e.code,
                "headers": dict(e.headers),
                "in_stream": e.in_stream,
            }
        for key, default in (("pace", 0.0), ("chunk_chars", None), ("keepalive", False), ("finish_reason", None)):
            if getattr(self, key) != default:
                out[key] = getattr(self, key)
        if self.quirks:
            out["quirks"] = list(self.quirks)
        return out

    @classmethod
    def from_spec(cls, spec: Any, where: str) -> Reply:
        _need(isinstance(spec, dict), f"{where}: give an object such as {{'text': 'hello'}}, got {spec!r}")
        _unknown(spec, _REPLY_KEYS, where)
        _need(
            any(k in spec for k in ("text", "tool_calls", "error")), f"{where}: needs 'text', 'tool_calls' or 'error'"
        )
        text = spec.get("text")
        _need(text is None or isinstance(text, str), f"{where}.text: give a string, got {text!r}")
        calls = tuple(_planned(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(_list(spec, "tool_calls", where)))
        _need("tool_calls" not in spec or bool(calls), f"{where}.tool_calls: give at least one call")
        error = _error(spec["error"], f"{where}.error") if "error" in spec else None
        pace = spec.get("pace", 0.0)
        _need(
            isinstance(pace, (int, float)) and not isinstance(pace, bool) and math.isfinite(pace) and 0 <= pace <= 600,
            f"{where}.pace: give seconds between chunks, 0..600, got {pace!r}",
        )
        chunk = spec.get("chunk_chars")
        _need(
            chunk is None or isinstance(chunk, int) and not isinstance(chunk, bool) and chunk >= 1,
            f"{where}.chunk_chars: give an integer >= 1, got {chunk!r}",
        )
        keepalive = spec.get("keepalive", False)
        _need(isinstance(keepalive, bool), f"{where}.keepalive: give true or false, got {keepalive!r}")
        finish = spec.get("finish_reason")
        _need(
            finish in (None, "stop", "length", "content_filter", "tool_calls"),
            f"{where}.finish_reason: one of stop, length, content_filter, tool_calls; got {finish!r}",
        )
        quirks = _list(spec, "quirks", where)
        unknown = [q for q in quirks if q not in QUIRKS]
        _need(not unknown, f"{where}.quirks: unknown {unknown!r}; known: {list(QUIRKS)}")
        return cls(text, calls, error, float(pace), chunk, keepalive, finish, tuple(quirks))


def _list(spec: dict[str, Any], key: str, where: str) -> list[Any]:
    value = spec.get(key, [])
    if not isinstance(value, list):
        raise RuleSpecError(f"{where}.{key}: give a list, got {value!r}")
    return value


def _planned(spec: Any, where: str) -> PlannedCall:
    _need(isinstance(spec, dict), f"{where}: give an object {{'name', 'arguments'}}, got {spec!r}")
    _unknown(spec, {"name", "arguments", "id"}, where)
    name = spec.get("name")
    _need(isinstance(name, str) and name != "", f"{where}.name: give the tool's name, got {name!r}")
    arguments = spec.get("arguments", {})
    if not isinstance(arguments, str):
        try:
            arguments = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise RuleSpecError(f"{where}.arguments: not JSON-serialisable ({exc})") from None
    call_id = spec.get("id")
    _need(call_id is None or isinstance(call_id, str) and call_id != "", f"{where}.id: give a string, got {call_id!r}")
    return PlannedCall(name, arguments, call_id)


def _error(spec: Any, where: str) -> ErrorReply:
    _need(isinstance(spec, dict), f"{where}: give an object such as {{'status': 429}}, got {spec!r}")
    _unknown(spec, _ERROR_KEYS, where)
    status = spec.get("status")
    _need(
        isinstance(status, int) and not isinstance(status, bool) and 400 <= status <= 599,
        f"{where}.status: give an HTTP error status 400..599, got {status!r}",
    )
    for key in ("message", "type", "param", "code"):
        _need(spec.get(key) is None or isinstance(spec[key], str), f"{where}.{key}: give a string or null")
    headers = spec.get("headers") or {}
    _need(
        isinstance(headers, dict)
        and all(
            isinstance(k, str) and isinstance(v, str) and not any(c in k + v for c in "\r\n\0")
            for k, v in headers.items()
        ),
        f"{where}.headers: give an object of string header values (no CR, LF or NUL)",
    )
    in_stream = spec.get("in_stream", False)
    _need(isinstance(in_stream, bool), f"{where}.in_stream: give true or false")
    return ErrorReply(
        status,
        spec.get("message"),
        spec.get("type"),
        spec.get("param"),
        spec.get("code"),
        tuple(headers.items()),
        in_stream,
    )


@dataclass
class Rule:
    """One scripted answer: ``when`` it applies, the ``reply``, ``times`` left (``None``: unlimited), ``hits``."""

    name: str
    when: When
    reply: Reply
    times: int | None = None
    ignore_tool_choice: bool = False
    hits: int = 0

    def to_spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "when": self.when.to_spec(),
            "reply": self.reply.to_spec(),
            "times": self.times,
            "ignore_tool_choice": self.ignore_tool_choice,
            "hits": self.hits,
        }

    @classmethod
    def from_spec(cls, spec: Any, where: str = "rule") -> Rule:
        if isinstance(spec, Rule):
            return spec
        _need(isinstance(spec, dict), f"{where}: give an object {{'name', 'when', 'reply'}}, got {spec!r}")
        _unknown(spec, _RULE_KEYS | {"hits"}, where)
        name = spec.get("name", where)
        _need(isinstance(name, str) and name != "", f"{where}.name: give a non-empty string")
        _need("reply" in spec, f"{where}: needs a 'reply'")
        times = spec.get("times")
        _need(
            times is None or isinstance(times, int) and not isinstance(times, bool) and times >= 1,
            f"{where}.times: give an integer >= 1, or null for unlimited",
        )
        ignore = spec.get("ignore_tool_choice", False)
        _need(isinstance(ignore, bool), f"{where}.ignore_tool_choice: give true or false")
        return cls(
            name,
            When.from_spec(spec.get("when"), f"{where}.when"),
            Reply.from_spec(spec["reply"], f"{where}.reply"),
            times,
            ignore,
        )


@dataclass
class Script:
    """Rules plus the default reply, as loaded from Python, the admin API or a file."""

    rules: list[Rule] = field(default_factory=list)
    default: Reply = field(default_factory=lambda: Reply(text=DEFAULT_TEXT))

    @classmethod
    def from_spec(cls, spec: Any, where: str = "rules") -> Script:
        """A list of rules, or ``{"rules": [...], "default": reply}``."""
        if isinstance(spec, list):
            spec = {"rules": spec}
        _need(isinstance(spec, dict), f"{where}: give a list of rules or {{'rules': [...], 'default': {{...}}}}")
        _unknown(spec, {"rules", "default"}, where)
        rules = [Rule.from_spec(r, f"{where}[{i}]") for i, r in enumerate(_list(spec, "rules", where))]
        default = Reply.from_spec(spec["default"], f"{where}.default") if spec.get("default") is not None else None
        return cls(rules, default or Reply(text=DEFAULT_TEXT))

    @classmethod
    def load(cls, path: str | Path) -> Script:
        """Read a JSON rules file. Raises ``OSError`` if unreadable, :class:`RuleSpecError` naming the file."""
        text = Path(path).read_text(encoding="utf-8")
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RuleSpecError(f"rules file {path}: not JSON ({exc})") from None
        return cls.from_spec(spec, f"rules file {path}")


class RuleBook:
    """The fake's live rules, thread-safe: ``choose`` picks the answer for a turn and counts the hit."""

    def __init__(self, script: Script | None = None) -> None:
        self._lock = threading.Lock()
        script = script or Script()
        self._rules, self._default = list(script.rules), script.default
        self._added = 0

    def add(self, *rules: Rule | dict[str, Any]) -> list[Rule]:
        """Append rules (objects or their JSON form); all are checked before any is added. An unnamed rule is named
        ``rule #N`` (N counts every rule added to this book)."""
        with self._lock:
            first = self._added + 1
        parsed = [Rule.from_spec(r, f"rule #{first + i}") for i, r in enumerate(rules)]
        with self._lock:
            self._added += len(parsed)
            self._rules.extend(parsed)
        return parsed

    def replace(self, script: Script) -> None:
        with self._lock:
            self._rules, self._default = list(script.rules), script.default

    def set_default(self, reply: Reply | dict[str, Any]) -> None:
        parsed = reply if isinstance(reply, Reply) else Reply.from_spec(reply, "default")
        with self._lock:
            self._default = parsed

    def clear(self) -> None:
        """Remove every rule (the default stays)."""
        with self._lock:
            self._rules.clear()

    def to_spec(self) -> dict[str, Any]:
        with self._lock:
            return {"rules": [r.to_spec() for r in self._rules], "default": self._default.to_spec()}

    def choose(self, turn: Turn) -> tuple[str, Reply]:
        """The first matching rule allowed by ``tool_choice`` (spent after ``times``), else the default."""
        with self._lock:
            for rule in self._rules:
                if rule.when.matches(turn) and (rule.ignore_tool_choice or rule.reply.allowed_by(turn)):
                    rule.hits += 1
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times == 0:
                            self._rules.remove(rule)
                    return rule.name, rule.reply
            default = self._default
        if default.allowed_by(turn):
            return "default", default
        if turn.choice == "none":
            return "default", Reply(text=DEFAULT_TEXT)
        target = turn.forced or (turn.callable_names or turn.tool_names or ["tool"])[0]
        return "default", Reply(tool_calls=(PlannedCall(target, "{}"),))
