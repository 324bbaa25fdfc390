"""Request validation for ``/v1/chat/completions`` and ``/v1/responses``: every refusal is an :class:`ApiError` with
the real API's status, message, ``param`` and ``code`` (see :mod:`fakes.openai.errors` for which wordings are the
real API's own); an accepted request becomes a :class:`~fakes.openai.turn.Turn`.

What is checked (the rest of a body is accepted as sent): the body is a JSON object; ``model`` is present, a string
and served; no top-level field the ``openai`` package's own request types do not name (Chat Completions:
``Unrecognized request argument supplied``; Responses: ``Unknown parameter``); messages or input items (roles,
content types, required fields, tool results answering an earlier call and every call answered before the next turn);
tools (at most 128; a function name of 1-64 characters from ``[a-zA-Z0-9_-]``; ``parameters`` a JSON Schema object of
``type: "object"``); ``tool_choice`` in all its forms, only with tools, naming an advertised function; ``stream``,
``stream_options`` (only with ``stream``), ``parallel_tool_calls``, ``n``. Checks never recurse into user data, so a
hostile body cannot make them slow or deep.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

from fakes.openai import errors
from fakes.openai.catalog import Catalog
from fakes.openai.errors import ApiError
from fakes.openai.turn import Message, Tool, Turn

CHAT_FIELDS = frozenset(CompletionCreateParamsStreaming.__annotations__)
RESPONSES_FIELDS = frozenset(ResponseCreateParamsStreaming.__annotations__)
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_TOOL_NAME, MAX_TOOLS, MAX_N = 64, 128, 128
CHAT_ROLES = ["system", "assistant", "user", "function", "tool", "developer"]
INPUT_ROLES = ["user", "assistant", "system", "developer"]
CHOICES = ["none", "auto", "required"]
_CONTENT = "one of a string or array of objects"

#: Looks up a stored response's conversation by id (``None`` when unknown), for ``previous_response_id``.
History = Callable[[str], "tuple[Message, ...] | None"]


def _model(body: dict[str, Any], catalog: Catalog, kind: str) -> str:
    model = body.get("model")
    if model is None:
        raise errors.no_model()
    if not isinstance(model, str):
        raise errors.wrong_type("model", "a string", model)
    info = catalog.find(model)
    if info is None or info.kind != kind:
        raise errors.unknown_model(model)
    return model


def json_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.unparseable_body()
    return body


def _bool(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise errors.wrong_type(name, "a boolean", value)
    return value


def _text(content: Any) -> str:
    """The text parts of a message's content (a string, or parts with ``text``), joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _content(value: Any, param: str, *, required: bool) -> None:
    if value is None:
        if required:
            raise errors.missing(param)
        return
    if not isinstance(value, (str, list)):
        raise errors.wrong_type(param, _CONTENT, value)
    if isinstance(value, list):
        for j, part in enumerate(value):
            if not isinstance(part, dict):
                raise errors.wrong_type(f"{param}[{j}]", "an object", part)
            if "type" not in part:
                raise errors.missing(f"{param}[{j}].type")
            if part["type"] in ("text", "input_text", "output_text") and not isinstance(part.get("text"), str):
                raise errors.wrong_type(f"{param}[{j}].text", "a string", part.get("text"))


# -- chat completions ------------------------------------------------------------------------------------------------


def chat_turn(body: Any, catalog: Catalog) -> Turn:
    """Validate a Chat Completions body; raises :class:`ApiError` exactly as the real endpoint refuses it."""
    body = json_object(body)
    model = _model(body, catalog, "chat")
    for name in body:
        if name not in CHAT_FIELDS:
            raise errors.unrecognized_argument(name)
    messages = _chat_messages(body.get("messages"))
    tools = _chat_tools(body.get("tools"))
    choice, forced, allowed = _tool_choice(body, tools, chat=True)
    stream = _bool(body, "stream", False)
    include_usage = _stream_options(body, stream)
    n = body.get("n", 1)
    if n is None:
        n = 1
    if not isinstance(n, int) or isinstance(n, bool):
        raise errors.wrong_type("n", "an integer", n)
    if not 1 <= n <= MAX_N:
        raise ApiError(
            400,
            f"Invalid 'n': integer {'below minimum' if n < 1 else 'above maximum'} value. Expected a "
            f"value {'>= 1' if n < 1 else f'<= {MAX_N}'}, but got {n} instead.",
            param="n",
            code="integer_below_min_value" if n < 1 else "integer_above_max_value",
        )
    return Turn(
        "chat",
        model,
        messages,
        tools,
        body.get("tool_choice"),
        choice,
        forced,
        allowed,
        stream,
        include_usage,
        _bool(body, "parallel_tool_calls", True),
        n,
    )


def _chat_messages(value: Any) -> tuple[Message, ...]:
    if value is None:
        raise errors.missing("messages")
    if not isinstance(value, list):
        raise errors.wrong_type("messages", "an array", value)
    if not value:
        raise errors.empty_array("messages")
    out = [_chat_message(m, i) for i, m in enumerate(value)]
    _check_tool_sequence(out)
    return tuple(out)


def _chat_message(message: Any, i: int) -> Message:
    param = f"messages[{i}]"
    if not isinstance(message, dict):
        raise errors.wrong_type(param, "an object", message)
    role = message.get("role")
    if role is None:
        raise errors.missing(f"{param}.role")
    if role not in CHAT_ROLES:
        raise errors.bad_value(f"{param}.role", role, CHAT_ROLES)
    calls = _assistant_calls(message.get("tool_calls"), param) if role == "assistant" else ()
    # An assistant's content may be left out (or null) only when it carries calls (API reference).
    required = role != "assistant" or (not calls and message.get("function_call") is None)
    _content(message.get("content"), f"{param}.content", required=required)
    tool_call_id = message.get("tool_call_id")
    if role == "tool":
        if tool_call_id is None:
            raise errors.missing(f"{param}.tool_call_id")
        if not isinstance(tool_call_id, str):
            raise errors.wrong_type(f"{param}.tool_call_id", "a string", tool_call_id)
    if role == "function" and not isinstance(message.get("name"), str):
        raise errors.missing(f"{param}.name")
    return Message(role, _text(message.get("content")), tool_call_id if role == "tool" else None, calls)


def _assistant_calls(value: Any, param: str) -> tuple[tuple[str, str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise errors.wrong_type(f"{param}.tool_calls", "an array", value)
    calls = []
    for j, call in enumerate(value):
        where = f"{param}.tool_calls[{j}]"
        if not isinstance(call, dict):
            raise errors.wrong_type(where, "an object", call)
        for key in ("id", "type", "function"):
            if key not in call:
                raise errors.missing(f"{where}.{key}")
        function = call["function"]
        if not isinstance(function, dict):
            raise errors.wrong_type(f"{where}.function", "an object", function)
        for key in ("name", "arguments"):
            if not isinstance(function.get(key), str):
                raise _string_field(function, key, f"{where}.function.{key}")
        if not isinstance(call["id"], str):
            raise errors.wrong_type(f"{where}.id", "a string", call["id"])
        calls.append((call["id"], function["name"], function["arguments"]))
    return tuple(calls)


def _string_field(data: dict[str, Any], key: str, param: str) -> ApiError:
    if key not in data:
        return errors.missing(param)
    return errors.wrong_type(param, "a string", data[key])


def _check_tool_sequence(messages: list[Message]) -> None:
    """Tool results answer a preceding assistant's ``tool_calls``; every call is answered before the next turn."""
    pending: dict[str, int] = {}
    for i, message in enumerate(messages):
        if message.role == "tool":
            if message.tool_call_id not in pending:
                raise ApiError(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'.",
                    param=f"messages.[{i}].role",
                )
            del pending[message.tool_call_id]
            continue
        if pending:
            _unanswered(pending)
        pending = {call_id: i for call_id, _, _ in message.tool_calls}
    if pending and messages[-1].role == "tool":
        _unanswered(pending)


def _unanswered(pending: dict[str, int]) -> None:
    at = min(pending.values())
    raise ApiError(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: " + ", ".join(pending),
        param=f"messages.[{at + 1}].role",
    )


def _chat_tools(value: Any) -> tuple[Tool, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise errors.wrong_type("tools", "an array", value)
    if not value:
        raise errors.empty_array("tools")
    if len(value) > MAX_TOOLS:
        raise errors.array_too_long("tools", MAX_TOOLS, len(value))
    out = []
    for i, tool in enumerate(value):
        param = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise errors.wrong_type(param, "an object", tool)
        kind = tool.get("type")
        if kind is None:
            raise errors.missing(f"{param}.type")
        if kind not in ("function", "custom"):
            raise errors.bad_value(f"{param}.type", kind, ["function", "custom"])
        spec = tool.get(kind)
        if spec is None:
            raise errors.missing(f"{param}.{kind}")
        if not isinstance(spec, dict):
            raise errors.wrong_type(f"{param}.{kind}", "an object", spec)
        out.append(_function(spec, f"{param}.{kind}", kind))
    return tuple(out)


def _function(spec: dict[str, Any], param: str, kind: str = "function") -> Tool:
    """A function (or custom) tool's name, description, schema and ``strict``, checked as the real API checks them."""
    name = spec.get("name")
    if name is None:
        raise errors.missing(f"{param}.name")
    if not isinstance(name, str):
        raise errors.wrong_type(f"{param}.name", "a string", name)
    if len(name) > MAX_TOOL_NAME:
        raise errors.string_too_long(f"{param}.name", MAX_TOOL_NAME, len(name))
    if not TOOL_NAME.match(name):
        raise errors.bad_tool_name(f"{param}.name")
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise errors.wrong_type(f"{param}.description", "a string", description)
    parameters = spec.get("parameters") if kind == "function" else None
    if parameters is not None:
        if not isinstance(parameters, dict):
            raise errors.wrong_type(f"{param}.parameters", "an object", parameters)
        if parameters and parameters.get("type") != "object":
            raise errors.bad_schema(name, f"{param}.parameters", parameters)
    strict = spec.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise errors.wrong_type(f"{param}.strict", "a boolean", strict)
    return Tool(name, kind, description, parameters, strict)


def _tool_choice(
    body: dict[str, Any], tools: tuple[Tool, ...], *, chat: bool
) -> tuple[str, str | None, tuple[str, ...] | None]:
    """``(choice, forced, allowed)`` for the request's ``tool_choice`` (defaults: ``auto`` with tools, else
    ``none``)."""
    value = body.get("tool_choice")
    if value is None:
        return ("auto" if tools else "none"), None, None
    if not tools:
        raise ApiError(
            400,
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            param="tool_choice",
        )
    if isinstance(value, str):
        if value not in CHOICES:
            raise errors.bad_value("tool_choice", value, CHOICES)
        return value, None, None
    if not isinstance(value, dict):
        raise errors.wrong_type("tool_choice", "one of a string or object", value)
    kind = value.get("type")
    if kind in ("function", "custom"):
        holder = value.get(kind) if chat else value
        name = holder.get("name") if isinstance(holder, dict) else None
        param = f"tool_choice.{kind}.name" if chat else "tool_choice.name"
        if not isinstance(name, str):
            raise _string_field(holder if isinstance(holder, dict) else {}, "name", param)
        _advertised(name, tools, param)
        return "function", name, None
    if kind == "allowed_tools":
        return _allowed(value.get("allowed_tools") if chat else value, tools, chat)
    raise errors.bad_value(
        "tool_choice.type",
        kind if isinstance(kind, str) else repr(kind),
        ["function", "custom", "allowed_tools"]
        if chat
        else [
            "function",
            "custom",
            "allowed_tools",
            "file_search",
            "web_search_preview",
            "computer_use_preview",
            "code_interpreter",
            "image_generation",
            "mcp",
        ],
    )


def _allowed(spec: Any, tools: tuple[Tool, ...], chat: bool) -> tuple[str, None, tuple[str, ...]]:
    param = "tool_choice.allowed_tools" if chat else "tool_choice"
    if not isinstance(spec, dict):
        raise errors.wrong_type(param, "an object", spec)
    mode = spec.get("mode")
    if mode not in ("auto", "required"):
        raise errors.bad_value(f"{param}.mode", mode if isinstance(mode, str) else repr(mode), ["auto", "required"])
    listed = spec.get("tools")
    if not isinstance(listed, list):
        raise errors.wrong_type(f"{param}.tools", "an array", listed)
    names = []
    for i, item in enumerate(listed):
        holder = item.get("function", item) if chat and isinstance(item, dict) else item
        name = holder.get("name") if isinstance(holder, dict) else None
        if not isinstance(name, str):
            raise errors.missing(f"{param}.tools[{i}].name")
        _advertised(name, tools, f"{param}.tools[{i}].name")
        names.append(name)
    return mode, None, tuple(names)


def _advertised(name: str, tools: tuple[Tool, ...], param: str) -> None:
    """Wording modelled: the real API refuses a ``tool_choice`` naming a function that is not in ``tools``."""
    if name not in {t.name for t in tools}:
        raise ApiError(
            400,
            f"Invalid value for '{param}': no function named '{name}' was specified in the 'tools' parameter.",
            param=param,
            code="invalid_value",
        )


def _stream_options(body: dict[str, Any], stream: bool) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not stream:
        raise ApiError(
            400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param="stream_options"
        )
    if not isinstance(options, dict):
        raise errors.wrong_type("stream_options", "an object", options)
    for key in ("include_usage", "include_obfuscation"):
        if key in options and not isinstance(options[key], bool):
            raise errors.wrong_type(f"stream_options.{key}", "a boolean", options[key])
    return bool(options.get("include_usage"))


# -- responses -------------------------------------------------------------------------------------------------------


def responses_turn(body: Any, catalog: Catalog, history: History) -> Turn:
    """Validate a Responses body; ``history`` resolves ``previous_response_id``. Raises :class:`ApiError`."""
    body = json_object(body)
    if "model" not in body:
        raise errors.missing("model")
    model = _model(body, catalog, "chat")
    for name in body:
        if name not in RESPONSES_FIELDS:
            raise errors.unknown_parameter(name)
    previous = body.get("previous_response_id")
    earlier: tuple[Message, ...] = ()
    if previous is not None:
        if not isinstance(previous, str):
            raise errors.wrong_type("previous_response_id", "a string", previous)
        found = history(previous)
        if found is None:
            raise ApiError(
                404,
                f"Previous response with id '{previous}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        earlier = found
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise errors.wrong_type("instructions", "a string", instructions)
    messages = earlier + _input(body.get("input"), earlier)
    tools = _response_tools(body.get("tools"))
    choice, forced, allowed = _tool_choice(body, tools, chat=False)
    stream = _bool(body, "stream", False)
    _stream_options(body, stream)
    return Turn(
        "responses",
        model,
        messages,
        tools,
        body.get("tool_choice"),
        choice,
        forced,
        allowed,
        stream,
        False,
        _bool(body, "parallel_tool_calls", True),
        1,
        instructions,
        previous,
    )


def _input(value: Any, earlier: tuple[Message, ...]) -> tuple[Message, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (Message("user", value),)
    if not isinstance(value, list):
        raise errors.wrong_type("input", "one of a string or array of objects", value)
    out: list[Message] = []
    calls = {c[0] for m in earlier for c in m.tool_calls}
    for i, item in enumerate(value):
        message = _input_item(item, f"input[{i}]")
        if message is None:
            continue
        if message.role == "tool" and message.tool_call_id not in calls:
            raise ApiError(
                400, f"No tool call found for function call output with call_id {message.tool_call_id}.", param="input"
            )
        calls.update(c[0] for c in message.tool_calls)
        out.append(message)
    return tuple(out)


def _input_item(item: Any, param: str) -> Message | None:
    if not isinstance(item, dict):
        raise errors.wrong_type(param, "an object", item)
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        role = item.get("role")
        if role is None:
            raise errors.missing(f"{param}.role")
        if role not in INPUT_ROLES:
            raise errors.bad_value(f"{param}.role", role, INPUT_ROLES)
        _content(item.get("content"), f"{param}.content", required=True)
        return Message(role, _text(item["content"]))
    if kind == "function_call":
        for key in ("call_id", "name", "arguments"):
            if not isinstance(item.get(key), str):
                raise _string_field(item, key, f"{param}.{key}")
        return Message("assistant", "", None, ((item["call_id"], item["name"], item["arguments"]),))
    if kind == "function_call_output":
        for key in ("call_id", "output"):
            if key not in item:
                raise errors.missing(f"{param}.{key}")
        if not isinstance(item["call_id"], str):
            raise errors.wrong_type(f"{param}.call_id", "a string", item["call_id"])
        return Message("tool", _text(item["output"]), item["call_id"])
    if kind is None:
        raise errors.missing(f"{param}.type")
    if not isinstance(kind, str):
        raise errors.wrong_type(f"{param}.type", "a string", kind)
    return None  # reasoning, item references, other tools' items: carried by the real API, not read by the fake


def _response_tools(value: Any) -> tuple[Tool, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise errors.wrong_type("tools", "an array", value)
    if len(value) > MAX_TOOLS:
        raise errors.array_too_long("tools", MAX_TOOLS, len(value))
    out = []
    for i, tool in enumerate(value):
        param = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise errors.wrong_type(param, "an object", tool)
        kind = tool.get("type")
        if kind is None:
            raise errors.missing(f"{param}.type")
        if not isinstance(kind, str):
            raise errors.wrong_type(f"{param}.type", "a string", kind)
        out.append(_function(tool, param, kind) if kind in ("function", "custom") else Tool("", kind))
    return tuple(out)
