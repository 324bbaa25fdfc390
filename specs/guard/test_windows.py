"""Guard specs for Kubernetes timestamps and "created since" windows
(a truncated creationTimestamp and clock skew must not hide a run)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from harness import TimestampError, created_since, parse_k8s_time


def run(name: str, stamp: str) -> dict:
    return {"metadata": {"name": name, "creationTimestamp": stamp}}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00"),  # metav1.Time
        ("2024-05-01T12:00:00.123456Z", "2024-05-01T12:00:00.123456"),  # MicroTime
        ("2024-05-01T12:00:00.123456789Z", "2024-05-01T12:00:00.123456"),  # RFC3339Nano: truncated, not rounded
        ("2024-05-01T12:00:00.999999999Z", "2024-05-01T12:00:00.999999"),
        ("2024-05-01T12:00:00.12Z", "2024-05-01T12:00:00.120000"),
        ("2024-05-01T14:00:00+02:00", "2024-05-01T12:00:00"),
        ("2024-05-01T07:30:00-04:30", "2024-05-01T12:00:00"),
        ("2024-05-01t12:00:00z", "2024-05-01T12:00:00"),
    ],
)
def test_parser_table(raw: str, expected: str) -> None:
    parsed = parse_k8s_time(raw)
    assert parsed == at(expected)
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "raw",
    [
        "2024-05-01T12:00:00",
        "2024-05-01T12:00:00.5",
        "yesterday",
        "",
        "2024-13-01T00:00:00Z",
        "2024-04-31T00:00:00Z",
        "2024-05-01",
        "2024-05-01T12:00:00+00:60",
        "2024-05-01T12:00:00+24:00",
        "0001-01-01T00:00:00+01:00",  # before datetime.min in UTC
        "9999-12-31T23:59:59-01:00",  # after datetime.max in UTC
    ],
)
def test_parser_rejects_naive_and_garbage_naming_the_input(raw: str) -> None:
    with pytest.raises(TimestampError) as caught:
        parse_k8s_time(raw)
    assert repr(raw) in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_parser_accepts_aware_datetimes_from_typed_apis_and_rejects_naive_ones() -> None:
    berlin = timezone(timedelta(hours=2))
    assert parse_k8s_time(datetime(2024, 5, 1, 14, tzinfo=berlin)) == at("2024-05-01T12:00:00")
    with pytest.raises(TimestampError, match="naive"):
        parse_k8s_time(datetime(2024, 5, 1, 12))
    with pytest.raises(TimestampError):
        parse_k8s_time(1714564800)  # type: ignore[arg-type]


def test_run_created_at_x800_stamped_x000_is_found_for_since_x200() -> None:
    # Created at 14:07:05.800 server time, stamped (truncated) 14:07:05; since taken at 14:07:05.200.
    found = created_since([run("turn", "2024-05-01T14:07:05Z")], at("2024-05-01T14:07:05.200"))
    assert [r["metadata"]["name"] for r in found] == ["turn"]


def test_upstream_cases() -> None:
    assert created_since([run("a", "2024-05-01T14:07:04Z")], at("2024-05-01T14:07:05.900"))
    assert not created_since([run("old", "2024-05-01T14:06:55Z")], at("2024-05-01T14:07:05.000"))


def test_node_clock_behind_the_host_still_finds_the_run() -> None:
    # The host took since at 12:00:00.600; the node's clock is 1.5 s behind, so the run created just after
    # is stamped 11:59:59 (12:00:00.700 - 1.5 s = 11:59:59.2, truncated).
    assert created_since([run("skewed", "2024-05-01T11:59:59Z")], at("2024-05-01T12:00:00.600"))


def test_previous_turns_run_is_not_found() -> None:
    since = at("2024-05-01T12:00:20.000")
    previous = run("previous", "2024-05-01T12:00:10Z")  # 10 s before since: the last trigger
    current = run("current", "2024-05-01T12:00:20Z")
    assert [r["metadata"]["name"] for r in created_since([previous, current], since)] == ["current"]


def test_newest_first_with_same_second_ties_broken_by_name() -> None:
    since = at("2024-05-01T12:00:00")
    items = [run("b", "2024-05-01T12:00:01Z"), run("c", "2024-05-01T12:00:02Z"), run("a", "2024-05-01T12:00:01Z")]
    names = [r["metadata"]["name"] for r in created_since(items, since)]
    assert names == ["c", "b", "a"]
    assert [r["metadata"]["name"] for r in created_since(list(reversed(items)), since)] == names


def test_naive_since_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        created_since([], datetime(2024, 5, 1, 12))


def test_since_as_a_string_and_non_finite_widenings_are_named() -> None:
    with pytest.raises(ValueError, match="since must be an aware datetime, got str"):
        created_since([], "2024-05-01T12:00:00Z")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        created_since([], at("2024-05-01T12:00:00"), granularity=float("nan"))


def test_a_whole_listing_instead_of_its_items_is_named() -> None:
    with pytest.raises(ValueError, match=r"listing\['items'\]"):
        created_since({"items": [run("a", "2024-05-01T12:00:00Z")]}, at("2024-05-01T12:00:00"))


def test_widening_not_below_trigger_spacing_is_rejected() -> None:
    since = at("2024-05-01T12:00:00")
    with pytest.raises(ValueError, match="previous turn"):
        created_since([], since, granularity=1.0, skew=19.0)
    with pytest.raises(ValueError, match="previous turn"):
        created_since([], since, skew=5.0, min_trigger_spacing=6.0)
    assert created_since([run("x", "2024-05-01T11:59:56Z")], since, skew=3.5, min_trigger_spacing=6.0)


def test_item_without_a_timestamp_is_a_clear_error() -> None:
    with pytest.raises(TimestampError, match="'nameless-run'"):
        created_since([{"metadata": {"name": "nameless-run"}}], at("2024-05-01T12:00:00"))
