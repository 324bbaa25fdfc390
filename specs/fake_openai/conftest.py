"""Fixtures for the fake OpenAI specs: the fake on a socket and in-process, and real ``openai`` clients on it
(retries off, short timeouts, closed after the test)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import openai
import pytest

import fakes.openai
from fakes.server import FakeHandle
from fakes.testing import register_fuzz_marker

KEY = "sk-fake-test-key-0001"
TIMEOUT = 10.0


def pytest_configure(config: pytest.Config) -> None:
    register_fuzz_marker(config)


@dataclass
class Rig:
    """A fake and how to reach it: ``sync`` and ``async_client()`` are real ``openai`` clients."""

    handle: FakeHandle
    sync: openai.OpenAI

    @property
    def app(self) -> fakes.openai.OpenAIFake:
        return self.handle.app

    def async_client(self, **kwargs) -> openai.AsyncOpenAI:
        return async_client(self.handle, **kwargs)


def sync_client(handle: FakeHandle, *, key: str = KEY, timeout: float = TIMEOUT) -> openai.OpenAI:
    http = None if handle.served else httpx.Client(transport=handle.transport(), timeout=timeout)
    return openai.OpenAI(base_url=handle.url + "/v1", api_key=key, max_retries=0, timeout=timeout, http_client=http)


def async_client(handle: FakeHandle, *, key: str = KEY, timeout: float = TIMEOUT) -> openai.AsyncOpenAI:
    http = None if handle.served else httpx.AsyncClient(transport=handle.async_transport(), timeout=timeout)
    return openai.AsyncOpenAI(
        base_url=handle.url + "/v1", api_key=key, max_retries=0, timeout=timeout, http_client=http
    )


@pytest.fixture(params=["socket", "in-process"])
def rig(request) -> Iterator[Rig]:
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


BATTERY_TOOL = {
    "type": "function",
    "function": {
        "name": "get_device_battery",
        "description": "Battery level of a device by serial number",
        "parameters": {"type": "object", "properties": {"device": {"type": "string"}}, "required": ["device"]},
    },
}
WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
