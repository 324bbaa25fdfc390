"""The README's way to get a client for the fake Qdrant gives no warning and a working client."""

from __future__ import annotations

import warnings

import pytest
from qdrant_client.models import Distance, PointStruct, VectorParams

import fakes.qdrant
from fakes.qdrant.client import ready_client


@pytest.mark.parametrize("how", ["in_process", "serve"])
def test_ready_client_warns_nothing_and_round_trips(how: str) -> None:
    start = fakes.qdrant.in_process if how == "in_process" else fakes.qdrant.serve
    with start() as fq, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client = ready_client(fq)
        try:
            client.create_collection("docs", vectors_config=VectorParams(size=2, distance=Distance.DOT))
            client.upsert("docs", [PointStruct(id=1, vector=[1.0, 0.0], payload={"k": "v"})], wait=True)
            assert client.count("docs", exact=True).count == 1
        finally:
            client.close()
    assert [str(w.message) for w in caught] == []
