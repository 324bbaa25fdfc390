"""Kubernetes timestamps and "created since" windows that cannot hide a run.

``metadata.creationTimestamp`` is RFC 3339 in whole seconds, *truncated* (``metav1.Time``;
kubernetes/kubernetes#124200). A run created at x.800 is stamped x.000, so ``created >= since`` with a
host-clock ``since`` of x.200 excluded it forever: a wait for "a Job created since" times out while the Job ran.
The host's clock and a local cluster's (a VM, a container) also drift apart. :func:`created_since` therefore widens
the cutoff by the stamp's granularity plus a skew allowance, and refuses a widening so large that the object made by
the previous trigger could match (``min_trigger_spacing``: triggers at least 20 s apart by default).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from harness.errors import TimestampError

T = TypeVar("T")

_RFC3339 = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d{1,9}))?"
    r"(?P<zone>[Zz]|[+-]\d{2}:\d{2})?"
)

DEFAULT_GRANULARITY = 1.0
DEFAULT_SKEW = 2.0
DEFAULT_MIN_TRIGGER_SPACING = 20.0


def parse_k8s_time(value: str | datetime) -> datetime:
    """An aware UTC ``datetime`` from a Kubernetes timestamp.

    Accepts RFC 3339 strings with ``Z`` or a ``±HH:MM`` offset and 0 to 9 fractional digits (digits past
    microseconds are truncated, not rounded: Go's RFC3339Nano emits 9), and ``datetime`` objects (typed
    Kubernetes APIs return them; custom-object APIs return strings). Raises :class:`TimestampError` (a
    ``ValueError``) naming the input for garbage, or for a string or datetime without a zone: Kubernetes
    always sends one, and a naive value is a bug waiting to compare wrongly (hjacobs/kube-downscaler#73).
    """
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise TimestampError(f"naive datetime {value!r}: Kubernetes times carry a zone; pass an aware datetime")
        try:
            return value.astimezone(UTC)
        except OverflowError as exc:
            raise TimestampError(f"datetime {value!r} is outside the representable UTC range ({exc})") from None
    if not isinstance(value, str):
        raise TimestampError(f"not a Kubernetes timestamp: {value!r} (expected an RFC 3339 string or a datetime)")
    match = _RFC3339.fullmatch(value.strip())
    if match is None:
        raise TimestampError(f"not an RFC 3339 timestamp: {value!r}")
    if match["zone"] is None:
        raise TimestampError(f"timestamp without a zone: {value!r} (Kubernetes always sends Z or an offset)")
    micro = (match["frac"] or "").ljust(6, "0")[:6]
    zone = "+00:00" if match["zone"] in "Zz" else match["zone"]
    if zone[1:3] > "23" or zone[4:6] > "59":
        raise TimestampError(f"offset out of range in {value!r} (RFC 3339: hours 00-23, minutes 00-59)")
    try:
        return datetime.fromisoformat(f"{match['date']}T{match['time']}.{micro}{zone}").astimezone(UTC)
    except (ValueError, OverflowError) as exc:  # day 31 of April, hour 24, or an instant outside datetime's range
        raise TimestampError(f"not a valid RFC 3339 timestamp: {value!r} ({exc})") from None


def creation_timestamp(item: Any) -> datetime:
    """The parsed ``metadata.creationTimestamp`` of a custom-object dict or a typed Kubernetes object.

    Raises :class:`TimestampError` when the item has none or it cannot be parsed.
    """
    if isinstance(item, dict):
        raw = (item.get("metadata") or {}).get("creationTimestamp")
    else:
        raw = getattr(getattr(item, "metadata", None), "creation_timestamp", None)
    if raw is None:
        raise TimestampError(f"object {object_name(item)!r} has no metadata.creationTimestamp")
    return parse_k8s_time(raw)


def object_name(item: Any) -> str:
    """``metadata.name`` of a dict or typed object (empty string if absent)."""
    if isinstance(item, dict):
        return str((item.get("metadata") or {}).get("name") or "")
    return str(getattr(getattr(item, "metadata", None), "name", "") or "")


def window_cutoff(
    since: datetime,
    *,
    granularity: float = DEFAULT_GRANULARITY,
    skew: float = DEFAULT_SKEW,
    min_trigger_spacing: float = DEFAULT_MIN_TRIGGER_SPACING,
) -> datetime:
    """``since - granularity - skew`` (seconds), as an aware UTC datetime.

    Raises ``ValueError`` for a ``since`` that is not an aware datetime, a negative or non-finite
    ``granularity`` or ``skew``, or a widening
    (``granularity + skew``) not below ``min_trigger_spacing``: widening must never let a previous turn's
    run match.
    """
    if not isinstance(since, datetime):
        raise ValueError(
            f"since must be an aware datetime, got {type(since).__name__} {since!r}; "
            "parse strings with parse_k8s_time()"
        )
    if since.tzinfo is None or since.utcoffset() is None:
        raise ValueError(
            f"since must be timezone-aware (got naive {since!r}); use datetime.now(timezone.utc) or Kube.server_time()"
        )
    if not (0 <= granularity < math.inf and 0 <= skew < math.inf):
        raise ValueError(f"granularity and skew must be finite and >= 0 seconds, got {granularity} and {skew}")
    if granularity + skew >= min_trigger_spacing:
        raise ValueError(
            f"a widening of {granularity + skew:.1f}s (granularity {granularity}s + skew {skew}s) is not below the "
            f"{min_trigger_spacing:.1f}s minimum spacing between triggers: the previous turn's run could match"
        )
    return since.astimezone(UTC) - timedelta(seconds=granularity + skew)


def created_since(
    items: Iterable[T],
    since: datetime,
    *,
    granularity: float = DEFAULT_GRANULARITY,
    skew: float = DEFAULT_SKEW,
    min_trigger_spacing: float = DEFAULT_MIN_TRIGGER_SPACING,
) -> list[T]:
    """The items created at or after ``since - granularity - skew``, newest first.

    ``granularity`` (default 1 s: ``creationTimestamp`` is truncated to the second) and ``skew`` (default
    2 s of host-vs-server clock difference) are seconds. Items created in the same second are ordered by
    name, descending, so the order is deterministic (the API server lists them in key order, which is not creation
    order: taking ``[0]`` of that picks an arbitrary one of them). Raises ``ValueError`` as
    :func:`window_cutoff` or for a whole listing passed as ``items``, and :class:`TimestampError` for an item
    with a missing or unreadable timestamp.
    """
    cutoff = window_cutoff(since, granularity=granularity, skew=skew, min_trigger_spacing=min_trigger_spacing)
    if isinstance(items, dict) and "items" in items:
        raise ValueError("pass the listing's items (listing['items']), not the whole kubectl listing")
    stamped = [(creation_timestamp(item), object_name(item), item) for item in items]
    kept = [entry for entry in stamped if entry[0] >= cutoff]
    kept.sort(key=lambda entry: (entry[0], entry[1]), reverse=True)
    return [item for _, _, item in kept]
