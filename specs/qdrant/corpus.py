"""The edge-case payload corpus for the differential filter suite (``test_differential.py``).

Every point carries a tricky value in ``v`` (``1`` vs ``1.0`` vs ``"1"`` vs ``true``, ``null``, ``[]``, ``[null]``,
``[1,null]``, ``{}``, nested arrays, arrays of objects, datetimes with and without offsets, date-only, missing) and
rotating values in the other fields, so each generated filter meets many shapes at once.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = object()

TRICKY = [
    1,
    1.0,
    "1",
    True,
    False,
    0,
    None,
    [],
    [None],
    [1, None],
    {},
    [[1]],
    [1, 2, 3],
    [{"k": 1}, {"k": 2}],
    "2024-05-01T12:00:00Z",
    "2024-05-01T14:30:00+02:00",
    "2024-05-01",
    "2024-05-01 12:00:00",
    "2024-04-30T23:00:00Z",
    "Hello big World",
    "hello",
    2.5,
    -3,
    ["a", "b"],
    ["x"],
    "x",
    MISSING,
    [True],
    [1.0],
    {"k": 1},
]
TEXTS = ["Hello big World", "helloworld", "world hello", "big", "HELLO", MISSING, "x y z", ""]
STAMPS = [
    "2024-05-01T12:00:00Z",
    "2024-05-01T14:30:00+02:00",
    "2024-05-01",
    "2024-05-01T10:00:00",
    "2024-04-30T23:00:00Z",
    "not a date",
    MISSING,
    ["2024-05-01T00:00:00Z", "2024-06-01T00:00:00Z"],
]
ARRAYS = [
    [{"k": 1, "x": "a"}, {"k": 2, "x": "b"}],
    [{"k": 3}],
    [],
    [{"k": None}],
    MISSING,
    {"k": 1},
    [{"k": [1, 2]}, {"x": "a"}],
    [[{"k": 1}]],
]
UUIDS = [
    "c9a52f54-99c2-d5b7-bd1f-61da14ebe68d",
    "00000000-0000-0000-0000-000000000005",
    "ffffffff-0000-4000-8000-000000000001",
]


def _put(payload: dict[str, Any], key: str, value: object) -> None:
    if value is not MISSING:
        payload[key] = value


def corpus() -> list[tuple[int | str, list[float], dict[str, Any]]]:
    """(id, vector of 4 floats, payload) for every point: ints 1..30 then three UUIDs."""
    points = []
    ids: list[int | str] = list(range(1, len(TRICKY) + 1)) + UUIDS
    for i, pid in enumerate(ids):
        payload: dict[str, Any] = {}
        _put(payload, "v", TRICKY[i % len(TRICKY)])
        _put(payload, "n", [0, 1, 2.5, -1, 10, MISSING, 3, 1.0][i % 8])
        _put(payload, "s", TEXTS[i % len(TEXTS)])
        _put(payload, "ts", STAMPS[i % len(STAMPS)])
        _put(payload, "arr", ARRAYS[i % len(ARRAYS)])
        _put(payload, "tags", [["a", "b"], ["b"], [], "a", MISSING, ["c", None]][i % 6])
        if i % 3 == 0:
            payload["meta"] = {"k": i % 4, "tags": ["a"] if i % 2 else []}
        elif i % 3 == 1:
            payload["meta"] = [{"k": 1}, {"k": 2}]
        if i % 4 == 0:
            payload["e.f"] = i % 3
            payload["d"] = {"e.f": i % 2}
        vector = [math.sin(i + 1) + 1.5, math.cos(3 * i + 1), math.sin(i * i + 0.5), 0.3 + (i % 5) / 7]
        points.append((pid, vector, payload))
    return points


ALL_IDS = [p[0] for p in corpus()]
