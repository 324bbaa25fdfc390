"""Filters: Qdrant's JSON DSL checked as the server checks it, then handed to Qdrant's engine (qdrant-edge).

What is ours: the *wire* checks (an unknown key inside a ``Filter`` is 400; ``must``/``should``/``must_not`` accept a
single object; ``has_id`` ids are u64 or UUID; a field condition with only ``key`` is 422) and the translation to
``qdrant_edge`` objects. What is not ours: every matching rule, which the engine applies.

One binding quirk is worked around (``fakes/qdrant/README.md``, "Engine"): qdrant-edge-py 0.9 coerces
``MatchValue(True)`` to the integer 1, so ``match: {value: true}`` would match ``1`` and miss ``true``. A condition
holding a boolean match is therefore evaluated by qdrant-client's local-mode checker
(``qdrant_client.local.payload_filters``, Qdrant's own Python port of the same rules) over the stored payloads, and
handed to the engine as the equivalent ``has_id`` set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import qdrant_edge as qe
from pydantic import BaseModel
from qdrant_client.http import models

from fakes.qdrant.wire import format_error, parse_point_id, validate, validation_error

FILTER_KEYS = ("should", "min_should", "must", "must_not")
FIELD_CHECKS = (
    "match",
    "range",
    "geo_bounding_box",
    "geo_radius",
    "geo_polygon",
    "values_count",
    "is_empty",
    "is_null",
)

#: Resolves a condition (normalized JSON) to the set of point ids it matches, by local-mode rules.
Resolver = Callable[[dict[str, Any]], set[Any]]


def normalize_filter(raw: Any, where: str = "filter") -> dict[str, Any] | None:
    """Check a filter as Qdrant deserializes it; returns it with every clause a list and ids normalized.

    Raises ``QdrantError`` 400 (unknown key, wrong type, bad id) or 422 (a field condition with nothing to check).
    """
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise format_error(f"{where}: invalid type, expected struct Filter")
    unknown = [k for k in raw if k not in FILTER_KEYS]
    if unknown:
        raise format_error(f"unknown field `{unknown[0]}`, expected one of `should`, `min_should`, `must`, `must_not`")
    out: dict[str, Any] = {}
    for clause in ("must", "should", "must_not"):
        value = raw.get(clause)
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        out[clause] = [_normalize_condition(c, f"{where}.{clause}[{i}]") for i, c in enumerate(items)]
    min_should = raw.get("min_should")
    if min_should is not None:
        if not isinstance(min_should, dict) or set(min_should) - {"conditions", "min_count"}:
            raise format_error(f"{where}.min_should: expected struct MinShould {{conditions, min_count}}")
        conditions = min_should.get("conditions")
        if not isinstance(conditions, list):
            raise format_error(f"{where}.min_should: missing field `conditions`")
        out["min_should"] = {
            "conditions": [
                _normalize_condition(c, f"{where}.min_should.conditions[{i}]") for i, c in enumerate(conditions)
            ],
            "min_count": min_should.get("min_count"),
        }
        validate(
            models.MinShould, {"conditions": [], "min_count": out["min_should"]["min_count"]}, f"{where}.min_should"
        )
    return out


def _normalize_condition(cond: Any, where: str) -> dict[str, Any]:
    if not isinstance(cond, dict):
        raise format_error(f"{where}: data did not match any variant of untagged enum Condition")
    if "has_id" in cond and len(cond) == 1:
        ids = cond["has_id"]
        if not isinstance(ids, list):
            raise format_error(f"{where}.has_id: invalid type, expected a sequence")
        return {"has_id": [parse_point_id(i) for i in ids]}
    if "nested" in cond and len(cond) == 1:
        nested = cond["nested"]
        if not isinstance(nested, dict) or "key" not in nested or "filter" not in nested:
            raise format_error(f"{where}.nested: expected struct Nested {{key, filter}}")
        return {"nested": {"key": nested["key"], "filter": normalize_filter(nested["filter"], f"{where}.nested")}}
    if "key" in cond:
        if not any(cond.get(check) is not None for check in FIELD_CHECKS):
            raise validation_error("At least one field condition must be specified")
        validate(models.FieldCondition, cond, where)
        return dict(cond)
    if len(cond) == 1 and ("is_empty" in cond or "is_null" in cond or "has_vector" in cond):
        by_key: dict[str, type[BaseModel]] = {
            "is_empty": models.IsEmptyCondition,
            "is_null": models.IsNullCondition,
            "has_vector": models.HasVectorCondition,
        }
        model = by_key[next(iter(cond))]
        validate(model, cond, where)
        return dict(cond)
    if not cond or set(cond) & set(FILTER_KEYS):
        return normalize_filter(cond, where) or {}
    raise format_error(f"{where}: data did not match any variant of untagged enum Condition")


def to_edge(filt: dict[str, Any] | None, resolve: Resolver) -> qe.Filter | None:
    """The engine's ``Filter`` for a normalized filter; boolean matches go through ``resolve`` (module doc)."""
    if filt is None:
        return None
    return _edge_filter(filt, resolve, nested=False)


def _edge_filter(filt: dict[str, Any], resolve: Resolver, *, nested: bool) -> qe.Filter:
    def conv(items: list[dict[str, Any]]) -> list[qe.ConditionType]:
        return [_edge_condition(c, resolve, nested=nested) for c in items]

    def conv_clause(name: str) -> list[qe.ConditionType] | None:
        items = filt.get(name)
        return None if items is None else conv(items)

    min_should = filt.get("min_should")
    return qe.Filter(
        must=conv_clause("must"),
        should=conv_clause("should"),
        must_not=conv_clause("must_not"),
        min_should=None
        if min_should is None
        else qe.MinShould(conv(min_should["conditions"]), min_should["min_count"]),
    )


def _edge_condition(cond: dict[str, Any], resolve: Resolver, *, nested: bool) -> qe.ConditionType:
    # A bool match is resolved by local mode, whole; a sub-filter holding one is split further instead.
    if not nested and "has_id" not in cond and has_bool_match(cond) and not set(cond) <= set(FILTER_KEYS):
        return qe.HasIdCondition(resolve(cond))
    if "has_id" in cond:
        return qe.HasIdCondition(set(cond["has_id"]))
    if "nested" in cond:
        return qe.NestedCondition(cond["nested"]["key"], _edge_filter(cond["nested"]["filter"], resolve, nested=True))
    if "is_empty" in cond and "key" not in cond:
        return qe.IsEmptyCondition(cond["is_empty"]["key"])
    if "is_null" in cond and "key" not in cond:
        return qe.IsNullCondition(cond["is_null"]["key"])
    if "has_vector" in cond:
        return qe.HasVectorCondition(cond["has_vector"])
    if "key" in cond:
        return _edge_field(cond)
    return _edge_filter(cond, resolve, nested=nested)


def _edge_field(cond: dict[str, Any]) -> qe.FieldCondition:
    if any(cond.get(k) is not None for k in ("geo_bounding_box", "geo_radius", "geo_polygon")):
        from fakes.qdrant.wire import not_modelled

        raise not_modelled("geo conditions")
    rng = cond.get("range")
    values_count = cond.get("values_count")
    return qe.FieldCondition(
        key=cond["key"],
        match=None if cond.get("match") is None else _edge_match(cond["match"]),
        range=None if rng is None else _edge_range(rng),
        values_count=None if values_count is None else qe.ValuesCount(**values_count),
        is_empty=cond.get("is_empty"),
        is_null=cond.get("is_null"),
    )


def _edge_match(match: dict[str, Any]) -> qe.MatchType:
    ((kind, value),) = match.items()
    values = value if isinstance(value, list) else [value]
    if kind in ("value", "any", "except") and any(_beyond_i64(v) for v in values):
        # Qdrant's integer match values are i64 (``IntPayloadType``): a larger integer fits no variant of the enum.
        raise format_error(f"match.{kind}: data did not match any variant of untagged enum ValueVariants")
    if kind == "value":
        return qe.MatchValue(value)
    if kind == "any":
        return qe.MatchAny(value)
    if kind == "except":
        return qe.MatchExcept(value)
    if kind == "text":
        return qe.MatchText(value)
    if kind == "text_any":
        return qe.MatchTextAny(value)
    if kind == "phrase":
        return qe.MatchPhrase(value)
    if kind == "prefix":
        return qe.MatchPrefix(value)
    if kind == "substring":
        return qe.MatchSubstring(value)
    raise format_error(f"unknown match kind `{kind}`")


def _beyond_i64(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63


def _edge_range(rng: dict[str, Any]) -> qe.RangeType:
    bounds = {k: v for k, v in rng.items() if v is not None}
    if any(isinstance(v, str) for v in bounds.values()):
        return qe.RangeDateTime(**bounds)
    return qe.RangeFloat(**{k: float(v) for k, v in bounds.items()})


def has_bool_match(node: Any) -> bool:
    """True if a boolean ``match.value`` appears anywhere in this condition or filter."""
    if isinstance(node, dict):
        match = node.get("match")
        if isinstance(match, dict) and isinstance(match.get("value"), bool):
            return True
        return any(has_bool_match(v) for v in node.values())
    if isinstance(node, list):
        return any(has_bool_match(v) for v in node)
    return False


def local_mode_matches(cond: dict[str, Any], points: list[tuple[Any, dict[str, Any] | None]]) -> set[Any]:
    """Ids among ``points`` (id, payload) that ``cond`` matches under qdrant-client's local-mode rules."""
    from qdrant_client.local.payload_filters import check_filter

    model = models.Filter.model_validate({"must": [cond]})
    return {pid for pid, payload in points if check_filter(model, payload or {}, pid, {})}
