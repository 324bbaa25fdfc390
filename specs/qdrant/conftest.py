"""Shared fixtures for the fake Qdrant's conformance specs (issue #4)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import httpx
import pytest
from qdrant_client import QdrantClient


@pytest.fixture
def client(fake_qdrant) -> Iterator[QdrantClient]:
    """The real qdrant-client (1.20, REST) on the fake's socket, version check on (a warning fails the spec)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        qc = QdrantClient(url=fake_qdrant.url, timeout=5, check_compatibility=False)
    yield qc
    qc.close()


@pytest.fixture
def raw(fake_qdrant) -> Iterator[httpx.Client]:
    """Plain httpx on the fake, for what no client shows (envelopes, codes, messages)."""
    with httpx.Client(base_url=fake_qdrant.url, timeout=5) as http:
        yield http
