"""pytest fixture ``fake_openai``: a fresh fake model endpoint served on 127.0.0.1 (OS-chosen port) for one test.

Yields a ``fakes.server.FakeHandle``: ``handle.url`` (clients use ``handle.url + "/v1"``), ``handle.app`` (the
:class:`~fakes.openai.OpenAIFake`: ``add_rules``, ``set_default``, ``log()``), ``handle.requests()`` (the journal),
``handle.fault(...)``, ``handle.transport()``. It accepts any non-empty bearer key. Stopped when the test ends.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakes.openai
from fakes.openai import OpenAIFake
from fakes.server import FakeHandle


@pytest.fixture
def fake_openai() -> Iterator[FakeHandle[OpenAIFake]]:
    with fakes.openai.serve() as handle:
        yield handle
