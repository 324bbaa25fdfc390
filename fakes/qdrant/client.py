"""A ready ``QdrantClient`` for a fake Qdrant, in-process or served.

qdrant-client checks the server's version in a background thread with a bare ``httpx.get`` on the client's
URL, outside any transport it was given; for an in-process fake (``http://qdrant.fake``) that lookup fails and
the client warns ``Failed to obtain server version`` from its thread. :func:`ready_client` turns that probe off
and makes the same check through the client itself (``GET /``, the way every other call of the client goes),
before handing the client over.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

from qdrant_client import QdrantClient
from qdrant_client.common.version_check import is_compatible

from fakes.server import FakeHandle


def ready_client(fake: FakeHandle, *, timeout: int = 10, **options: Any) -> QdrantClient:
    """A ``QdrantClient`` on ``fake`` (its transport when in-process, its socket when served) that has answered.

    ``timeout`` (seconds) and ``options`` go to ``QdrantClient`` (``api_key=...`` for a fake started with one).
    The client's own version probe is off (``check_compatibility=False``); instead ``GET /`` is sent through the
    client and its version compared as qdrant-client compares it (same major, minors at most 1 apart). Raises
    ``RuntimeError`` when they do not fit, or the client's error when the fake does not answer. Close the client
    when done (``client.close()``).
    """
    if not fake.served:
        options["transport"] = fake.transport()
    client = QdrantClient(url=fake.url, timeout=timeout, check_compatibility=False, **options)
    try:
        server = client.info().version
        ours = importlib.metadata.version("qdrant-client")
        if not is_compatible(ours, server):
            raise RuntimeError(
                f"qdrant-client {ours} does not fit the fake's server version {server}: "
                "major versions must match and minors be at most 1 apart"
            )
    except BaseException:
        client.close()
        raise
    return client
