"""The fake model endpoint, seen from a spec: what each turn offered the model, and scripting it per spec.

Where the stack's planner and selector call the fake model endpoint (``fakes/openai``, Service ``fake-openai`` port
80; on the stack twin always, on minikube when it is deployed as the orchestrator's model: fakes/README.md), the
fake records every request with what it *advertised* (the tools offered, ``tool_choice``) and what it answered.
This module reads that capture through a port-forward (``GET /_fake/openai/calls``) and scripts the fake's rules
(``/_fake/openai/rules``), each exchange one bounded request (:func:`harness.fetch.fetch_through_sync`).

Advertised names are read from each request's raw body, not from the fake's parsed view: a request the model
endpoint refused (a tool name it does not accept, e.g. one still carrying an internal ``caller:`` prefix) is
recorded too, and a spec must see what was offered, not only what was accepted.

Correlating a turn with its model requests: the journal's ``seq`` only grows, so a spec takes :meth:`ModelJournal.mark`
before a turn and reads :meth:`ModelJournal.since` after it (cluster specs never run in parallel: README §4).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.fetch import Forward, fetch_through_sync
from specs.agent_controller.errors import ModelJournalUnreadable as ModelJournalUnreadable

CALLS = "/_fake/openai/calls"
RULES = "/_fake/openai/rules"
TIMEOUT = 20.0


@dataclass(frozen=True)
class ModelRequest:
    """One request the stack sent the model: ``seq``, ``endpoint`` (``chat``, ``embeddings``, ...), ``status`` the
    fake answered, ``tools`` (advertised names, as sent, in order), ``tool_choice`` (as sent), ``system`` (system and
    developer text), ``messages`` (the fake's flattened conversation), ``emitted`` (tool calls it answered:
    ``{id, name, arguments}``), ``text`` it answered, ``rule`` that answered, ``error`` of a refusal."""

    seq: int
    endpoint: str
    status: int
    tools: tuple[str, ...]
    tool_choice: Any
    system: str
    messages: tuple[dict[str, Any], ...]
    emitted: tuple[dict[str, Any], ...]
    text: str | None
    rule: str | None
    error: dict[str, Any] | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_capture(cls, entry: dict[str, Any]) -> ModelRequest:
        raw_body = entry.get("body")
        body: dict[str, Any] = raw_body if isinstance(raw_body, dict) else {}
        messages = tuple(m for m in entry.get("messages") or [] if isinstance(m, dict))
        system = "\n".join(str(m.get("text", "")) for m in messages if m.get("role") in ("system", "developer"))
        return cls(
            seq=int(entry.get("seq", 0)),
            endpoint=str(entry.get("endpoint", "")),
            status=int(entry.get("status", 0)),
            tools=advertised_names(body),
            tool_choice=body.get("tool_choice"),
            system=system,
            messages=messages,
            emitted=tuple(e for e in entry.get("emitted") or [] if isinstance(e, dict)),
            text=entry.get("text"),
            rule=entry.get("rule"),
            error=entry.get("error"),
            raw=entry,
        )

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The tool-result messages of this request's conversation (``tool_call_id``, ``text``)."""
        return [m for m in self.messages if m.get("role") == "tool"]

    def line(self) -> str:
        told = f"tool_choice={self.tool_choice!r}" if self.tool_choice is not None else "no tool_choice"
        if self.error is not None:
            said = f"refused: {str(self.error.get('message', self.error))[:160]}"
        elif self.emitted:
            said = f"called {[e.get('name') for e in self.emitted]}"
        else:
            said = f"said {str(self.text)[:80]!r}"
        return f"#{self.seq} {self.endpoint} -> {self.status}: offered {list(self.tools)}, {told}, {said}"


def advertised_names(body: dict[str, Any]) -> tuple[str, ...]:
    """Tool names a chat-completions or responses body offers, in order (``function.name`` or ``name``)."""
    names = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            names.append(name)
    return tuple(names)


class ModelJournal:
    """The fake model's capture and rules through ``target`` (a forward to ``svc/fake-openai:80`` or a base URL)."""

    def __init__(self, target: Forward | str, *, timeout: float = TIMEOUT) -> None:
        self.target = target
        self.timeout = timeout

    def requests(self) -> list[ModelRequest]:
        """Every captured request (the fake keeps the newest 1,000), oldest first."""
        answer = self._json("GET", CALLS)
        calls = answer.get("calls") if isinstance(answer, dict) else None
        if not isinstance(calls, list):
            raise ModelJournalUnreadable(f"GET {CALLS} answered JSON without a calls list: {str(answer)[:200]}")
        return [ModelRequest.from_capture(c) for c in calls if isinstance(c, dict)]

    def mark(self) -> int:
        """The newest ``seq`` so far (0 when none): requests after it belong to what a spec does next."""
        requests = self.requests()
        return requests[-1].seq if requests else 0

    def since(self, mark: int, endpoint: str | None = "chat") -> list[ModelRequest]:
        """Requests after ``mark`` (of ``endpoint`` only, unless ``None``), oldest first."""
        return [r for r in self.requests() if r.seq > mark and (endpoint is None or r.endpoint == endpoint)]

    def rules(self) -> dict[str, Any]:
        answer = self._json("GET", RULES)
        if not isinstance(answer, dict) or not isinstance(answer.get("rules"), list):
            raise ModelJournalUnreadable(f"GET {RULES} answered JSON without a rules list: {str(answer)[:200]}")
        return answer

    def set_rules(self, rules: Sequence[dict[str, Any]]) -> None:
        """Replace every rule (the default reply stays)."""
        self._json("PUT", RULES, json={"rules": list(rules)})

    @contextlib.contextmanager
    def scripted(self, rules: Sequence[dict[str, Any]]) -> Iterator[None]:
        """``rules`` first, then the ones the fake had; exactly the old ones again on exit."""
        before = self.rules()["rules"]
        self.set_rules([*rules, *before])
        try:
            yield
        finally:
            self.set_rules(before)

    def _json(self, method: str, path: str, **request: Any) -> Any:
        response = fetch_through_sync(self.target, method, path, timeout=self.timeout, **request)
        if response.status_code not in (200, 201):
            raise ModelJournalUnreadable(
                f"{method} {path} on the fake model answered HTTP {response.status_code}: {response.text[:300]!r}"
            )
        try:
            return response.json()
        except ValueError:
            raise ModelJournalUnreadable(
                f"{method} {path} on the fake model answered a body that is not JSON: {response.text[:200]!r}"
            ) from None
