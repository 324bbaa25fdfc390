"""Linked credentials as the stack stores them: one Kubernetes Secret per (kind, subject), AES-256-GCM sealed.

Layout (specs/cluster/README.md §5, "Credentials"): name ``<prefix>-<sha256(subject)[:16] hex>``, label
``controller-agent.io/credential: <prefix>``, key ``payload`` holding a 12-byte IV followed by the GCM
ciphertext and tag of a JSON object; the 32-byte key is ``IDENTITY_LINK_ENCRYPTION_KEY`` (base64). The orchestrator's
pre-flight and the core-controller read them here; the harness seeds them (``harness.credentials``).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fakes.stack import config

if TYPE_CHECKING:
    from fakes.kube.store import Store


def secret_name(prefix: str, subject: str) -> str:
    return f"{prefix}-{hashlib.sha256(subject.encode()).hexdigest()[:16]}"


def open_payload(sealed_b64: str, key_b64: str) -> dict[str, Any] | None:
    """The decrypted JSON object, or ``None`` when it does not open with ``key_b64`` (wrong key, tampered)."""
    try:
        sealed = base64.b64decode(sealed_b64)
        key = base64.b64decode(key_b64)
        plain = AESGCM(key).decrypt(sealed[:12], sealed[12:], None)
        value = json.loads(plain)
    except (InvalidTag, ValueError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def lookup(store: Store, namespace: str, subject: str, key_b64: str, prefix: str) -> dict[str, Any] | None:
    """The credential of kind ``prefix`` linked to ``subject`` (decrypted), or ``None``."""
    secret = store.get("secrets", namespace, secret_name(prefix, subject))
    if secret is None:
        return None
    sealed = (secret.get("data") or {}).get("payload")
    if not sealed:
        return None
    payload = open_payload(sealed, key_b64)
    if payload is None or payload.get("subject") != subject:
        return None
    return payload


def claude(store: Store, namespace: str, subject: str, key_b64: str) -> dict[str, str]:
    """The Claude variables for ``subject``: ``CLAUDE_CODE_OAUTH_TOKEN`` and ``CLAUDE_LOGIN_CREDENTIALS_JSON`` when
    their Secrets exist (either may be missing)."""
    found: dict[str, str] = {}
    setup = lookup(store, namespace, subject, key_b64, config.CLAUDE_SECRET_PREFIXES[0])
    if setup and setup.get("token"):
        found["CLAUDE_CODE_OAUTH_TOKEN"] = str(setup["token"])
    login = lookup(store, namespace, subject, key_b64, config.CLAUDE_SECRET_PREFIXES[1])
    if login and login.get("credentials") is not None:
        found["CLAUDE_LOGIN_CREDENTIALS_JSON"] = json.dumps(login["credentials"])
    return found
