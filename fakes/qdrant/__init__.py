"""A fake Qdrant that qdrant-client cannot tell from the real one, with fault injection (issue #4).

Engine: the data behind the REST layer lives in **qdrant-edge-py 0.9** shards, Qdrant's own Rust shard/segment engine
running in-process (``fakes/qdrant/engine.py``). Why edge and not qdrant-client's local mode: edge *is* the server's
engine (filters, scoring, Cosine normalization at insert, payload merge, id order, engine error texts), where local
mode is a Python re-implementation that tracks it (fakes-api.md §0.3, §2.14). Local mode is the second opinion the
differential suite (``specs/qdrant/test_differential.py``) compares against, and it evaluates the one thing the edge
binding gets wrong: ``match: {value: true}`` (the binding coerces ``True`` to ``1``), see ``fakes/qdrant/filters.py``.

Server version matched: **1.20.0**, reported by ``GET /``. The edge 0.9.0 wheel's SBOM
(``qdrant_edge_py-0.9.0.dist-info/sboms``) records Qdrant's ``api`` crate at ``1.20.1-dev``: the engine was built
from the dev branch after the 1.20.0 release, so it carries the ≥ 1.19.1 unindexed ``match.text`` rule (word tokens,
lower-cased, every query token present, any order; qdrant#10341) and not the ≤ 1.19.0 substring rule. qdrant-client
1.20 accepts 1.20 without a compatibility warning. Text-index tokenizer settings are recorded, not modelled.

Where the engines disagree, the fake follows the engine (it *is* the engine) and a spec pins each case, so a change
on either side shows up at once: (1) the edge binding's ``MatchValue(True)`` → ``1`` coercion is a binding artifact,
worked around as above; (2) ``should: []`` inside ``nested`` matches nothing in the engine, everything in local mode;
(3) the field-flag form ``{"key": "x[]", "is_empty": true}`` is true for ``["c", null]`` in the engine, false in local
mode (and in the engine's own ``{"is_empty": {"key": ...}}`` form); (4) ``set_payload`` with a null on a point whose
payload was cleared stores the null in the engine and drops it in local mode. See ``specs/qdrant/test_differential.py``
and ``specs/qdrant/test_mutation_differential.py``.

The wire (envelopes, error codes and messages, auth, point ids, ``wait``) is the fake's own code, from the server
source as quoted in ``shared/reference/fakes-api.md`` §2 (``fakes/qdrant/wire.py``, ``fakes/qdrant/app.py``). Known
wire differences: messages of 400 ``Format error in JSON body`` keep Qdrant's prefix and gist but not serde's exact
wording or its ``at line L column C`` suffix (type errors of sizes, limits and offsets do name the value sent as
serde_json does: ``invalid type: string "4", expected u64``, ``invalid value: integer `-5`, expected usize``);
unsupported query kinds, ``prefetch``, scroll ``order_by`` and geo conditions, and collections without a dense
vector answer 501 naming the feature instead of a wrong result.

Malformed and hostile JSON (``fakes.core.FakeRequest.json``): nesting past serde_json's recursion limit of 128,
``NaN``/``Infinity`` and floats past f64 are 400 ``Format error in JSON body`` with serde's gist (``recursion limit
exceeded``, ``expected value``, ``number out of range``); an integer beyond u64/i64 is read as an f64 as serde_json
does (so ``limit: 1e20`` is a 400 type error and a payload keeps it as a float). Deliberately stricter than Qdrant
(unverified what the server does, serde casts with ``as f32``): a vector component past f32's range is refused with
400 instead of being stored as infinity. An answer that would hold NaN or an infinity (a Dot score overflowing f32;
Qdrant's serde_json would print ``null``) is a 500 ``Service internal error`` naming it, never invalid JSON.

Size limits, checked in qdrant/qdrant's source (trial finding 6): vector ``size`` is validated to 1..=65536
(``#[validate(range(min = 1, max = 65536))]`` on ``VectorParams.size``, seen in the generated gRPC types; qdrant-edge
re-applies the same bound and says it mirrors the REST ``VectorParams``), so 0 or 65537 is a 422 worded by
``lib/collection/src/operations/validation.rs`` (``must be from 1 to 65536``). The JSON body limit is
``service.max_request_size_mb`` (``config/config.yaml``: 32) × 1024², given to ``actix_web_validator::JsonConfig``
in ``src/actix/mod.rs``; a larger body is a 400 whose message is actix's own text (no ``Format error`` prefix).
Not verified, modelled as best understood: the exact wording of that 400 (actix-web's ``JsonPayloadError``
display, which varies by actix version), whether REST's ``size`` is a ``NonZeroU64`` (0 would then be a 400 serde
error, not a 422), and that the limit applies to every JSON route alike. The fake reads the whole body before
refusing it (actix stops reading at the limit), so the refusal is faithful but its memory use is not.

Use::

    with fakes.qdrant.serve() as fq:                     # a real socket on 127.0.0.1:<OS port>
        client = QdrantClient(url=fq.url)
    with fakes.qdrant.in_process() as fq:                # no socket
        client = QdrantClient(url=fq.url, transport=fq.transport())
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from fakes.qdrant.app import QdrantFake
from fakes.qdrant.wire import QDRANT_VERSION
from fakes.runtime import FakeRuntime
from fakes.server import FakeHandle, serve_fake

__all__ = ["QDRANT_VERSION", "InProcessQdrant", "QdrantFake", "in_process", "serve"]


class InProcessQdrant(FakeHandle[QdrantFake]):
    """A :class:`~fakes.server.FakeHandle` on a fake Qdrant with no socket, which owns the fake's temporary directory.

    Use it as a context manager (``with in_process() as fq:``) or call :meth:`close`; if neither happens, the
    directory is still removed when the fake is garbage-collected or at interpreter exit (``weakref.finalize``).
    """

    def close(self) -> None:
        """Drop every collection and delete the temporary directory (idempotent)."""
        self.app.close()

    def __enter__(self) -> InProcessQdrant:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextlib.contextmanager
def serve(host: str = "127.0.0.1", port: int = 0, **options: Any) -> Iterator[FakeHandle[QdrantFake]]:
    """Serve a fresh fake Qdrant on ``host:port`` (0 = OS-chosen) in a thread; yields its ``FakeHandle``.

    ``options`` go to :class:`QdrantFake` (``api_key``, ``apply_delay``). The fake's temporary files are removed on
    exit. Raises ``fakes.server.FakeServerError`` if the server does not start or stop within its bound.
    """
    app = QdrantFake(**options)
    try:
        with serve_fake(app, host, port) as handle:
            yield handle
    finally:
        app.close()


def in_process(**options: Any) -> InProcessQdrant:
    """A fake Qdrant with no socket, reached through ``handle.transport()`` / ``async_transport()`` at ``handle.url``
    (``http://qdrant.fake``). ``options`` as for :func:`serve`. Use ``with in_process() as fq:`` (or ``fq.close()``);
    its temporary directory is removed at garbage collection or exit at the latest, so it cannot leak."""
    app = QdrantFake(**options)
    return InProcessQdrant(FakeRuntime(app), f"http://{app.name}.fake", served=False)
