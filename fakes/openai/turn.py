"""One validated model request, as the rules and the capture helpers see it (the endpoint's wire form flattened).

A :class:`Turn` holds what a chat completion or a response request asked for: the conversation (:class:`Message`),
the tools advertised (:class:`Tool`), ``tool_choice`` as sent and as it takes effect, and the streaming options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Tool:
    """One advertised tool: ``type`` (``function``, ``custom``, or a built-in Responses tool such as
    ``web_search``), ``name`` (``""`` for built-ins), ``description``, ``parameters`` (the JSON Schema as sent, or
    ``None``) and ``strict`` (as sent, or ``None``)."""

    name: str
    type: str = "function"
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "parameters": self.parameters,
            "strict": self.strict,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Tool:
        return cls(
            name=data["name"],
            type=data.get("type", "function"),
            description=data.get("description"),
            parameters=data.get("parameters"),
            strict=data.get("strict"),
        )


@dataclass(frozen=True)
class Message:
    """One conversation entry, flattened: ``role`` (``system``, ``developer``, ``user``, ``assistant``, ``tool``),
    ``text`` (the text parts joined; ``""`` when there are none), ``tool_call_id`` (tool results) and ``tool_calls``
    (an assistant's calls: ``(id, name, arguments)`` triples)."""

    role: str
    text: str = ""
    tool_call_id: str | None = None
    tool_calls: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class Turn:
    """A validated request to ``/v1/chat/completions`` (``endpoint="chat"``) or ``/v1/responses``
    (``endpoint="responses"``).

    ``tool_choice`` is the value sent (``None`` when absent); ``choice`` is what takes effect: ``"none"``, ``"auto"``,
    ``"required"`` or ``"function"`` (then ``forced`` names the function); ``allowed`` narrows the callable tools when
    ``tool_choice`` was ``allowed_tools`` (``None`` otherwise).
    """

    endpoint: str
    model: str
    messages: tuple[Message, ...]
    tools: tuple[Tool, ...] = ()
    tool_choice: Any = None
    choice: str = "none"
    forced: str | None = None
    allowed: tuple[str, ...] | None = None
    stream: bool = False
    include_usage: bool = False
    parallel_tool_calls: bool = True
    n: int = 1
    instructions: str | None = None
    previous_response_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tool_names(self) -> list[str]:
        """Names of the advertised function and custom tools, in the order sent."""
        return [t.name for t in self.tools if t.name]

    @property
    def callable_names(self) -> list[str]:
        """The tools the model may call on this turn: none for ``tool_choice: "none"``, the forced one, the
        ``allowed_tools`` subset, or every advertised one."""
        if self.choice == "none":
            return []
        if self.forced is not None:
            return [self.forced]
        if self.allowed is not None:
            return [n for n in self.tool_names if n in self.allowed]
        return self.tool_names

    @property
    def system(self) -> str:
        """The system and developer texts (and Responses ``instructions``), joined with newlines."""
        parts = [self.instructions] if self.instructions else []
        parts += [m.text for m in self.messages if m.role in ("system", "developer")]
        return "\n".join(parts)

    @property
    def last_user(self) -> str:
        """The text of the last user message (``""`` when there is none)."""
        return next((m.text for m in reversed(self.messages) if m.role == "user"), "")

    @property
    def last_role(self) -> str:
        return self.messages[-1].role if self.messages else ""

    @property
    def last_tool_result(self) -> str:
        """The text of the last tool result (``""`` when the conversation has none)."""
        return next((m.text for m in reversed(self.messages) if m.role == "tool"), "")
