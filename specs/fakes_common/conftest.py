"""Fixtures for specs of the shared fake machinery: an echo fake served on a socket, and a leak check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.server import FakeHandle, serve_fake
from fakes.testing import no_leaks as leak_check
from specs.fakes_common.echo import EchoFake


@pytest.fixture
def no_leaks() -> Iterator[None]:
    """Fail the test if threads or file descriptors are not back to baseline after it (bounded settle: 5 s)."""
    with leak_check():
        yield


@pytest.fixture
def echo(no_leaks: None) -> Iterator[FakeHandle[EchoFake]]:
    with serve_fake(EchoFake()) as handle:
        yield handle
