"""One collection = one qdrant-edge shard (Qdrant's own Rust engine, in-process) in a temporary directory.

This module only converts between the wire's JSON and the engine's objects; matching, scoring, normalization,
payload merging and id order are the engine's. Engine errors are mapped to the HTTP errors the server gives for
them (``No point with id 3`` → 404 ``Not found: No point with id 3 found``; dimension and vector-name errors → 400
``Wrong input: …``).
"""

from __future__ import annotations

import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from fakes.qdrant.filters import has_bool_match, local_mode_matches, to_edge
from fakes.qdrant.wire import QdrantError, f32, not_found, wire_id, wrong_input

DISTANCES = {
    "Cosine": qe.Distance.Cosine,
    "Dot": qe.Distance.Dot,
    "Euclid": qe.Distance.Euclid,
    "Manhattan": qe.Distance.Manhattan,
}
SCHEMA_TYPES = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "float": qe.PayloadSchemaType.Float,
    "geo": qe.PayloadSchemaType.Geo,
    "text": qe.PayloadSchemaType.Text,
    "bool": qe.PayloadSchemaType.Bool,
    "datetime": qe.PayloadSchemaType.Datetime,
    "uuid": qe.PayloadSchemaType.Uuid,
}
_MISSING_POINT = re.compile(r"No point with id (\S+?)( found)?$")


@dataclass(frozen=True)
class VectorSpec:
    size: int
    distance: str


def engine_error(exc: Exception) -> QdrantError:
    """The server's answer for an engine exception."""
    message = str(exc)
    missing = _MISSING_POINT.search(message)
    if missing:
        return not_found(f"No point with id {missing.group(1)} found")
    return wrong_input(message)


class Collection:
    """A collection's config and its engine shard; all calls are serialized by ``lock``."""

    def __init__(
        self, name: str, root: Path, vectors: dict[str, VectorSpec], named: bool, raw_config: dict[str, Any]
    ) -> None:
        self.name = name
        self.vectors = vectors
        self.named = named
        self.raw_config = raw_config
        self.payload_schema: dict[str, str] = {}
        self.operation_id = 0
        self.lock = threading.RLock()
        self.path = root / f"{len(list(root.iterdir()))}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:100]}"
        config = qe.EdgeConfig(
            vectors={n: qe.EdgeVectorParams(size=v.size, distance=DISTANCES[v.distance]) for n, v in vectors.items()}
        )
        self.shard = qe.EdgeShard.create(str(self.path), config)

    def close(self) -> None:
        """Close the shard and delete its files."""
        with self.lock:
            try:
                self.shard.close()
            finally:
                shutil.rmtree(self.path, ignore_errors=True)

    # -- conversions ---------------------------------------------------------------------------------------------

    def edge_filter(self, filt: dict[str, Any] | None) -> qe.Filter | None:
        return to_edge(filt, self._resolve_locally)

    def _resolve_locally(self, cond: dict[str, Any]) -> set[Any]:
        points = self._all_points(with_payload=True)
        return local_mode_matches(cond, [(r.id, r.payload) for r in points])

    def _all_points(self, *, with_payload: bool) -> list[qe.Record]:
        total = self.shard.count(qe.CountRequest(exact=True))
        if total == 0:
            return []
        records, _ = self.shard.scroll(qe.ScrollRequest(limit=total, with_payload=with_payload, with_vector=False))
        return records

    def edge_vector(self, vector: Any) -> Any:
        """A point's vector from the wire: a list for the unnamed vector, an object for named ones."""
        if isinstance(vector, dict):
            return {name: [float(x) for x in values] for name, values in vector.items()}
        return [float(x) for x in vector]

    def wire_vector(self, vector: Any) -> Any:
        if vector is None:
            return None
        if isinstance(vector, dict):
            if not self.named and set(vector) == {""}:
                return [f32(x) for x in vector[""]]
            return {name: [f32(x) for x in values] for name, values in vector.items()}
        return [f32(x) for x in vector]

    def record(self, rec: Any, *, with_payload: bool, with_vector: bool, scored: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"id": wire_id(rec.id)}
        if scored:
            out["version"] = rec.version
            out["score"] = f32(rec.score)
        # Qdrant serializes both keys, null when not requested (api ``Record`` / ``ScoredPoint``).
        out["payload"] = (rec.payload if rec.payload is not None else {}) if with_payload else None
        out["vector"] = self.wire_vector(rec.vector) if with_vector else None
        return out

    # -- operations ----------------------------------------------------------------------------------------------

    def update(self, operation: Any) -> int:
        """Apply one update; returns its operation id. Raises the mapped ``QdrantError`` on an engine error."""
        with self.lock:
            self.operation_id += 1
            try:
                self.shard.update(operation)
            except QdrantError:
                raise
            except Exception as exc:
                raise engine_error(exc) from None
            return self.operation_id

    def call(self, method: str, *args: Any) -> Any:
        with self.lock:
            try:
                return getattr(self.shard, method)(*args)
            except QdrantError:
                raise
            except Exception as exc:
                raise engine_error(exc) from None

    def count(self, filt: dict[str, Any] | None, exact: bool) -> int:
        with self.lock:
            counted: int = self.call("count", qe.CountRequest(exact=exact, filter=self.edge_filter(filt)))
            return counted

    def points_count(self) -> int:
        info: qe.ShardInfo = self.call("info")
        return info.points_count

    def indexed_schema(self) -> dict[str, Any]:
        info = self.call("info")
        out = {}
        for name, data_type in self.payload_schema.items():
            entry = info.payload_schema.get(name) if isinstance(info.payload_schema, dict) else None
            out[name] = {"data_type": data_type, "points": getattr(entry, "points", 0) if entry else 0}
        return out

    def vector_of(self, point_id: Any, using: str) -> list[float]:
        """The stored vector ``using`` of ``point_id`` (for a nearest-by-id query); 404 if the point is missing."""
        records = self.call("retrieve", [point_id], False, True)
        if not records:
            raise not_found(f"No point with id {point_id} found")
        vector = records[0].vector
        if isinstance(vector, dict):
            if using not in vector:
                raise wrong_input(f"Not existing vector name error: {using}")
            named: list[float] = vector[using]
            return named
        unnamed: list[float] = vector
        return unnamed

    def needs_local(self, filt: dict[str, Any] | None) -> bool:
        return has_bool_match(filt)
