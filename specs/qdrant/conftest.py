"""Shared fixtures for the fake Qdrant's conformance specs."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from qdrant_client import QdrantClient

from fakes.qdrant import QdrantFake
from fakes.server import FakeHandle, default_tls
from fakes.testing import register_fuzz_marker


def pytest_configure(config: pytest.Config) -> None:
    register_fuzz_marker(config)


@pytest.fixture
def client(fake_qdrant: FakeHandle[QdrantFake]) -> Iterator[QdrantClient]:
    """The real qdrant-client (1.20, REST) on the fake's socket. Its background version check is off here (it would
    race the fixture's teardown); ``test_version_check_passes_without_warning`` runs that check's code directly. Its
    httpx client verifies with one context per process (``verify``, passed through to httpx): the fake serves plain
    http, and a context per client reads the whole CA bundle."""
    qc = QdrantClient(url=fake_qdrant.url, timeout=5, check_compatibility=False, verify=default_tls())
    yield qc
    qc.close()


@pytest.fixture
def raw(fake_qdrant: FakeHandle[QdrantFake]) -> Iterator[httpx.Client]:
    """Plain httpx on the fake, for what no client shows (envelopes, codes, messages)."""
    with httpx.Client(base_url=fake_qdrant.url, timeout=5, verify=default_tls()) as http:
        yield http
