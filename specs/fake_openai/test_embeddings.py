"""The fake's embeddings are deterministic across processes and runs (no hash seed), unit length, and rank texts that
share words closer, so a Qdrant-backed retrieval behaves the same every run."""

from __future__ import annotations

import hashlib
import sys

import numpy as np

from fakes.openai import embed
from harness.process import run_bounded

PROBE = (
    "import hashlib, fakes.openai as f; "
    "print(hashlib.sha256(f.embed('Battery of SN-4417', 1536).tobytes()).hexdigest())"
)


def test_the_same_text_gives_the_same_vector_in_another_process() -> None:
    here = hashlib.sha256(embed("Battery of SN-4417", 1536).tobytes()).hexdigest()
    there = run_bounded([sys.executable, "-c", PROBE], timeout=60.0)
    assert there.returncode == 0, there.stderr
    assert there.stdout.strip() == here


def test_vectors_are_unit_length_and_sized() -> None:
    for dims in (1, 8, 1536, 3072):
        vector = embed("some words here", dims)
        assert vector.shape == (dims,)
        assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)
    assert np.isclose(np.linalg.norm(embed("!!!", 64)), 1.0, atol=1e-5)  # no word at all still has a direction


def test_texts_sharing_words_rank_closer() -> None:
    query = embed("device battery level", 1536)
    near = float(query @ embed("get the battery level of a device by serial number", 1536))
    far = float(query @ embed("weather forecast for tomorrow in Oslo", 1536))
    assert near > far
    assert float(query @ embed("device battery level", 1536)) > 0.999
