"""The fake Qdrant's REST layer: routes, auth, ``wait``, request decoding (``fakes/qdrant/README.md``, "The wire").

Data lives in qdrant-edge shards (``fakes/qdrant/engine.py``); this module is the wire around them.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from fakes.core import FakeRequest, FakeResponse, NonJsonValue
from fakes.qdrant.engine import DISTANCES, SCHEMA_TYPES, Collection, VectorSpec
from fakes.qdrant.filters import normalize_filter
from fakes.qdrant.wire import (
    QDRANT_COMMIT,
    QDRANT_VERSION,
    PointId,
    QdrantError,
    bad_request,
    collection_missing,
    envelope,
    error_envelope,
    format_error,
    not_modelled,
    parse_path_id,
    parse_point_id,
    query_flag,
    read_body,
    unsigned,
    validation_error,
    wire_id,
    wrong_input,
)

F32_MAX = float(np.finfo(np.float32).max)
#: Qdrant's default ``service.max_request_size_mb`` (qdrant ``config/config.yaml``).
MAX_REQUEST_SIZE_MB = 32
#: ``VectorParams.size`` bounds: ``#[validate(range(min = 1, max = 65536))]`` in Qdrant's API types.
MAX_VECTOR_SIZE = 65536
HEALTH_TEXT = {"/healthz": "healthz check passed", "/livez": "healthz check passed", "/readyz": "all shards are ready"}
NO_AUTH = ("/", "/healthz", "/livez", "/readyz")
_C = r"/collections/(?P<c>[^/]+)"


class _AuthFailed(Exception):
    pass


class QdrantFake:
    """A Qdrant REST server's behaviour as a :class:`~fakes.core.FakeApp`.

    Options: ``api_key`` (require ``api-key: <k>`` or ``Authorization: Bearer <k>``; 401 plain text otherwise);
    ``apply_delay`` (seconds, float: an update sent without ``wait=true`` is acknowledged at once and applied that much
    later, and a failing one is silently dropped, as Qdrant does (qdrant/qdrant#9039); ``None`` applies it before
    answering, still ``acknowledged``); ``max_request_size_mb`` (Qdrant's ``service.max_request_size_mb``, default 32 as
    in qdrant's ``config/config.yaml``: a larger body to a JSON route is a 400, ``src/actix/mod.rs`` ``JsonConfig``).
    """

    name = "qdrant"
    unrecorded_paths = frozenset({"/healthz", "/livez", "/readyz"})

    def __init__(
        self,
        *,
        api_key: str | None = None,
        apply_delay: float | None = None,
        max_request_size_mb: int = MAX_REQUEST_SIZE_MB,
    ) -> None:
        self.api_key = api_key
        self.apply_delay = apply_delay
        self.max_request_bytes = max_request_size_mb * 1024 * 1024
        self._lock = threading.RLock()
        self._root = Path(tempfile.mkdtemp(prefix="fake-qdrant-"))
        # The directory goes when close() runs, or when the fake is garbage-collected, or at interpreter exit,
        # whichever comes first: a forgotten close() cannot leave /tmp/fake-qdrant-* behind.
        self._remove_root = weakref.finalize(self, shutil.rmtree, str(self._root), True)
        self._collections: dict[str, Collection] = {}
        self._timers: set[threading.Timer] = set()
        self._routes: list[tuple[str, re.Pattern[str], Callable[..., Any]]] = [
            ("GET", re.compile(r"/collections"), self.list_collections),
            ("PUT", re.compile(_C), self.create_collection),
            ("GET", re.compile(_C), self.get_collection),
            ("DELETE", re.compile(_C), self.delete_collection),
            ("GET", re.compile(_C + r"/exists"), self.collection_exists),
            ("PUT", re.compile(_C + r"/points"), self.upsert),
            ("POST", re.compile(_C + r"/points"), self.retrieve),
            ("POST", re.compile(_C + r"/points/query"), self.query),
            ("POST", re.compile(_C + r"/points/search"), self.search),
            ("POST", re.compile(_C + r"/points/scroll"), self.scroll),
            ("POST", re.compile(_C + r"/points/count"), self.count),
            ("POST", re.compile(_C + r"/points/payload"), self.set_payload),
            ("PUT", re.compile(_C + r"/points/payload"), self.overwrite_payload),
            ("POST", re.compile(_C + r"/points/payload/delete"), self.delete_payload),
            ("POST", re.compile(_C + r"/points/payload/clear"), self.clear_payload),
            ("POST", re.compile(_C + r"/points/delete"), self.delete_points),
            ("PUT", re.compile(_C + r"/index"), self.create_index),
            ("DELETE", re.compile(_C + r"/index/(?P<field>[^/]+)"), self.delete_index),
            ("GET", re.compile(_C + r"/points/(?P<pid>[^/]+)"), self.get_point),
        ]

    # -- FakeApp ---------------------------------------------------------------------------------------------------

    def handle(self, request: FakeRequest) -> FakeResponse:
        started = time.monotonic()
        path = request.path.rstrip("/") or "/"
        if request.method == "GET" and (path in HEALTH_TEXT or path.startswith(("/readyz/", "/livez/"))):
            return FakeResponse.text(200, HEALTH_TEXT.get(path, HEALTH_TEXT["/readyz"]))
        try:
            self._authorize(request, path)
        except _AuthFailed as exc:
            return FakeResponse.text(401, str(exc))
        if path == "/" and request.method == "GET":
            return FakeResponse.json(
                200, {"title": "qdrant - vector search engine", "version": QDRANT_VERSION, "commit": QDRANT_COMMIT}
            )
        for method, pattern, action in self._routes:
            match = pattern.fullmatch(path)
            if match and method == request.method:
                try:
                    self._check_size(request)
                    result = action(request, **match.groupdict())
                except QdrantError as exc:
                    return error_envelope(exc, started)
                try:
                    return envelope(result, started)
                except NonJsonValue:  # e.g. a Dot score past f32 (real Qdrant's serde_json would print null there)
                    return error_envelope(
                        QdrantError(
                            500,
                            "Service internal error: fake qdrant: the answer holds a "
                            "NaN or infinite number (a score or vector overflowed f32), "
                            "which JSON cannot carry",
                        ),
                        started,
                    )
        return FakeResponse(404, [("content-type", "text/plain; charset=utf-8")], b"")

    @property
    def data_dir(self) -> Path:
        """Where this fake's shards live (a fresh temporary directory, removed by :meth:`close`, or at the latest when
        the fake is garbage-collected or the interpreter exits)."""
        return self._root

    def error_response(self, status: int) -> FakeResponse:
        """The body an injected ``status`` fault carries: Qdrant's error envelope, worded as Qdrant words that status
        (``StorageError`` prefixes; ``fakes/qdrant/README.md``, "The wire")."""
        prefix = {
            400: "Bad request",
            403: "Forbidden",
            404: "Not found",
            408: "Timeout",
            429: "Rate limiting exceeded",
            503: "Shard temporarily unavailable",
        }.get(status, "Service internal error")
        # Qdrant always sends Retry-After with a 429; a fault's own header replaces this one.
        headers = [("retry-after", "1")] if status == 429 else []
        return error_envelope(
            QdrantError(status, f"{prefix}: injected HTTP {status} by the fake", headers), time.monotonic()
        )

    def reset(self) -> None:
        """Drop every collection (and cancel updates still waiting for ``apply_delay``)."""
        with self._lock:
            for timer in list(self._timers):
                timer.cancel()
            self._timers.clear()
            for collection in self._collections.values():
                collection.close()
            self._collections.clear()

    def close(self) -> None:
        """Reset and delete the fake's temporary directory (idempotent)."""
        self.reset()
        self._remove_root()

    def _check_size(self, request: FakeRequest) -> None:
        """actix's JSON extractor refuses a body past the limit before parsing it: 400, its own words (no prefix)."""
        if len(request.body) > self.max_request_bytes:
            raise QdrantError(
                400,
                f"JSON payload ({len(request.body)} bytes) is larger than allowed "
                f"(limit: {self.max_request_bytes} bytes)",
            )

    def _authorize(self, request: FakeRequest, path: str) -> None:
        if self.api_key is None or path in NO_AUTH or path.startswith(("/readyz/", "/livez/")):
            return
        key = request.headers.get("api-key")
        bearer = request.headers.get("authorization", "")
        if key is None and bearer.lower().startswith("bearer "):
            key = bearer[7:].strip()
        if key is None:
            raise _AuthFailed("Must provide an API key or an Authorization bearer token")
        if key != self.api_key:
            raise _AuthFailed("Invalid API key or JWT")

    def _collection(self, name: str) -> Collection:
        with self._lock:
            collection = self._collections.get(name)
        if collection is None:
            raise collection_missing(name)
        return collection

    def _apply(self, request: FakeRequest, collection: Collection, operation: Any) -> dict[str, Any]:
        """Apply an update with Qdrant's ``wait`` semantics (``fakes/qdrant/README.md``, "``wait``")."""
        if query_flag(request, "wait"):
            return {"operation_id": collection.update(operation), "status": "completed"}
        if self.apply_delay is None:
            try:
                op_id = collection.update(operation)
            except QdrantError:  # an acknowledged update that fails is dropped silently (qdrant/qdrant#9039)
                op_id = collection.operation_id
            return {"operation_id": op_id, "status": "acknowledged"}
        op_id = collection.operation_id + 1

        def later() -> None:
            with self._lock:
                self._timers.discard(timer)
                alive = self._collections.get(collection.name) is collection
            if alive:
                with contextlib.suppress(QdrantError):  # a failing unwaited update is dropped, as Qdrant does
                    collection.update(operation)

        timer = threading.Timer(self.apply_delay, later)
        timer.daemon = True
        with self._lock:
            self._timers.add(timer)
        timer.start()
        return {"operation_id": op_id, "status": "acknowledged"}

    # -- collections ---------------------------------------------------------------------------------------------

    def list_collections(self, request: FakeRequest) -> Any:
        with self._lock:
            return {"collections": [{"name": n} for n in self._collections]}

    def create_collection(self, request: FakeRequest, c: str) -> Any:
        if len(c) > 255:
            raise validation_error(
                f"name: value {c} invalid, length must be less than or equal to 255", "path parameters"
            )
        body = read_body(request) if request.body.strip() else {}
        vectors, named, raw = _vector_config(body.get("vectors"))
        if not vectors:  # real Qdrant allows sparse-only / vector-less collections; the edge engine does not
            raise not_modelled("collections without dense vectors")
        with self._lock:
            if c in self._collections:
                raise QdrantError(409, f"Wrong input: Collection `{c}` already exists!")
            self._collections[c] = Collection(c, self._root, vectors, named, raw)
        return True

    def get_collection(self, request: FakeRequest, c: str) -> Any:
        collection = self._collection(c)
        return {
            "status": "green",
            "optimizer_status": "ok",
            "indexed_vectors_count": 0,
            "points_count": collection.points_count(),
            "segments_count": 1,
            "config": {
                "params": {
                    "vectors": collection.raw_config,
                    "shard_number": 1,
                    "replication_factor": 1,
                    "write_consistency_factor": 1,
                    "on_disk_payload": True,
                },
                "hnsw_config": {"m": 16, "ef_construct": 100, "full_scan_threshold": 10000},
                "optimizer_config": {
                    "deleted_threshold": 0.2,
                    "vacuum_min_vector_number": 1000,
                    "default_segment_number": 0,
                    "flush_interval_sec": 5,
                },
                "wal_config": {"wal_capacity_mb": 32, "wal_segments_ahead": 0},
            },
            "payload_schema": collection.indexed_schema(),
        }

    def delete_collection(self, request: FakeRequest, c: str) -> Any:
        with self._lock:
            collection = self._collections.pop(c, None)
        if collection is None:
            return False  # 200 with false, not 404 (Qdrant's ``delete_collection``)
        collection.close()
        return True

    def collection_exists(self, request: FakeRequest, c: str) -> Any:
        with self._lock:
            return {"exists": c in self._collections}

    # -- points --------------------------------------------------------------------------------------------------

    def upsert(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request)
        collection = self._collection(c)
        if "points" in body:
            points = body["points"]
            if not isinstance(points, list):
                raise format_error("points: invalid type, expected a sequence")
            edge_points = [_point(collection, p, i) for i, p in enumerate(points)]
        elif "batch" in body:
            edge_points = _batch(collection, body["batch"])
        else:
            raise format_error("data did not match any variant of untagged enum PointInsertOperations")
        return self._apply(request, collection, qe.UpdateOperation.upsert_points(edge_points))

    def retrieve(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request)
        collection = self._collection(c)
        if "ids" not in body:
            raise format_error("missing field `ids`")
        ids = _ids(body["ids"], "ids")
        wp, wp_on = _with_payload(body.get("with_payload"), True)
        wv, wv_on = _with_vector(body, False)
        records = collection.call("retrieve", ids, wp, wv)
        return [collection.record(r, with_payload=wp_on, with_vector=wv_on) for r in records]

    def get_point(self, request: FakeRequest, c: str, pid: str) -> Any:
        collection = self._collection(c)
        point_id = parse_path_id(pid)
        records = collection.call("retrieve", [point_id], True, True)
        if not records:
            raise QdrantError(404, f"Not found: No point with id {point_id} found")
        return collection.record(records[0], with_payload=True, with_vector=True)

    def query(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request)
        collection = self._collection(c)
        if body.get("prefetch") is not None:
            raise not_modelled("prefetch")
        raw_query = body.get("query")
        if isinstance(raw_query, dict):
            if set(raw_query) != {"nearest"}:
                raise not_modelled(f"query kind {sorted(raw_query)}")
            raw_query = raw_query["nearest"]
        points = self._nearest(collection, body, raw_query, default_limit=10, wp_default=False)
        return {"points": points}

    def search(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request)
        collection = self._collection(c)
        vector = body.get("vector")
        if vector is None:
            raise format_error("missing field `vector`")
        if "limit" not in body:
            raise format_error("missing field `limit`")
        if isinstance(vector, dict):
            body = {**body, "using": vector.get("name")}
            vector = vector.get("vector")
        if not isinstance(vector, list):
            raise format_error("vector: data did not match any variant of untagged enum NamedVectorStruct")
        return self._nearest(collection, body, vector, default_limit=10, wp_default=False)

    def _nearest(
        self, collection: Collection, body: dict[str, Any], raw_query: Any, *, default_limit: int, wp_default: bool
    ) -> list[dict[str, Any]]:
        limit = _positive(body.get("limit"), "limit", default_limit)
        offset = 0 if body.get("offset") is None else unsigned(body["offset"], "offset")
        filt = normalize_filter(body.get("filter"))
        threshold = body.get("score_threshold")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))):
            raise format_error("score_threshold: invalid type, expected f32")
        using = body.get("using")
        wp, wp_on = _with_payload(body.get("with_payload"), wp_default)
        wv, wv_on = _with_vector(body, False)
        query = None
        if raw_query is not None:
            if isinstance(raw_query, list):
                vector = _floats(raw_query, "query")
            else:  # nearest to a stored point, which is itself excluded (``exclude_referenced_ids``)
                point_id = parse_point_id(raw_query)
                vector = collection.vector_of(point_id, using or "")
                exclude = {"must_not": [{"has_id": [point_id]}]}
                filt = {**exclude, "must": [filt]} if filt else exclude
            query = qe.Query.Nearest(vector, using=using)
        elif threshold is not None:
            raise bad_request(
                "A query is needed to use the score_threshold. Specify a query or remove the score_threshold"
            )
        with collection.lock:
            edge_request = qe.QueryRequest(
                limit=limit,
                offset=offset,
                query=query,
                filter=collection.edge_filter(filt),
                score_threshold=None if threshold is None else float(threshold),
                with_payload=wp,
                with_vector=wv,
            )
            scored = collection.call("query", edge_request)
        return [collection.record(p, with_payload=wp_on, with_vector=wv_on, scored=True) for p in scored]

    def scroll(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request)
        collection = self._collection(c)
        if body.get("order_by") is not None:
            raise not_modelled("scroll order_by")
        limit = _positive(body.get("limit"), "limit", 10)
        offset = None if body.get("offset") is None else parse_point_id(body["offset"])
        filt = normalize_filter(body.get("filter"))
        wp, wp_on = _with_payload(body.get("with_payload"), True)
        wv, wv_on = _with_vector(body, False)
        with collection.lock:
            records, next_offset = collection.call(
                "scroll",
                qe.ScrollRequest(
                    offset=offset, limit=limit, filter=collection.edge_filter(filt), with_payload=wp, with_vector=wv
                ),
            )
        return {
            "points": [collection.record(r, with_payload=wp_on, with_vector=wv_on) for r in records],
            "next_page_offset": None if next_offset is None else wire_id(next_offset),
        }

    def count(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request) if request.body.strip() else {}
        collection = self._collection(c)
        exact = body.get("exact", True)
        if not isinstance(exact, bool):
            raise format_error("exact: invalid type, expected a boolean")
        return {"count": collection.count(normalize_filter(body.get("filter")), exact)}

    # -- payload and deletes -------------------------------------------------------------------------------------

    def set_payload(self, request: FakeRequest, c: str) -> Any:
        return self._payload_op(request, c, "set_payload")

    def overwrite_payload(self, request: FakeRequest, c: str) -> Any:
        return self._payload_op(request, c, "overwrite_payload")

    def _payload_op(self, request: FakeRequest, c: str, op: str) -> Any:
        body = read_body(request)
        collection = self._collection(c)
        payload = body.get("payload")
        if not isinstance(payload, dict):
            raise format_error(
                "payload: invalid type, expected a map" if "payload" in body else "missing field `payload`"
            )
        return self._apply_selected(request, collection, body, op, payload, body.get("key"))

    def delete_payload(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request)
        collection = self._collection(c)
        keys = body.get("keys")
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise format_error(
                "keys: invalid type, expected a sequence of strings" if "keys" in body else "missing field `keys`"
            )
        return self._apply_selected(request, collection, body, "delete_payload", keys)

    def clear_payload(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request)  # a malformed body is reported before a missing collection, as before
        return self._apply_selected(request, self._collection(c), body, "clear_payload")

    def delete_points(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request)  # a malformed body is reported before a missing collection, as before
        return self._apply_selected(request, self._collection(c), body, "delete_points")

    def _apply_selected(self, request: FakeRequest, collection: Any, body: dict[str, Any], op: str, *args: Any) -> Any:
        """Apply engine operation ``op`` to the points the body selects: ``op(ids, *args)`` for ``points``,
        ``op_by_filter(filter, *args)`` for ``filter`` (the engine's own naming of the two forms)."""
        ids, filt = _selector(body)
        with collection.lock:
            if ids is not None:
                operation = getattr(qe.UpdateOperation, op)(ids, *args)
            else:
                operation = getattr(qe.UpdateOperation, op + "_by_filter")(collection.edge_filter(filt), *args)
            return self._apply(request, collection, operation)

    def create_index(self, request: FakeRequest, c: str) -> Any:
        body = read_body(request)
        collection = self._collection(c)
        field = body.get("field_name")
        if not isinstance(field, str):
            raise format_error("missing field `field_name`")
        schema = body.get("field_schema")
        kind = schema.get("type") if isinstance(schema, dict) else schema
        if kind not in SCHEMA_TYPES:
            raise format_error(
                f"field_schema: unknown variant `{kind}`, expected one of " + ", ".join(f"`{k}`" for k in SCHEMA_TYPES)
            )
        result = self._apply(request, collection, qe.UpdateOperation.create_field_index(field, SCHEMA_TYPES[kind]))
        collection.payload_schema[field] = kind  # recorded only: text-index tokenizer settings are not modelled
        return result

    def delete_index(self, request: FakeRequest, c: str, field: str) -> Any:
        collection = self._collection(c)
        result = self._apply(request, collection, qe.UpdateOperation.delete_field_index(field))
        collection.payload_schema.pop(field, None)
        return result


# -- request decoding helpers ----------------------------------------------------------------------------------------


def _vector_config(raw: Any) -> tuple[dict[str, VectorSpec], bool, Any]:
    if raw is None:
        return {}, True, {}
    if not isinstance(raw, dict):
        raise format_error("vectors: data did not match any variant of untagged enum VectorsConfig")
    if "size" in raw or "distance" in raw:
        return {"": _vector_params(raw, "vectors")}, False, {"size": raw.get("size"), "distance": raw.get("distance")}
    specs = {name: _vector_params(params, f"vectors.{name}") for name, params in raw.items()}
    return specs, True, {n: {"size": s.size, "distance": s.distance} for n, s in specs.items()}


def _vector_params(raw: Any, where: str) -> VectorSpec:
    if not isinstance(raw, dict) or "size" not in raw or "distance" not in raw:
        raise format_error(f"{where}: missing field `size` or `distance`")
    size, distance = raw["size"], raw["distance"]
    size = unsigned(size, f"{where}.size", "u64")
    if not 1 <= size <= MAX_VECTOR_SIZE:  # validator's range message with both bounds (``validation.rs``)
        raise validation_error(f"{where}.size: value {size} invalid, must be from 1 to {MAX_VECTOR_SIZE}")
    if distance not in DISTANCES:
        raise format_error(
            f"{where}.distance: unknown variant `{distance}`, expected one of `Cosine`, `Euclid`, `Dot`, `Manhattan`"
        )
    return VectorSpec(size, distance)


def _positive(value: Any, name: str, default: int) -> int:
    if value is None:
        return default
    number = unsigned(value, name)
    if number < 1:
        raise validation_error(f"{name}: value {number} invalid, must be 1 or larger")
    return number


def _floats(values: Any, where: str) -> list[float]:
    if not isinstance(values, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
        raise format_error(f"{where}: invalid type, expected a sequence of numbers")
    floats = [float(x) for x in values]
    # Vectors are f32: a component past f32's range would be stored as infinity and make scores NaN/inf. The fake
    # refuses it (stricter than serde's `as f32` cast; fakes/qdrant/README.md, "Malformed and hostile JSON").
    if floats and float(np.max(np.abs(floats))) > F32_MAX:
        raise format_error(f"{where}: number out of range for f32 (|x| > {F32_MAX:.8e})")
    return floats


def _ids(values: Any, where: str) -> list[PointId]:
    if not isinstance(values, list):
        raise format_error(f"{where}: invalid type, expected a sequence")
    return [parse_point_id(v) for v in values]


def _point(collection: Collection, raw: Any, index: int) -> qe.Point:
    if not isinstance(raw, dict):
        raise format_error(f"points[{index}]: invalid type, expected struct PointStruct")
    if "id" not in raw:
        raise format_error(f"points[{index}]: missing field `id`")
    point_id = parse_point_id(raw["id"])
    vector = raw.get("vector", raw.get("vectors"))
    if vector is None:
        raise format_error(f"points[{index}]: missing field `vector`")
    payload = raw.get("payload")
    if payload is not None and not isinstance(payload, dict):
        raise format_error(f"points[{index}].payload: invalid type, expected a map")
    return qe.Point(point_id, _vector(vector, f"points[{index}].vector"), payload or {})


def _vector(raw: Any, where: str) -> Any:
    if isinstance(raw, dict):
        return {name: _floats(v, f"{where}.{name}") for name, v in raw.items()}
    return _floats(raw, where)


def _batch(collection: Collection, raw: Any) -> list[qe.Point]:
    if not isinstance(raw, dict) or "ids" not in raw or "vectors" not in raw:
        raise format_error("batch: missing field `ids` or `vectors`")
    ids = _ids(raw["ids"], "batch.ids")
    vectors = raw["vectors"]
    payloads = raw.get("payloads") or [None] * len(ids)
    if isinstance(vectors, dict):
        columns = {name: list(v) for name, v in vectors.items()}
        if any(len(col) != len(ids) for col in columns.values()):
            raise wrong_input("number of ids and vectors must be equal")
        per_point = [{name: col[i] for name, col in columns.items()} for i in range(len(ids))]
    elif isinstance(vectors, list):
        if len(vectors) != len(ids):
            raise wrong_input("number of ids and vectors must be equal")
        per_point = vectors
    else:
        raise format_error("batch.vectors: data did not match any variant of untagged enum BatchVectorStruct")
    if not isinstance(payloads, list) or len(payloads) != len(ids):
        raise wrong_input("number of ids and payloads must be equal")
    return [
        qe.Point(pid, _vector(v, f"batch.vectors[{i}]"), p or {})
        for i, (pid, v, p) in enumerate(zip(ids, per_point, payloads, strict=True))
    ]


def _selector(body: dict[str, Any]) -> tuple[list[PointId] | None, dict[str, Any] | None]:
    """``points: [ids]`` or ``filter: {...}`` (ids win, as in Qdrant's ``PointsSelector`` order)."""
    if body.get("points") is not None:
        return _ids(body["points"], "points"), None
    if "filter" in body and body["filter"] is not None:
        return None, normalize_filter(body["filter"]) or {}
    raise format_error("data did not match any variant of untagged enum PointsSelector")


def _with_payload(value: Any, default: bool) -> tuple[Any, bool]:
    """(engine selector, whether the payload key is filled) for ``true/false``, ``[keys]``, include, exclude."""
    if value is None:
        return default, default
    if isinstance(value, bool):
        return value, value
    if isinstance(value, list) and all(isinstance(k, str) for k in value):
        return qe.PayloadSelector.Include(value), True
    if isinstance(value, dict) and len(value) == 1:
        ((kind, keys),) = value.items()
        if kind in ("include", "exclude") and isinstance(keys, list):
            return (qe.PayloadSelector.Include(keys) if kind == "include" else qe.PayloadSelector.Exclude(keys)), True
    raise format_error("with_payload: data did not match any variant of untagged enum WithPayloadInterface")


def _with_vector(body: dict[str, Any], default: bool) -> tuple[Any, bool]:
    value = body.get("with_vector", body.get("with_vectors"))
    if value is None:
        return default, default
    if isinstance(value, bool):
        return value, value
    if isinstance(value, list) and all(isinstance(k, str) for k in value):
        return value, True
    raise format_error("with_vector: data did not match any variant of untagged enum WithVector")
