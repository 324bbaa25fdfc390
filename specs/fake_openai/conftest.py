"""Fixtures for the fake OpenAI specs: the fake on a socket and in-process, and real ``openai`` clients on it
(retries off, short timeouts, closed after the test)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import (
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionToolUnionParam,
)

import fakes.openai
from fakes.openai import OpenAIFake
from fakes.server import FakeHandle, default_tls
from fakes.testing import register_fuzz_marker

KEY = "sk-fake-test-key-0001"
TIMEOUT = 10.0


def pytest_configure(config: pytest.Config) -> None:
    register_fuzz_marker(config)


@dataclass
class Rig:
    """A fake and how to reach it: ``sync`` and ``async_client()`` are real ``openai`` clients."""

    handle: FakeHandle[OpenAIFake]
    sync: openai.OpenAI

    @property
    def app(self) -> OpenAIFake:
        return self.handle.app

    def async_client(self, **kwargs: Any) -> openai.AsyncOpenAI:
        return async_client(self.handle, **kwargs)


# openai 3 annotates http_client as an httpx2 client; it takes an httpx one as well, and the fake's in-process
# transports are httpx transports, hence the two ignores below. On a socket the client is the package's own default
# (DefaultHttpxClient: its timeout, limits and redirects) on one verification context per process: the fake serves
# plain http, and the package built a context per client (reading the whole CA bundle: 2.5 s of CPU a run).
def sync_client(handle: FakeHandle[OpenAIFake], *, key: str = KEY, timeout: float = TIMEOUT) -> openai.OpenAI:
    http = (
        openai.DefaultHttpxClient(verify=default_tls())
        if handle.served
        else httpx.Client(transport=handle.transport(), timeout=timeout)
    )
    return openai.OpenAI(
        base_url=handle.url + "/v1",
        api_key=key,
        max_retries=0,
        timeout=timeout,
        http_client=http,  # type: ignore[arg-type]
    )


def async_client(handle: FakeHandle[OpenAIFake], *, key: str = KEY, timeout: float = TIMEOUT) -> openai.AsyncOpenAI:
    http = (
        openai.DefaultAsyncHttpxClient(verify=default_tls())
        if handle.served
        else httpx.AsyncClient(transport=handle.async_transport(), timeout=timeout)
    )
    return openai.AsyncOpenAI(
        base_url=handle.url + "/v1",
        api_key=key,
        max_retries=0,
        timeout=timeout,
        http_client=http,  # type: ignore[arg-type]
    )


def function_calls(message: ChatCompletionMessage) -> list[ChatCompletionMessageFunctionToolCall]:
    """The message's tool calls (none: an empty list), each checked to be a function call, the only kind the fake
    answers with."""
    calls = message.tool_calls or []
    functions = [c for c in calls if isinstance(c, ChatCompletionMessageFunctionToolCall)]
    assert len(functions) == len(calls), f"not all function calls: {calls}"
    return functions


@pytest.fixture(params=["socket", "in-process"])
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    """The fake (accepting only :data:`KEY`) on a real socket, then in-process, with a sync client."""
    context = (
        fakes.openai.serve(api_keys=[KEY]) if request.param == "socket" else fakes.openai.in_process(api_keys=[KEY])
    )
    with context as handle:
        client = sync_client(handle)
        try:
            yield Rig(handle, client)
        finally:
            client.close()


@pytest.fixture
def served() -> Iterator[Rig]:
    """The fake on a socket only (admin API, raw HTTP)."""
    with fakes.openai.serve(api_keys=[KEY]) as handle:
        client = sync_client(handle)
        try:
            yield Rig(handle, client)
        finally:
            client.close()


BATTERY_PARAMETERS: dict[str, object] = {
    "type": "object",
    "properties": {"device": {"type": "string"}},
    "required": ["device"],
}
BATTERY_TOOL: ChatCompletionToolUnionParam = {
    "type": "function",
    "function": {
        "name": "get_device_battery",
        "description": "Battery level of a device by serial number",
        "parameters": BATTERY_PARAMETERS,
    },
}
WEATHER_PARAMETERS: dict[str, object] = {"type": "object", "properties": {"city": {"type": "string"}}}
WEATHER_TOOL: ChatCompletionToolUnionParam = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": WEATHER_PARAMETERS},
}
