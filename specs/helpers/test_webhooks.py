"""Specs of harness.webhooks: serialise once, sign those bytes, send the same bytes, GitHub's headers."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from harness.webhooks import WEBHOOK_PATH, issues_labeled_payload, send_webhook, serialise, sign
from specs.agent_controller.cluster_secrets import SecretValue


def test_signature_matches_githubs_documented_test_vector() -> None:
    # GitHub's docs: secret "It's a Secret to Everybody", payload "Hello, World!".
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign(b"Hello, World!", "It's a Secret to Everybody") == expected
    assert sign(b"Hello, World!", SecretValue("It's a Secret to Everybody", "s/k")) == expected


def test_an_empty_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        sign(b"{}", "")


def test_the_bytes_sent_are_the_bytes_signed(receiver) -> None:
    secret = SecretValue("s3cret", "e2e-integration-gateway-secrets/GITHUB_WEBHOOK_SECRET")
    payload = issues_labeled_payload(
        owner="e2e-org",
        repo="e2e-repo",
        number=1_000_123,
        title="Ünïcode \u2603 / \\",
        label="ai-triage",
        sender="e2e-user",
    )
    sent = send_webhook(receiver.url, "issues", payload, secret=secret)
    assert sent.status == 202
    (request,) = receiver.requests
    assert request["path"] == WEBHOOK_PATH
    assert request["body"] == sent.body == serialise(payload)
    expected = "sha256=" + hmac.new(b"s3cret", request["body"], hashlib.sha256).hexdigest()
    assert request["headers"]["x-hub-signature-256"] == expected
    assert request["headers"]["x-github-event"] == "issues"
    assert request["headers"]["x-github-delivery"] == sent.delivery
    assert request["headers"]["content-type"] == "application/json"
    assert json.loads(request["body"])["issue"]["number"] == 1_000_123
    # The same payload serialised again another way would not verify: that is why it is serialised once.
    assert hmac.new(b"s3cret", json.dumps(payload).encode(), hashlib.sha256).hexdigest() not in expected


def test_every_delivery_gets_its_own_id(receiver) -> None:
    payload = issues_labeled_payload(owner="o", repo="r", number=1, title="t", label="ai-triage", sender="e2e-user")
    first = send_webhook(receiver.url, "issues", payload, secret="k")
    second = send_webhook(receiver.url, "issues", payload, secret="k")
    assert first.delivery != second.delivery


def test_payload_has_the_fields_the_gateway_reads() -> None:
    payload = issues_labeled_payload(
        owner="e2e-org", repo="e2e-repo", number=7, title="t", label="ai-triage", sender="E2E-User"
    )
    assert payload["action"] == "labeled"
    assert payload["label"] == {"name": "ai-triage"}
    assert payload["repository"] == {"name": "e2e-repo", "owner": {"login": "e2e-org"}, "full_name": "e2e-org/e2e-repo"}
    assert payload["sender"] == {"login": "E2E-User", "type": "User"}
    assert payload["issue"]["labels"] == [{"name": "ai-triage"}]


def test_a_secret_value_never_prints_itself() -> None:
    secret = SecretValue("hunter2", "gw/GITHUB_WEBHOOK_SECRET")
    assert "hunter2" not in repr(secret)
    assert "hunter2" not in str(secret)
    assert "hunter2" not in f"{secret}"
    assert secret.reveal() == "hunter2"
