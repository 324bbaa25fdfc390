"""Provider quirks: stream shapes that OpenAI-compatible providers send and OpenAI does not, so a spec can check that
a client (the harness's own, or the stack's) reads them, over a real socket.

A rule's reply names them (``"quirks": ["no_index", "error_null"]``); they reshape a streamed chat completion's
chunks after the fake has built them in OpenAI's shape (and checked them against the ``openai`` types), so the
frames below are the only ones the fake sends outside OpenAI's shape, and only when asked. Where each is seen:

- ``no_index``: tool-call pieces without ``index`` (Gemini's OpenAI-compatible endpoint; proxies in front of it).
- ``repeat_ids``: every tool-call piece carries its call's ``id`` and ``type``, not only the first (some proxies).
- ``explicit_nulls``: absent fields sent as ``null``: ``role``, ``content`` and ``tool_calls`` on deltas that do not
  use them, ``id``, ``type`` and ``function.name`` on arguments pieces (Cloudflare Workers AI, Fireworks).
- ``arguments_object``: each call's ``function.arguments`` sent whole, as a JSON object rather than JSON text, in
  its first piece (servers that pass a model's parsed arguments through).
- ``error_null`` / ``error_empty``: every chunk carries ``"error": null`` / ``"error": {}`` (LiteLLM-style proxies).
- ``delta_null``: the last chunk's choice has ``"delta": null`` with its ``finish_reason`` (Azure OpenAI's
  content-filter chunks).
- ``null_frame``: a ``data: null`` frame after the first chunk (some routers send one between chunks).
- ``no_done``: the stream ends cleanly without ``data: [DONE]``.

Usage-only last chunks (``"choices": []``), several choices and keep-alive comments need no quirk: the request's
``stream_options.include_usage`` and ``n``, and the reply's ``keepalive``, give them in OpenAI's own shape.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from fakes.openai.wire import DONE, sse

QUIRKS = (
    "no_index",
    "repeat_ids",
    "explicit_nulls",
    "arguments_object",
    "error_null",
    "error_empty",
    "delta_null",
    "null_frame",
    "no_done",
)
NULL_FRAME = b"data: null\n\n"


def frames(chunks: list[dict[str, Any]], quirks: tuple[str, ...]) -> list[bytes]:
    """The server-sent events of a streamed chat completion: ``chunks`` (OpenAI's shape; not changed) reshaped by
    ``quirks``, then ``[DONE]`` unless ``no_done``."""
    chunks = copy.deepcopy(chunks)
    if "arguments_object" in quirks:
        chunks = _arguments_as_objects(chunks)
    headers: dict[tuple[int, int], dict[str, Any]] = {}  # (choice, call index): the call's first piece
    for chunk in chunks:
        for choice in chunk["choices"]:
            _reshape_delta(choice["index"], choice["delta"], quirks, headers)
        if "error_null" in quirks:
            chunk["error"] = None
        if "error_empty" in quirks:
            chunk["error"] = {}
    if "delta_null" in quirks:
        for chunk in chunks:
            for choice in chunk["choices"]:
                if choice["finish_reason"]:
                    choice["delta"] = None
    out = [sse(c) for c in chunks]
    if "null_frame" in quirks and out:
        out.insert(1, NULL_FRAME)
    return out if "no_done" in quirks else [*out, DONE]


def _reshape_delta(
    choice: int, delta: dict[str, Any], quirks: tuple[str, ...], headers: dict[tuple[int, int], dict[str, Any]]
) -> None:
    for piece in delta.get("tool_calls") or []:
        slot = (choice, piece["index"])
        if "id" in piece:
            headers[slot] = piece
        elif "repeat_ids" in quirks:
            piece["id"], piece["type"] = headers[slot]["id"], headers[slot]["type"]
        elif "explicit_nulls" in quirks:
            piece["id"], piece["type"] = None, None
            piece["function"].setdefault("name", None)
        if "no_index" in quirks:
            del piece["index"]
    if "explicit_nulls" in quirks:
        for key in ("role", "content", "tool_calls"):
            delta.setdefault(key, None)


def _arguments_as_objects(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each call's arguments (when they are a JSON object) put whole into its first piece, the chunks that carried
    only pieces of them dropped; arguments that are not an object stay JSON text."""
    texts: dict[tuple[int, int], str] = {}
    for chunk in chunks:
        for choice in chunk["choices"]:
            for piece in choice["delta"].get("tool_calls") or []:
                slot = (choice["index"], piece["index"])
                texts[slot] = texts.get(slot, "") + piece["function"].get("arguments", "")
    whole = {slot: _object(text) for slot, text in texts.items()}
    kept = []
    for chunk in chunks:
        pieces = [((c["index"], p["index"]), p) for c in chunk["choices"] for p in c["delta"].get("tool_calls") or []]
        if pieces and all("id" not in p and whole[slot] is not None for slot, p in pieces):
            continue  # only pieces of arguments now sent whole
        for slot, piece in pieces:
            if "id" in piece and whole[slot] is not None:
                piece["function"]["arguments"] = whole[slot]
        kept.append(chunk)
    return kept


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
