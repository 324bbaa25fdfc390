"""A fake GitHub (REST subset, App installation tokens, OAuth user tokens, signed webhooks) that githubkit and PyGithub
accept (OAuth in :mod:`fakes.github.oauth`); what it models is listed in ``fakes/github/README.md``.

Public API:

- :func:`serve` (uvicorn in a thread, port 0) and :func:`in_process` (no socket): context managers yielding a
  ``fakes.server.FakeHandle``; ``python -m fakes.github`` runs it standalone. :func:`unserved` lists the 501s.
- :class:`FakeGitHub`: the fake itself (a :class:`fakes.core.FakeApp`), with seeding methods.
- :func:`send_webhook`, :func:`redeliver`, :func:`send_reordered`: the webhook sender (serialise once, sign, send
  those bytes, record the delivery, never retry); a failed delivery raises :class:`DeliveryFailed` unless
  ``check=False``; payloads over GitHub's 25 MB cap (:data:`MAX_PAYLOAD_BYTES`) are a ``ValueError``.
- :func:`verify_signature` ``(*, secret, body, header)``: SHA-256-only, constant-time signature check for receivers;
  ``False`` for any bad header and for a missing or empty secret, ``TypeError`` for arguments of the wrong type.
- Payload builders over the fake's state: :func:`issues_opened_payload`, :func:`issues_labeled_payload`,
  :func:`issue_comment_created_payload`, :func:`pull_request_opened_payload`.
"""

from fakes.extras import requires_extra

with requires_extra("fakes.github"):
    from fakes.github.app import HEALTH_PATH, FakeGitHub
    from fakes.github.payloads import (
        issue_comment_created_payload,
        issues_labeled_payload,
        issues_opened_payload,
        pull_request_opened_payload,
    )
    from fakes.github.server import in_process, serve, unserved
    from fakes.github.signing import sign_sha1, sign_sha256, verify_signature
    from fakes.github.webhooks import (
        MAX_PAYLOAD_BYTES,
        Delivery,
        DeliveryFailed,
        DeliveryLog,
        redeliver,
        send_reordered,
        send_webhook,
    )

__all__ = [
    "HEALTH_PATH",
    "MAX_PAYLOAD_BYTES",
    "Delivery",
    "DeliveryFailed",
    "DeliveryLog",
    "FakeGitHub",
    "in_process",
    "issue_comment_created_payload",
    "issues_labeled_payload",
    "issues_opened_payload",
    "pull_request_opened_payload",
    "redeliver",
    "send_reordered",
    "send_webhook",
    "serve",
    "sign_sha1",
    "sign_sha256",
    "unserved",
    "verify_signature",
]
