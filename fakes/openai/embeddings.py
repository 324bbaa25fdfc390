"""``POST /v1/embeddings``: deterministic vectors from the input text, so a Qdrant-backed retrieval ranks the same way
on every run and in every process.

A vector is feature hashing over the text: each lower-cased word (weight 1) and each character trigram of a word
(weight 0.5) lands in a dimension chosen by its BLAKE2b hash, with a hashed sign, and the sum is scaled to unit length
(the real API's vectors are unit length too, so cosine and dot product agree). Texts sharing words are close;
identical texts are identical; nothing depends on a seed or the process. Token-id inputs hash the ids.

Wire: ``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage":
{"prompt_tokens", "total_tokens"}}``; ``embedding`` is a float list, or with ``encoding_format: "base64"`` (what the
``openai`` Python client asks for by default) the little-endian float32 bytes in base64. ``dimensions`` (only the
``text-embedding-3`` models) must be 1 to the model's own size. Refusals: ``'$.input' is invalid`` for an empty
string or an input of the wrong shape, more than 2048 inputs, a chat model (wording modelled).
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import numpy as np
from openai.types import CreateEmbeddingResponse

from fakes.openai import errors
from fakes.openai.catalog import Catalog, ModelInfo
from fakes.openai.errors import ApiError
from fakes.openai.validate import json_object
from fakes.openai.wire import checked, estimate_tokens

MAX_INPUTS = 2048
_WORD = re.compile(r"\w+")
_FIELDS = {"input", "model", "dimensions", "encoding_format", "user"}


def _features(text: str) -> list[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    features = [(w, 1.0) for w in words]
    for word in words:
        padded = f" {word} "
        features += [(padded[i : i + 3], 0.5) for i in range(len(padded) - 2)]
    return features or [(text, 1.0)]


def embed(text: str, dimensions: int) -> np.ndarray:
    """The unit-length float32 vector of ``text`` with ``dimensions`` components."""
    vector = np.zeros(dimensions, dtype=np.float64)
    for feature, weight in _features(text):
        digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        bucket = int.from_bytes(digest, "little")
        vector[bucket % dimensions] += weight if bucket >> 63 else -weight
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:  # every feature cancelled out: fall back to one hashed axis, still deterministic
        vector[
            int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
            % dimensions
        ] = 1.0
        norm = 1.0
    return (vector / norm).astype(np.float32)


def _inputs(value: Any) -> list[str]:
    """The texts to embed; token-id arrays become ``"tokens:1,2,3"`` texts."""
    if isinstance(value, str):
        items: list[Any] = [value]
    elif isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        items = [value]
    elif isinstance(value, list):
        items = value
    else:
        raise errors.invalid_input()
    if not items:
        raise errors.invalid_input()
    if len(items) > MAX_INPUTS:
        raise errors.array_too_long("input", MAX_INPUTS, len(items))
    texts = []
    for item in items:
        if isinstance(item, str) and item:
            texts.append(item)
        elif isinstance(item, list) and item and all(isinstance(v, int) and not isinstance(v, bool) for v in item):
            texts.append("tokens:" + ",".join(map(str, item)))
        else:
            raise errors.invalid_input()
    return texts


def _dimensions(body: dict[str, Any], model: ModelInfo) -> int:
    assert model.dimensions is not None
    value = body.get("dimensions")
    if value is None:
        return model.dimensions
    if not isinstance(value, int) or isinstance(value, bool):
        raise errors.wrong_type("dimensions", "an integer", value)
    if not model.custom_dimensions:
        raise ApiError(400, "This model does not support specifying dimensions.")
    if not 1 <= value <= model.dimensions:
        raise ApiError(
            400,
            f"Invalid value for 'dimensions' = {value}. Must be between 1 and {model.dimensions}.",
            param="dimensions",
            code="invalid_value",
        )
    return value


def create(body: Any, catalog: Catalog) -> dict[str, Any]:
    """The embeddings answer for ``body``; raises :class:`ApiError` as the real endpoint refuses it."""
    body = json_object(body)
    name = body.get("model")
    if name is None:
        raise errors.no_model()
    if not isinstance(name, str):
        raise errors.wrong_type("model", "a string", name)
    for key in body:
        if key not in _FIELDS:
            raise errors.unrecognized_argument(key)
    model = catalog.find(name)
    if model is None:
        raise errors.unknown_model(name)
    if model.kind != "embedding":
        raise ApiError(400, "You are not allowed to generate embeddings from this model")
    if "input" not in body:
        raise errors.missing("input")
    texts = _inputs(body["input"])
    dimensions = _dimensions(body, model)
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise errors.bad_value(
            "encoding_format", encoding if isinstance(encoding, str) else repr(encoding), ["float", "base64"]
        )
    vectors = [embed(text, dimensions) for text in texts]
    tokens = estimate_tokens(*texts)
    data: list[dict[str, Any]] = [
        {"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)
    ]
    payload = {
        "object": "list",
        "data": data,
        "model": name,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    checked(CreateEmbeddingResponse, payload)
    if encoding == "base64":  # checked as floats above; the client decodes these bytes back to the same floats
        for item, vector in zip(data, vectors, strict=True):
            item["embedding"] = base64.b64encode(vector.astype("<f4").tobytes()).decode()
    return payload
