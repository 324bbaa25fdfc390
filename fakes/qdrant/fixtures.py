"""pytest fixture ``fake_qdrant``: a fresh fake Qdrant on a real socket per test (listed in the root conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakes.qdrant
from fakes.qdrant import QdrantFake
from fakes.server import FakeHandle


@pytest.fixture
def fake_qdrant() -> Iterator[FakeHandle[QdrantFake]]:
    """A served fake Qdrant (``.url``, ``.requests()``, ``.fault()``, ``.reset()``, ``.transport()``); stopped after
    the test, its thread, socket and files gone."""
    with fakes.qdrant.serve() as handle:
        yield handle
