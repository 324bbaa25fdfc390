"""Linked credentials as the stack reads them: one Kubernetes Secret per (record type, subject).

The twin plays the product's reader; :mod:`specs.agent_controller.credentials` is the writer the specs seed with.
Both follow the
stored format in ``specs/cluster/README.md`` §5 ("Credentials"): Secret ``<prefix>-<sha256(subject)[:16] hex>``,
``data`` keys base64 of UTF-8 text, ``_recordKey`` the exact subject, encrypted fields packed
``base64(iv):base64(tag):base64(ciphertext)`` (AES-256-GCM, 12-byte IV, 16-byte tag, no associated data) under the
gateway's ``IDENTITY_LINK_ENCRYPTION_KEY`` (32 bytes as base64, or 64 hex digits). The reader is written here on its
own, not imported from the harness, so a spec that seeds with the harness and launches through the twin checks that
the two sides agree. The orchestrator's pre-flight and the core-controller read records here, through the API with
their own ServiceAccount (:class:`~fakes.stack.cluster_api.ClusterApi`, in its namespace).

Writes are the product's too (:func:`write`, :func:`move`): the identity gate moves a chat user's record to their
canonical subject, the gateway's identity-link API stores a refreshed GitHub link. A write is create-then-replace
(no ``last-applied`` annotation), a move reads the source, refuses an occupied destination, writes, reads back and
only then deletes the source; encrypted fields move as they are (the ciphertext is not bound to the subject).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fakes.stack import config
from fakes.stack.cluster_api import ApiError

if TYPE_CHECKING:
    from fakes.stack.cluster_api import ClusterApi

RECORD_KEY = "_recordKey"
ENCRYPTED = frozenset({"token", "refreshToken", "credentialsJson"})
SUBJECT_LABEL = "controller-agent.io/subject"
#: Labels the product stamps per record kind (object-name prefix): the credential label's value and the extras.
KIND_LABELS: dict[str, dict[str, str]] = {
    config.GITHUB_LINK_PREFIX: {config.CREDENTIAL_LABEL: "identity-link", "controller-agent.io/provider": "github"},
    config.CLAUDE_SECRET_PREFIXES[0]: {
        config.CREDENTIAL_LABEL: "claude-auth",
        "controller-agent.io/claude-auth-kind": "setup-token",
    },
    config.CLAUDE_SECRET_PREFIXES[1]: {
        config.CREDENTIAL_LABEL: "claude-auth",
        "controller-agent.io/claude-auth-kind": "login",
    },
}


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


async def lookup(api: ClusterApi, subject: str, key_text: str, prefix: str) -> dict[str, str] | None:
    """The record of kind ``prefix`` stored for ``subject``, its fields as plaintext, or ``None`` when there is none,
    it belongs to another subject, holds nothing but its record key, or an encrypted field does not open (a record
    written under another key reads as absent, as in the product)."""
    key = key_bytes(key_text)
    if key is None:
        return None
    secret = await api.get("secrets", secret_name(prefix, subject))
    if secret is None:
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


async def claude(api: ClusterApi, subject: str, key_text: str) -> dict[str, str]:
    """The Claude variables for ``subject``: ``CLAUDE_CODE_OAUTH_TOKEN`` (the setup-token record's ``token``) and
    ``CLAUDE_LOGIN_CREDENTIALS_JSON`` (the login record's ``credentialsJson``), each when its record exists."""
    found: dict[str, str] = {}
    setup = await lookup(api, subject, key_text, config.CLAUDE_SECRET_PREFIXES[0])
    if setup and setup.get("token"):
        found["CLAUDE_CODE_OAUTH_TOKEN"] = setup["token"]
    login = await lookup(api, subject, key_text, config.CLAUDE_SECRET_PREFIXES[1])
    if login and login.get("credentialsJson"):
        found["CLAUDE_LOGIN_CREDENTIALS_JSON"] = login["credentialsJson"]
    return found


# --- the product's writes ----------------------------------------------------------------------------------------


def seal_field(plaintext: str, key: bytes) -> str:
    """``plaintext`` packed as a stored encrypted field: ``base64(iv):base64(tag):base64(ciphertext)``."""
    iv = os.urandom(12)
    sealed = AESGCM(key).encrypt(iv, plaintext.encode(), None)
    return ":".join(base64.b64encode(part).decode() for part in (iv, sealed[-16:], sealed[:-16]))


def js_iso(moment: datetime) -> str:
    """``moment`` as JavaScript's ``toISOString()`` writes it (``2025-01-31T12:00:00.000Z``)."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_js_iso(text: str | None) -> datetime | None:
    """An ISO timestamp as the product writes it, aware UTC; ``None`` for a missing or malformed one."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def subject_label(subject: str) -> str:
    cleaned = re.sub(r"^[^A-Za-z0-9]+", "", re.sub(r"[^A-Za-z0-9._-]", "-", subject))
    return re.sub(r"[^A-Za-z0-9]+$", "", cleaned[:63]) or "unknown"


async def raw_fields(api: ClusterApi, subject: str, prefix: str) -> dict[str, str] | None:
    """The record's stored fields (encrypted ones still packed, ``_recordKey`` left out), or ``None`` when there is
    no record of ``subject`` (no Secret, another subject's, or nothing but the record key)."""
    secret = await api.get("secrets", secret_name(prefix, subject))
    if secret is None:
        return None
    try:
        fields = {k: base64.b64decode(str(v), validate=True).decode() for k, v in (secret.get("data") or {}).items()}
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    if fields.pop(RECORD_KEY, None) != subject or not fields:
        return None
    return fields


async def write(api: ClusterApi, subject: str, prefix: str, fields: dict[str, str]) -> None:
    """Store ``fields`` (encrypted ones already packed) as ``subject``'s record of kind ``prefix``: create, or
    replace the whole Secret when it exists (the product's create-then-replace). Raises ``ApiError``."""
    data = {k: base64.b64encode(v.encode()).decode() for k, v in {**fields, RECORD_KEY: subject}.items()}
    labels = {**KIND_LABELS.get(prefix, {config.CREDENTIAL_LABEL: "unknown"}), SUBJECT_LABEL: subject_label(subject)}
    name = secret_name(prefix, subject)
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": api.namespace, "labels": labels},
        "data": data,
    }
    try:
        await api.create("secrets", obj)
    except ApiError as exc:
        if exc.code != 409:
            raise
        await api.replace("secrets", obj)  # no resourceVersion: an unconditional update, as the product's


async def move(
    api: ClusterApi, prefix: str, source: str, destination: str
) -> Literal["moved", "not-found", "occupied"]:
    """Move ``source``'s record of kind ``prefix`` to ``destination`` in the product's order (see the module
    docstring). Raises ``ApiError`` when a write fails, and ``RuntimeError`` when the read-back differs."""
    if source == destination:
        return "occupied"
    fields = await raw_fields(api, source, prefix)
    if fields is None:
        return "not-found"
    if await api.get("secrets", secret_name(prefix, destination)) is not None:
        return "occupied"
    await write(api, destination, prefix, fields)
    if await raw_fields(api, destination, prefix) != fields:
        raise RuntimeError(f"credential move {prefix} -> {secret_name(prefix, destination)}: read-back differs")
    await api.delete("secrets", secret_name(prefix, source))
    return "moved"


async def github_link(api: ClusterApi, subject: str, key_text: str) -> dict[str, str] | None:
    """``subject``'s GitHub link with its fields as plaintext (``githubLogin``, ``expiresAt``, ``token``, optional
    ``refreshToken`` and ``refreshExpiresAt``), or ``None`` when there is none or it has no ``githubLogin``."""
    link = await lookup(api, subject, key_text, config.GITHUB_LINK_PREFIX)
    return link if link and link.get("githubLogin") else None
