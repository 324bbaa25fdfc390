"""Seeding linked credentials the way the stack stores them, so a spec can require a launch.

The inverted assertion (specs/cluster/README.md §1): seed the credential at the subject the gate *should* use,
then require an AgentRun; a gate that looks elsewhere parks the turn and the spec fails. Credentials are Secrets
named ``<prefix>-<sha256(subject)[:16] hex>``, labelled ``controller-agent.io/credential: <prefix>``, holding
``payload``: a 12-byte IV followed by the AES-256-GCM ciphertext and tag of a JSON object, under the 32-byte key
``IDENTITY_LINK_ENCRYPTION_KEY`` (base64) of the gateway's Secret. They are applied, so re-seeding replaces.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from datetime import datetime, timedelta, timezone
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from harness.cluster_secrets import SecretValue
from harness.kube import Kube

CREDENTIAL_LABEL = "controller-agent.io/credential"
CLAUDE_SETUP_TOKEN = "claude-auth-setup-token"
CLAUDE_LOGIN = "claude-auth-login"
KEY_SECRET = ("e2e-integration-gateway-secrets", "IDENTITY_LINK_ENCRYPTION_KEY")


def secret_name(prefix: str, subject: str) -> str:
    return f"{prefix}-{hashlib.sha256(subject.encode()).hexdigest()[:16]}"


def seal(payload: dict[str, Any], key: SecretValue) -> str:
    """``payload`` sealed for a Secret's ``data``: base64 of IV + AES-256-GCM ciphertext and tag.

    Raises ``ValueError`` when the key is not base64 of 32 bytes (the stack would crash-loop on it too).
    """
    raw = base64.b64decode(key.reveal())
    if len(raw) != 32:
        raise ValueError(f"{key!r} must be base64 of 32 bytes, it decodes to {len(raw)}")
    iv = os.urandom(12)
    return base64.b64encode(iv + AESGCM(raw).encrypt(iv, json.dumps(payload).encode(), None)).decode()


def credential_secret(prefix: str, subject: str, payload: dict[str, Any], key: SecretValue,
                      namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": secret_name(prefix, subject), "namespace": namespace,
                         "labels": {CREDENTIAL_LABEL: prefix}},
            "data": {"payload": seal(dict(payload, subject=subject), key)}}


def seed_claude(kube: Kube, subject: str, key: SecretValue, *,
                expires_in: timedelta = timedelta(days=365)) -> list[str]:
    """Link Claude credentials (setup token and login JSON) to ``subject``; returns the Secret names.

    Raises ``ValueError`` for a bad key, ``KubectlError`` when the apply fails.
    """
    expires = (datetime.now(timezone.utc) + expires_in).isoformat()
    secrets = [
        credential_secret(CLAUDE_SETUP_TOKEN, subject, {"token": "sk-ant-oat01-e2e-seeded", "expiresAt": expires},
                          key, kube.namespace),
        credential_secret(CLAUDE_LOGIN, subject, {"credentials": {"claudeAiOauth": {"accessToken": "e2e-seeded"}},
                                                  "expiresAt": expires}, key, kube.namespace),
    ]
    kube.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": secrets}))
    return [s["metadata"]["name"] for s in secrets]


def unseed(kube: Kube, subject: str) -> None:
    """Remove ``subject``'s Claude credentials (missing ones are fine)."""
    kube.kubectl("delete", "secret", "--ignore-not-found", "--wait=false",
                 secret_name(CLAUDE_SETUP_TOKEN, subject), secret_name(CLAUDE_LOGIN, subject))
