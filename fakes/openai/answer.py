"""What the fake model answers for one turn, decided once and rendered per endpoint.

:func:`plan` turns a rule's :class:`~fakes.openai.rules.Reply` into an :class:`Answer`: the text (placeholders filled),
the tool calls with their ids (``call_`` + 24 characters unless the rule fixed one), at most one call when the
request set ``parallel_tool_calls: false``, and the finish reason. :func:`text_pieces` and :func:`argument_pieces` cut
text and arguments into stream deltas the way a model's tokens arrive: several chunks, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fakes.openai import ids
from fakes.openai.rules import Reply
from fakes.openai.turn import Turn
from fakes.openai.wire import estimate_tokens

_WORDS = re.compile(r"\s*\S+|\s+")
ARGUMENT_PIECE = 6  # characters per arguments delta by default: JSON arrives in several chunks, as tokens do


@dataclass(frozen=True)
class EmittedCall:
    """A tool call the fake answered with: ``id`` (``call_...``), ``name``, ``arguments`` (JSON text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Answer:
    """The decided answer: ``text`` (``None`` when only calls), ``calls``, ``finish_reason``, token estimates."""

    text: str | None
    calls: tuple[EmittedCall, ...]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


def plan(turn: Turn, reply: Reply) -> Answer:
    """The answer ``reply`` gives to ``turn`` (a reply with neither text nor calls answers an empty text)."""
    calls = tuple(EmittedCall(c.id or ids.tool_call_id(), c.name, c.arguments) for c in reply.tool_calls)
    if calls and not turn.parallel_tool_calls:
        calls = calls[:1]  # the model makes at most one call per turn then
    text = reply.render_text(turn)
    if text is None and not calls:
        text = ""
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    prompt = estimate_tokens(*(m.text for m in turn.messages), *(t.name for t in turn.tools))
    completion = estimate_tokens(text or "", *(c.name + c.arguments for c in calls))
    return Answer(text, calls, finish, prompt, completion)


def text_pieces(text: str, chunk_chars: int | None) -> list[str]:
    """``text`` as stream deltas: words with their leading whitespace, or ``chunk_chars``-character slices."""
    if chunk_chars:
        return [text[i : i + chunk_chars] for i in range(0, len(text), chunk_chars)]
    return _WORDS.findall(text)


def argument_pieces(arguments: str, chunk_chars: int | None) -> list[str]:
    """Arguments JSON as deltas of ``chunk_chars`` (default :data:`ARGUMENT_PIECE`) characters."""
    size = chunk_chars or ARGUMENT_PIECE
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]
