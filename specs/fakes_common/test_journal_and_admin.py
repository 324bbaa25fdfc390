"""The request journal and the /_fake/ admin API, over a real socket (fakes/journal.py, fakes/admin.py)."""

from __future__ import annotations

import time

import httpx
import pytest

from fakes.server import FakeHandle
from specs.fakes_common.echo import EchoFake


def test_journal_records_method_path_query_body_and_status_with_credentials_redacted(
    echo: FakeHandle[EchoFake],
) -> None:
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        client.post(
            "/things/1?wait=true",
            json={"a": 1},
            headers={"api-key": "k1", "Authorization": "Bearer t", "Cookie": "c=1", "X-Keep": "v"},
        )
    (entry,) = echo.requests()
    assert (entry.method, entry.path, entry.query, entry.json(), entry.status) == (
        "POST",
        "/things/1",
        "wait=true",
        {"a": 1},
        200,
    )
    assert entry.query_params == {"wait": ["true"]}
    assert entry.headers["api-key"] == entry.headers["authorization"] == entry.headers["cookie"] == "<redacted>"
    assert entry.headers["x-keep"] == "v"


def test_health_and_admin_routes_are_never_recorded(echo: FakeHandle[EchoFake]) -> None:
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/_fake/requests").status_code == 200
        client.get("/app")
    assert [e.path for e in echo.requests()] == ["/app"]


def test_filters_by_path_prefix_method_and_since_in_process_and_over_admin(echo: FakeHandle[EchoFake]) -> None:
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        client.get("/a/1")
        client.post("/b/1")
        time.sleep(0.02)  # a distinct wall-clock instant for the since filter
        cutoff = time.time()
        client.get("/a/2")
        assert [e.path for e in echo.requests(path_prefix="/a")] == ["/a/1", "/a/2"]
        assert [e.path for e in echo.requests(method="post")] == ["/b/1"]
        assert [e.path for e in echo.requests(since=cutoff)] == ["/a/2"]
        remote = client.get("/_fake/requests", params={"path_prefix": "/a", "since": str(cutoff)}).json()
        assert [e["path"] for e in remote["requests"]] == ["/a/2"]
        bad = client.get("/_fake/requests", params={"since": "yesterday"})
        assert bad.status_code == 400
        assert "since='yesterday'" in bad.json()["error"]


def test_since_accepts_rfc3339(echo: FakeHandle[EchoFake]) -> None:
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        client.get("/x")
        assert [
            e["path"]
            for e in client.get("/_fake/requests", params={"since": "2000-01-01T00:00:00Z"}).json()["requests"]
        ] == ["/x"]
        assert client.get("/_fake/requests", params={"since": "2999-01-01T00:00:00+02:00"}).json() == {
            "requests": [],
            "dropped": 0,
        }


def test_admin_faults_add_list_clear_and_reset(echo: FakeHandle[EchoFake]) -> None:
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        created = client.post("/_fake/faults", json={"kind": "status", "status": 503, "path": "/s*", "times": 2})
        assert created.status_code == 201
        fault_id = created.json()["id"]
        assert [f["id"] for f in client.get("/_fake/faults").json()["faults"]] == [fault_id]
        assert client.get("/s1").status_code == 503
        assert client.get("/other").status_code == 200
        assert client.get("/_fake/faults").json()["faults"][0]["remaining"] == 1
        assert client.delete(f"/_fake/faults/{fault_id}").status_code == 200
        assert client.delete(f"/_fake/faults/{fault_id}").status_code == 404
        assert client.get("/s1").status_code == 200
        client.post("/_fake/faults", json={"kind": "status", "status": 500})
        assert client.delete("/_fake/faults").json() == {"cleared": "all"}
        assert client.get("/s1").json()["calls"] == 3
        assert client.post("/_fake/reset").json() == {"reset": True}
        assert echo.requests() == []
        assert echo.runtime.faults.list() == []
        assert client.get("/s1").json()["calls"] == 1


def test_admin_rejects_bad_fault_specs_with_a_specific_message(echo: FakeHandle[EchoFake]) -> None:
    with httpx.Client(base_url=echo.url, timeout=5) as client:
        for body, needle in [
            ({"kind": "explode"}, "not one of"),
            ({"kind": "hang", "times": 0}, "positive integer"),
            ({"kind": "status", "colour": 1}, "unknown fault field"),
            ({}, "needs 'kind'"),
        ]:
            response = client.post("/_fake/faults", json=body)
            assert response.status_code == 400, body
            assert needle in response.json()["error"], body
        raw = client.post("/_fake/faults", content=b"{nope", headers={"content-type": "application/json"})
        assert raw.status_code == 400
        assert "not JSON" in raw.json()["error"]
        assert client.get("/_fake/nothing-here").status_code == 404


def test_journal_is_bounded_in_entries_and_body_bytes() -> None:
    from fakes.core import FakeRequest
    from fakes.journal import Journal

    journal = Journal(max_entries=3, max_body=4)
    for i in range(5):
        journal.record(FakeRequest("POST", f"/p/{i}", body=b'{"k": 12345}'))
    entries = journal.entries()
    assert [e.path for e in entries] == ["/p/2", "/p/3", "/p/4"]
    assert journal.dropped == 2
    assert entries[0].body == b'{"k"'
    assert entries[0].body_size == 12
    assert entries[0].body_truncated
    with pytest.raises(ValueError, match="truncated"):
        entries[0].json()
