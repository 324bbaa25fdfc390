"""Linked credentials as the stack reads them: one Kubernetes Secret per (record type, subject).

The twin plays the product's reader; :mod:`harness.credentials` is the writer the specs seed with. Both follow the
stored format in ``specs/cluster/README.md`` §5 ("Credentials"): Secret ``<prefix>-<sha256(subject)[:16] hex>``,
``data`` keys base64 of UTF-8 text, ``_recordKey`` the exact subject, encrypted fields packed
``base64(iv):base64(tag):base64(ciphertext)`` (AES-256-GCM, 12-byte IV, 16-byte tag, no associated data) under the
gateway's ``IDENTITY_LINK_ENCRYPTION_KEY`` (32 bytes as base64, or 64 hex digits). The reader is written here on its
own, not imported from the harness, so a spec that seeds with the harness and launches through the twin checks that
the two sides agree. The orchestrator's pre-flight and the core-controller read records here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fakes.stack import config

if TYPE_CHECKING:
    from fakes.kube.store import Store

RECORD_KEY = "_recordKey"
ENCRYPTED = frozenset({"token", "refreshToken", "credentialsJson"})


def secret_name(prefix: str, subject: str) -> str:
    return f"{prefix}-{hashlib.sha256(subject.encode()).hexdigest()[:16]}"


def key_bytes(text: str) -> bytes | None:
    """The 32-byte key from base64 (either alphabet) or 64 hex digits; ``None`` for anything else."""
    raw = text.strip()
    try:
        decoded = base64.b64decode(raw.replace("-", "+").replace("_", "/") + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) == 32:
        return decoded
    return bytes.fromhex(raw) if re.fullmatch(r"[0-9a-fA-F]{64}", raw) else None


def open_field(packed: str, key: bytes) -> str | None:
    """The plaintext of a packed field, or ``None`` when it is malformed or does not open under ``key``."""
    parts = packed.split(":")
    if len(parts) != 3:
        return None
    try:
        iv, tag, ciphertext = (base64.b64decode(part, validate=True) for part in parts)
        return AESGCM(key).decrypt(iv, ciphertext + tag, None).decode()
    except (binascii.Error, ValueError, InvalidTag, UnicodeDecodeError):
        return None


def lookup(store: Store, namespace: str, subject: str, key_text: str, prefix: str) -> dict[str, str] | None:
    """The record of kind ``prefix`` stored for ``subject``, its fields as plaintext, or ``None`` when there is none,
    it belongs to another subject, holds nothing but its record key, or an encrypted field does not open (a record
    written under another key reads as absent, as in the product)."""
    key = key_bytes(key_text)
    secret = store.get("secrets", namespace, secret_name(prefix, subject))
    if key is None or secret is None:
        return None
    try:
        fields = {k: base64.b64decode(str(v), validate=True).decode() for k, v in (secret.get("data") or {}).items()}
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    if fields.pop(RECORD_KEY, None) != subject or not fields:
        return None
    for name in ENCRYPTED & fields.keys():
        plain = open_field(fields[name], key)
        if plain is None:
            return None
        fields[name] = plain
    return fields


def claude(store: Store, namespace: str, subject: str, key_text: str) -> dict[str, str]:
    """The Claude variables for ``subject``: ``CLAUDE_CODE_OAUTH_TOKEN`` (the setup-token record's ``token``) and
    ``CLAUDE_LOGIN_CREDENTIALS_JSON`` (the login record's ``credentialsJson``), each when its record exists."""
    found: dict[str, str] = {}
    setup = lookup(store, namespace, subject, key_text, config.CLAUDE_SECRET_PREFIXES[0])
    if setup and setup.get("token"):
        found["CLAUDE_CODE_OAUTH_TOKEN"] = setup["token"]
    login = lookup(store, namespace, subject, key_text, config.CLAUDE_SECRET_PREFIXES[1])
    if login and login.get("credentialsJson"):
        found["CLAUDE_LOGIN_CREDENTIALS_JSON"] = login["credentialsJson"]
    return found
