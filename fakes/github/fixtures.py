"""pytest fixture ``fake_github``: a fresh fake GitHub served on 127.0.0.1 (OS-chosen port) for one test.

Yields a ``fakes.server.FakeHandle``: ``handle.url``, ``handle.app`` (the :class:`~fakes.github.FakeGitHub`, for
seeding), ``handle.requests()`` (the journal), ``handle.fault(...)``, ``handle.transport()``. The server and the
fake's webhook worker are stopped when the test ends, on every path.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.github.app import FakeGitHub
from fakes.github.server import serve
from fakes.server import FakeHandle


@pytest.fixture
def fake_github() -> Iterator[FakeHandle[FakeGitHub]]:
    with serve() as handle:
        yield handle
