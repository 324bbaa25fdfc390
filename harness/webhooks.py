"""Signed GitHub webhooks sent to a receiver (a service behind its port-forward, or a URL).

GitHub signs the exact bytes it sends (HMAC-SHA256, header ``X-Hub-Signature-256: sha256=<hex>``), so the payload
is serialised once, those bytes are signed, and the same bytes are sent (``content=``; ``json=`` would serialise
again and the signature would no longer match). Headers as GitHub sends them: ``content-type:
application/json``, ``x-github-event``, ``x-github-delivery`` (a fresh GUID per delivery) and the signature. The
POST goes through :func:`harness.fetch_through_sync`, so a dead forward or a hung receiver is named as such.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from harness.fetch import Forward, fetch_through_sync

WEBHOOK_PATH = "/webhooks/github"
"""Where :func:`send_webhook` POSTs unless told otherwise (``path=``)."""


class Revealable(Protocol):
    """A secret that keeps its text out of reprs and messages and hands it over only through ``reveal()``."""

    def reveal(self) -> str: ...


def issues_labeled_payload(
    *,
    owner: str,
    repo: str,
    number: int,
    title: str,
    label: str,
    sender: str,
    body: str | None = None,
    labels: list[str] | None = None,
    sender_type: str = "User",
) -> dict[str, Any]:
    """The ``issues``/``labeled`` payload's main fields: action, label, issue, repository, sender (GitHub sends many
    more)."""
    names = labels if labels is not None else [label]
    return {
        "action": "labeled",
        "label": {"name": label},
        "issue": {"number": number, "title": title, "body": body, "labels": [{"name": n} for n in names]},
        "repository": {"name": repo, "owner": {"login": owner}, "full_name": f"{owner}/{repo}"},
        "sender": {"login": sender, "type": sender_type},
    }


def serialise(payload: Any) -> bytes:
    """The one serialisation of ``payload`` that is signed and sent (compact JSON, UTF-8, no NaN)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def sign(body: bytes, secret: Revealable | str) -> str:
    """``sha256=<hex>``: HMAC-SHA256 of exactly ``body`` with the secret as UTF-8 (GitHub's scheme)."""
    key = secret if isinstance(secret, str) else secret.reveal()
    if not key:
        raise ValueError("the webhook secret is empty: GitHub would send no signature, and a receiver must refuse it")
    return "sha256=" + hmac.new(key.encode("utf-8"), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class WebhookDelivery:
    """A sent delivery: its id, event, the exact bytes sent, and the receiver's status and body."""

    delivery: str
    event: str
    body: bytes
    status: int
    answer: str


def send_webhook(
    forward: Forward | str,
    event: str,
    payload: Any,
    *,
    secret: Revealable | str,
    delivery: str | None = None,
    timeout: float = 20.0,
    path: str = WEBHOOK_PATH,
) -> WebhookDelivery:
    """Serialise ``payload`` once, sign those bytes, POST them to ``path`` through ``forward`` (``timeout`` seconds).

    Returns the :class:`WebhookDelivery` whatever the status (the spec asserts 202: accepted, not done).
    Raises ``ValueError`` for an empty secret or a payload that is not JSON, and the
    :class:`~harness.errors.HopFailure` kinds of :func:`~harness.fetch_through` when the request fails on the way.
    """
    body = serialise(payload)
    delivery = delivery or str(uuid.uuid4())
    headers = {
        "content-type": "application/json",
        "x-github-event": event,
        "x-github-delivery": delivery,
        "x-hub-signature-256": sign(body, secret),
        "user-agent": "GitHub-Hookshot/stack-harness",
    }
    answer = fetch_through_sync(forward, "POST", path, content=body, headers=headers, timeout=timeout)
    return WebhookDelivery(delivery, event, body, answer.status_code, answer.text[:2000])
