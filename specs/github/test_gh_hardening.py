"""Bad input to the fake GitHub and its helpers gets a clear error, or GitHub's own answer, and never breaks the fake:
signature checks with a missing or empty secret, webhook payloads that are not JSON, non-positive timeouts, clock
advances that would push the fake's time out of range, GitHub's size limits on comment bodies and label names, and
bodies the JSON parser refuses."""

from __future__ import annotations

import json
import math

import pytest

from fakes.github import FakeGitHub, send_webhook, sign_sha256, verify_signature
from fakes.server import FakeHandle
from specs.github.world import REPO, TOKEN

AUTH = {"authorization": f"token {TOKEN}"}


@pytest.mark.parametrize("secret", [None, "", b""])
def test_verify_signature_refuses_a_missing_or_empty_secret(secret: str | bytes | None) -> None:
    body = b'{"zen":"ok"}'
    forged = sign_sha256("", body)  # anyone can compute this one
    assert verify_signature(secret=secret, body=body, header=forged) is False


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_send_webhook_refuses_a_payload_that_is_not_json(bad: float) -> None:
    with pytest.raises(ValueError, match="NaN or Infinity"):
        send_webhook("http://127.0.0.1:9/hook", "issues", {"action": "opened", "score": [1, bad]}, secret="s")


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf])
def test_send_webhook_refuses_a_timeout_that_is_not_a_positive_number(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        send_webhook("http://127.0.0.1:9/hook", "issues", {"action": "opened"}, secret="s", timeout=timeout)


@pytest.mark.parametrize("advance", ["1e308", "-1e308", "NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400])
def test_clock_refuses_absurd_advances_and_keeps_working(fake_inproc: FakeHandle[FakeGitHub], advance: str) -> None:
    with fake_inproc.client() as http:
        before = http.get("/_fake/github/state").json()["now"]
        refused = http.post(
            "/_fake/github/clock", content=f'{{"advance": {advance}}}', headers={"content-type": "application/json"}
        )
        assert refused.status_code == 400, refused.text
        message = refused.json()["message"]  # names the field, or the parser names the value it refused
        assert "advance" in message or "body is not JSON" in message, message
        state = http.get("/_fake/github/state")
        assert math.isfinite(json.loads(state.text)["now"])
        assert abs(state.json()["now"] - before) < 60
        posted = http.post(f"/repos/{REPO}/issues/1/comments", json={"body": "still fine"}, headers=AUTH)
        assert posted.status_code == 201
        assert posted.json()["created_at"].startswith("20")
        assert http.post("/_fake/github/clock", json={"advance": 3600}).status_code == 200


def test_advance_clock_names_the_bad_value(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    with pytest.raises(ValueError, match="nan"):
        fake_inproc.app.advance_clock(math.nan)
    with pytest.raises(ValueError, match="year 9999"):
        fake_inproc.app.advance_clock(1e12)


def test_admin_timestamps_and_drain_timeout_must_be_in_range(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    with fake_inproc.client() as http:
        issue = http.post("/_fake/github/issues", json={"repo": "octo/hello", "title": "t", "created_at": 1e300})
        drain = http.post("/_fake/github/deliveries/drain", json={"timeout": 1e9})
        assert (issue.status_code, drain.status_code) == (400, 400), (issue.text, drain.text)
        assert "created_at" in issue.json()["message"]
        assert "timeout" in drain.json()["message"]
        assert http.get(f"/repos/{REPO}/issues").status_code == 200


def test_comment_body_over_65536_characters_is_422(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    # GitHub's answer, as quoted in danger/danger#424 and telia-oss/github-pr-resource#259.
    with fake_inproc.client() as http:
        longest = http.post(f"/repos/{REPO}/issues/1/comments", json={"body": "x" * 65536}, headers=AUTH)
        too_long = http.post(f"/repos/{REPO}/issues/1/comments", json={"body": "é" * 65537}, headers=AUTH)
        edit = http.patch(
            f"/repos/{REPO}/issues/comments/{longest.json()['id']}", json={"body": "y" * 70000}, headers=AUTH
        )
    assert longest.status_code == 201
    for answer in (too_long, edit):
        assert answer.status_code == 422
        assert answer.json()["message"] == "Validation Failed"
        assert answer.json()["errors"][0]["message"] == "Body is too long (maximum is 65536 characters)"
    assert fake_inproc.app.comments[longest.json()["id"]].body == "x" * 65536  # the refused edit lost nothing


def test_label_name_over_50_characters_is_422_and_creates_nothing(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    # GitHub: 422 {"resource":"Label","field":"name","code":"invalid","value":...} (github/docs#32156).
    with fake_inproc.client() as http:
        ok = http.post(f"/repos/{REPO}/issues/1/labels", json={"labels": ["n" * 50]}, headers=AUTH)
        bad = http.post(f"/repos/{REPO}/issues/1/labels", json={"labels": ["ok", "n" * 51]}, headers=AUTH)
    assert ok.status_code == 200
    assert bad.status_code == 422
    assert bad.json()["errors"] == [{"value": "n" * 51, "resource": "Label", "field": "name", "code": "invalid"}]
    assert "ok" not in fake_inproc.app.repo(REPO).labels  # all or nothing


@pytest.mark.parametrize(
    "path", [f"/repos/{REPO}/issues/-1/comments", f"/repos/{REPO}/issues/-1", f"/repos/{REPO}/issues/comments/-5"]
)
def test_negative_numbers_are_404_like_github(fake_inproc: FakeHandle[FakeGitHub], path: str) -> None:
    with fake_inproc.client() as http:
        answer = http.get(path, headers=AUTH)
    assert answer.status_code == 404
    assert answer.json()["message"] == "Not Found"


@pytest.mark.parametrize(
    "body",
    [
        b'{"body": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"body": "x", "n": NaN}',
        b'{"body": "x", "n": -Infinity}',
        b'{"body": "x", "n": 1e400}',
        b'{"body": "x", "n": 1' + b"0" * 5000 + b"}",
    ],
)
@pytest.mark.parametrize("route", ["/issues/1/comments", "/issues/1/labels", "/issues/1/reactions"])
def test_bodies_the_parser_refuses_are_400_problems_parsing_json(
    fake_inproc: FakeHandle[FakeGitHub], body: bytes, route: str
) -> None:
    with fake_inproc.client() as http:
        answer = http.post(f"/repos/{REPO}{route}", content=body, headers={**AUTH, "content-type": "application/json"})
        admin = http.post("/_fake/github/issues", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"] == "Problems parsing JSON"
    assert admin.status_code == 400, admin.text
