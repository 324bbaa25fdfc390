"""The webhook sender and signature checks (GitHub docs: "Validating webhook deliveries"): the docs' test vector,
bytes that verify as received and stop verifying once re-serialised, GitHub's delivery headers, a 10 s-style deadline
with no retry, redelivery under the same GUID, duplicate / reordered / form-encoded faults, payloads that githubkit's
webhook models parse, and deliveries caused by API calls with a ``Bot`` sender."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import uuid
from urllib.parse import parse_qs

import githubkit.webhooks
import pytest
from githubkit import GitHub
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes.github import (
    DeliveryLog,
    FakeGitHub,
    issue_comment_created_payload,
    issues_labeled_payload,
    issues_opened_payload,
    pull_request_opened_payload,
    redeliver,
    send_reordered,
    send_webhook,
    sign_sha1,
    sign_sha256,
    verify_signature,
)
from fakes.github.state import App
from fakes.server import FakeHandle
from fakes.testing import examples, fuzzing
from specs.github import webhook_models
from specs.github.receiver import Receiver
from specs.github.world import REPO, SCHEMAS, Schema

SECRET = "s3cret"  # the receiver fixture's secret
VECTOR_SECRET = "It's a Secret to Everybody"
VECTOR = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
TRAPS = {"text": "café ☕ \u2028 naïve", "path": "a/b/c", "emoji": "🚀", "nested": {"k": [1, 2.5, None, True]}}


def test_signature_matches_githubs_test_vector() -> None:
    assert sign_sha256(VECTOR_SECRET, b"Hello, World!") == VECTOR
    assert verify_signature(secret=VECTOR_SECRET, body=b"Hello, World!", header=VECTOR)
    assert githubkit.webhooks.verify(VECTOR_SECRET, b"Hello, World!", VECTOR)  # a second, independent verifier


def test_send_webhook_header_is_the_test_vector(receiver: FakeHandle[Receiver]) -> None:
    log = DeliveryLog()
    receiver.app.secret = VECTOR_SECRET
    delivery = send_webhook(f"{receiver.url}/hook", "ping", b"Hello, World!", secret=VECTOR_SECRET, log=log)
    got = receiver.app.received[-1]
    assert got.body == b"Hello, World!"
    assert got.headers["x-hub-signature-256"] == VECTOR
    assert delivery.status == 202
    assert delivery.ok


def test_received_bytes_verify_and_a_reserialised_copy_does_not(receiver: FakeHandle[Receiver]) -> None:
    log = DeliveryLog()
    for hostile in (False, True):
        delivery = send_webhook(
            f"{receiver.url}/hook", "issues", {"action": "opened", **TRAPS}, secret=SECRET, hostile=hostile, log=log
        )
        got = receiver.app.received[-1]
        header = got.headers["x-hub-signature-256"]
        assert delivery.status == 202
        assert got.verified
        assert got.body == delivery.body
        assert verify_signature(secret=SECRET, body=got.body, header=header)
        assert githubkit.webhooks.verify(SECRET, got.body, header)
        assert json.loads(got.body) == {"action": "opened", **TRAPS}
        reserialised = json.dumps(json.loads(got.body)).encode()
        assert not verify_signature(secret=SECRET, body=reserialised, header=header)
    # httpx json= re-serialises compactly with raw UTF-8 (0.28); only the hostile form differs from that too.
    compact = json.dumps(json.loads(got.body), separators=(",", ":"), ensure_ascii=False).encode()
    assert not verify_signature(secret=SECRET, body=compact, header=header)


def test_delivery_headers_status_duration_and_no_retry(receiver: FakeHandle[Receiver]) -> None:
    log = DeliveryLog()
    good = send_webhook(
        f"{receiver.url}/hook",
        "issues",
        {"action": "opened", "repository": {"id": 7}},
        secret=SECRET,
        hook_id=42,
        log=log,
    )
    headers = receiver.app.received[-1].headers
    assert headers["x-github-event"] == "issues"
    assert headers["x-github-hook-id"] == "42"
    assert uuid.UUID(headers["x-github-delivery"])
    assert headers["x-github-delivery"] == good.id
    assert headers["x-github-hook-installation-target-type"] == "repository"
    assert headers["x-github-hook-installation-target-id"] == "7"
    assert re.fullmatch(r"GitHub-Hookshot/[0-9a-f]{7}", headers["user-agent"])
    assert headers["content-type"] == "application/json"
    body = receiver.app.received[-1].body
    assert headers["x-hub-signature"] == "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    assert good.status == 202
    assert good.duration is not None
    assert 0 <= good.duration < 10
    rejected = send_webhook(
        f"{receiver.url}/hook", "issues", {"action": "opened"}, secret="wrong", log=log, check=False
    )
    assert rejected.status == 401
    assert not rejected.ok
    assert len(receiver.app.received) == 2  # the failed delivery was not retried
    assert [d.id for d in log.all()] == [good.id, rejected.id]


def test_a_receiver_that_does_not_answer_in_time_is_a_failed_delivery(receiver: FakeHandle[Receiver]) -> None:
    receiver.fault("hang", "/hook")
    log = DeliveryLog()
    slow = send_webhook(
        f"{receiver.url}/hook", "issues", {"action": "opened"}, secret=SECRET, timeout=0.5, log=log, check=False
    )
    assert slow.status is None
    assert "timed out" in (slow.error or "")
    assert slow.duration is not None
    assert 0.4 <= slow.duration < 5.0  # generous bound: the deadline was 0.5 s
    assert len(receiver.requests(path_prefix="/hook")) == 1  # no automatic retry


def test_redelivery_reuses_the_guid_and_the_bytes(receiver: FakeHandle[Receiver]) -> None:
    log = DeliveryLog()
    first = send_webhook(f"{receiver.url}/hook", "issues", {"action": "opened", **TRAPS}, secret=SECRET, log=log)
    again = redeliver(first.id, log=log)
    one, two = receiver.app.received
    assert again.redelivery
    assert again.id == first.id
    assert again.status == 202
    assert one.headers["x-github-delivery"] == two.headers["x-github-delivery"] == first.id
    assert one.body == two.body
    assert one.headers["x-hub-signature-256"] == two.headers["x-hub-signature-256"]
    with pytest.raises(KeyError, match="no recorded webhook delivery"):
        redeliver("00000000-0000-0000-0000-000000000000", log=log)


def test_duplicate_reordered_and_form_encoded_faults(receiver: FakeHandle[Receiver]) -> None:
    log = DeliveryLog()
    dup = send_webhook(f"{receiver.url}/hook", "issues", {"action": "opened"}, secret=SECRET, duplicate=True, log=log)
    assert [r.headers["x-github-delivery"] for r in receiver.app.received] == [dup.id, dup.id]
    assert [(d.duplicate, d.redelivery) for d in log.all()] == [(False, False), (True, False)]
    receiver.app.reset()
    batch = send_reordered(
        f"{receiver.url}/hook", [("issues", {"action": "opened", "n": n}) for n in range(3)], secret=SECRET, log=log
    )
    assert [json.loads(r.body)["n"] for r in receiver.app.received] == [2, 1, 0]
    assert [r.headers["x-github-delivery"] for r in receiver.app.received] == [d.id for d in reversed(batch)]
    receiver.app.reset()
    form = send_webhook(
        f"{receiver.url}/hook", "issues", {"action": "opened", **TRAPS}, secret=SECRET, content_type="form", log=log
    )
    got = receiver.app.received[-1]
    assert form.status == 202
    assert got.verified  # signed over the urlencoded bytes exactly as sent
    assert got.headers["content-type"] == "application/x-www-form-urlencoded"
    assert got.body.startswith(b"payload=")
    assert json.loads(parse_qs(got.body.decode())["payload"][0]) == {"action": "opened", **TRAPS}
    with pytest.raises(ValueError, match="content_type"):
        send_webhook(f"{receiver.url}/hook", "issues", {}, secret=SECRET, content_type="xml", log=log)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha256",
        "sha256=",
        "=" * 71,
        "sha256=" + "0" * 63,
        "sha256=" + "g" * 64,
        "sha256=é" + "0" * 63,
        "sha1=" + "0" * 40,
        b"\xff\xfe",
        "md5=" + "0" * 32,
        12345,
    ],
)
def test_verify_signature_is_false_never_an_exception(header: str | bytes | None) -> None:
    assert verify_signature(secret=SECRET, body=b"{}", header=header) is False


def test_verify_signature_refuses_a_valid_sha1_downgrade() -> None:
    body = b'{"zen":"ok"}'
    assert verify_signature(secret=SECRET, body=body, header=sign_sha256(SECRET, body))
    assert verify_signature(
        secret=SECRET, body=body, header=sign_sha256(SECRET, body).upper().replace("SHA256", "sha256")
    )
    # githubkit.webhooks.verify would accept this one:
    assert not verify_signature(secret=SECRET, body=body, header=sign_sha1(SECRET, body))


@pytest.mark.fuzz
@settings(max_examples=examples(200, 5000), deadline=None, derandomize=not fuzzing())
@given(header=st.one_of(st.none(), st.text(max_size=80), st.binary(max_size=80)), body=st.binary(max_size=64))
def test_verify_signature_fuzz_never_raises(header: str | bytes | None, body: bytes) -> None:
    assert verify_signature(secret=SECRET, body=body, header=header) is (header == sign_sha256(SECRET, body))


@pytest.mark.parametrize("version", SCHEMAS)
def test_every_built_payload_parses_with_githubkits_webhook_models(
    fake_inproc: FakeHandle[FakeGitHub], version: Schema
) -> None:
    fake = fake_inproc.app
    app = fake.add_app("reply-bot")
    fake.add_installation(app.id, "octo")
    comment = fake.add_comment(REPO, 1, "hi ☕", user="alice")
    fake.add_pull(REPO, "A pull", head="feat", user="alice")
    built = {
        ("issues", "opened"): issues_opened_payload(fake, REPO, 1),
        ("issues", "labeled"): issues_labeled_payload(fake, REPO, 1, "bug", sender="alice"),
        ("issue_comment", "created"): issue_comment_created_payload(fake, REPO, comment.id),
        ("pull_request", "opened"): pull_request_opened_payload(fake, REPO, 2),
    }
    for (event, action), payload in built.items():
        model = webhook_models.parse(event, json.dumps(payload).encode(), version)
        assert model.action == action
        assert model.repository.full_name == REPO
        assert model.installation.id == payload["installation"]["id"]
        assert payload["repository"]["url"].startswith("http://fake-github/")  # no public URL: the documented default
    assert built[("issues", "labeled")]["label"]["name"] == "bug"
    assert built[("issue_comment", "created")]["issue"]["number"] == 1


def test_api_created_comments_and_labels_emit_deliveries_with_a_bot_sender(
    no_leaks: None, fake_inproc: FakeHandle[FakeGitHub], receiver: FakeHandle[Receiver]
) -> None:
    fake = fake_inproc.app
    app = fake.add_app("reply-bot")
    inst = fake.add_installation(app.id, "octo")
    fake.add_hook(f"{receiver.url}/hook", secret=SECRET, events=["issue_comment", "issues"])
    token = (
        fake_inproc.client()
        .post(
            f"/app/installations/{inst.id}/access_tokens", json={}, headers={"authorization": f"Bearer {_app_jwt(app)}"}
        )
        .json()["token"]
    )
    kit = GitHub(token, base_url=fake_inproc.url, transport=fake_inproc.transport(), auto_retry=False)
    kit.rest.issues.create_comment("octo", "hello", 1, body="<!-- agent-controller:reply -->\nDone")
    kit.rest.issues.add_labels("octo", "hello", 1, labels=["answered"])
    assert fake.drain_deliveries(timeout=10.0)
    events = {(r.headers["x-github-event"], json.loads(r.body)["action"]): r for r in receiver.app.received}
    assert set(events) == {("issue_comment", "created"), ("issues", "labeled")}
    comment_event = webhook_models.parse("issue_comment", events[("issue_comment", "created")].body)
    assert comment_event.sender.login == "reply-bot[bot]"
    assert comment_event.sender.type == "Bot"
    assert comment_event.comment.body.startswith("<!-- agent-controller:reply -->")
    labeled = webhook_models.parse("issues", events[("issues", "labeled")].body)
    assert labeled.label.name == "answered"
    assert labeled.sender.type == "Bot"
    assert all(r.verified for r in receiver.app.received)
    assert [d.status for d in fake.deliveries.all()] == [202, 202]


def _app_jwt(app: App) -> str:
    import time

    import jwt

    now = int(time.time())
    return jwt.encode({"iss": str(app.id), "iat": now - 60, "exp": now + 300}, app.private_key_pem, algorithm="RS256")


def test_a_dripping_receiver_cannot_stretch_the_delivery_deadline(receiver: FakeHandle[Receiver]) -> None:
    receiver.fault("drip", "/hook", interval=0.05)  # ~40 body bytes at 50 ms each would take about 2 s
    log = DeliveryLog()
    slow = send_webhook(
        f"{receiver.url}/hook", "issues", {"action": "opened"}, secret=SECRET, timeout=0.5, log=log, check=False
    )
    assert slow.status is None
    assert "deadline" in (slow.error or "")
    assert slow.duration is not None
    assert slow.duration < 1.5  # one total deadline, not per read
