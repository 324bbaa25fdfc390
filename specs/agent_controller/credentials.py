"""Linked credentials as the stack stores them: one Kubernetes Secret per (record type, subject).

The stack keeps identity links and Claude credentials in Secrets in its namespace (they moved out of Redis after a
Redis restart lost every link). Each record is one Secret, and this module reads, seeds, moves and deletes them with
the pinned ``kubectl`` of :class:`harness.Kube`, so a seeded record is exactly what the gateway and the
orchestrator read back. ``specs/cluster/README.md`` §5 states the contract; the details below are what the
product's credential store writes, and what a seed must match for the product to accept it.

Stored format (every field is a key of the Secret's ``data``, base64 of UTF-8 text, as the API server stores it):

- name ``<prefix>-<sha256(subject)[:16]>`` (lower-case hex of the UTF-8 subject): a subject such as
  ``openwebui:1234`` is not a legal object name, so the name is a hash and every read is an exact ``get``;
- labels ``controller-agent.io/credential`` (``identity-link`` or ``claude-auth``: what a sweep selects on),
  ``controller-agent.io/provider: github`` (identity links) or ``controller-agent.io/claude-auth-kind: setup-token |
  login`` (Claude records), and ``controller-agent.io/subject``: the subject made label-safe (every character
  outside ``[A-Za-z0-9._-]`` becomes ``-``, leading non-alphanumerics dropped, cut to 63 characters, trailing
  non-alphanumerics dropped, ``unknown`` if nothing is left): a search aid, not an identifier. Seeds add
  ``controller-agent.io/e2e-seeded: "true"``;
- ``_recordKey``: the exact plaintext subject (the only lossless record of whose credential it is);
- identity links (prefix ``identity-link-github``): ``githubLogin``, ``expiresAt`` and optional
  ``refreshExpiresAt`` in plaintext, ``token`` and optional ``refreshToken`` encrypted;
- Claude records (prefixes ``claude-auth-setup-token``, ``claude-auth-login``): ``kind`` (``setup-token`` /
  ``login``) and ``createdAt`` in plaintext, ``token`` (setup-token) or ``credentialsJson`` (login) encrypted;
- timestamps as JavaScript's ``toISOString()`` writes them: ``2025-01-31T12:00:00.000Z``;
- an encrypted field is ``<iv>:<tag>:<ciphertext>``, each standard base64: AES-256-GCM, a fresh 12-byte IV, the
  16-byte tag, no associated data, under the gateway's ``IDENTITY_LINK_ENCRYPTION_KEY`` (32 bytes, written as
  base64; the product also accepts 64 hex digits). In e2e that key lives in the Secret
  ``e2e-integration-gateway-secrets``. Ciphertext is not bound to the subject, so a record moves without the key.

Assumptions (the product does not state them; each is a reading of its code): a record whose Secret has no field
besides ``_recordKey`` is treated by the product as absent (here :attr:`CredentialRecord.fields` is then empty);
the product writes with create-then-replace, so it never leaves a ``kubectl.kubernetes.io/last-applied-configuration``
annotation; keys whose subjects contain a newline cannot be told apart by the label and are not supported here.

Seeding uses ``kubectl apply`` with ``data`` (never ``stringData``: a client-side apply cannot remove a
``stringData`` key it once set, so re-seeding without a refresh token would leave the old one), so re-seeding the
same subject replaces instead of failing with 409 AlreadyExists; keys another writer left (the product's own
``replace`` leaves no last-applied record for apply to diff against) are removed afterwards by a JSON patch, and the
record is read back before a seed returns, as the product does after its own writes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from harness.kube import DEFAULT_KUBECTL_TIMEOUT, Kube
from specs.agent_controller.errors import CredentialDecryptError as CredentialDecryptError
from specs.agent_controller.errors import CredentialError as CredentialError
from specs.agent_controller.errors import CredentialKeyError as CredentialKeyError

KEY_BYTES = 32
IV_BYTES = 12
TAG_BYTES = 16
RECORD_KEY_FIELD = "_recordKey"
CREDENTIAL_LABEL = "controller-agent.io/credential"
SUBJECT_LABEL = "controller-agent.io/subject"
SEEDED_LABEL = "controller-agent.io/e2e-seeded"
KEY_SECRET = "e2e-integration-gateway-secrets"
KEY_FIELD = "IDENTITY_LINK_ENCRYPTION_KEY"

SEEDED_GITHUB_TOKEN = "gho_e2e-seeded"
SEEDED_GITHUB_REFRESH_TOKEN = "ghr_e2e-seeded"
SEEDED_CLAUDE_TOKEN = "sk-ant-oat01-e2e-seeded"
SEEDED_CLAUDE_LOGIN = '{"e2e":true}'
LINK_LIFETIME = timedelta(days=365)
EXPIRED_BY = timedelta(seconds=60)
REFRESH_LIFETIME = timedelta(days=180)


@dataclass(frozen=True)
class RecordType:
    """One kind of credential record: its object-name ``prefix``, its ``credential`` label value, the extra
    ``labels`` the product stamps, and which fields it ``encrypts``."""

    prefix: str
    credential: str
    labels: Mapping[str, str]
    encrypts: frozenset[str]


GITHUB_LINK = RecordType(
    "identity-link-github",
    "identity-link",
    {"controller-agent.io/provider": "github"},
    frozenset({"token", "refreshToken"}),
)
CLAUDE_SETUP_TOKEN = RecordType(
    "claude-auth-setup-token",
    "claude-auth",
    {"controller-agent.io/claude-auth-kind": "setup-token"},
    frozenset({"token"}),
)
CLAUDE_LOGIN = RecordType(
    "claude-auth-login",
    "claude-auth",
    {"controller-agent.io/claude-auth-kind": "login"},
    frozenset({"credentialsJson"}),
)
RECORD_TYPES: tuple[RecordType, ...] = (GITHUB_LINK, CLAUDE_SETUP_TOKEN, CLAUDE_LOGIN)
ClaudeKind = Literal["setup-token", "login"]


@dataclass(frozen=True)
class CredentialRecord:
    """One stored record: Secret ``name``, ``subject`` (its ``_recordKey``, ``None`` if absent), ``fields`` (every
    data key but ``_recordKey``, as text; encrypted ones still packed), ``labels``."""

    name: str
    subject: str | None
    fields: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)


def secret_name(record_type: RecordType, subject: str) -> str:
    """``<prefix>-<sha256(subject)[:16]>``, the record's object name."""
    return f"{record_type.prefix}-{hashlib.sha256(subject.encode()).hexdigest()[:16]}"


def subject_label(subject: str) -> str:
    """The subject as the product mirrors it onto ``controller-agent.io/subject`` (a label-safe search aid)."""
    cleaned = re.sub(r"^[^A-Za-z0-9]+", "", re.sub(r"[^A-Za-z0-9._-]", "-", subject))
    return re.sub(r"[^A-Za-z0-9]+$", "", cleaned[:63]) or "unknown"


def js_iso(moment: datetime) -> str:
    """``moment`` as JavaScript's ``Date.toISOString()``: UTC, milliseconds, ``Z`` (``2025-01-31T12:00:00.000Z``)."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


# --- the field encryption ------------------------------------------------------------------------------------------


def decode_key(text: str) -> bytes:
    """The 32-byte AES key from its text form: base64 (standard or URL-safe alphabet) or 64 hex digits, as the
    product accepts it. Raises :class:`CredentialKeyError` (naming the decoded length, never the key)."""
    raw = text.strip()
    try:
        decoded = base64.b64decode(raw.replace("-", "+").replace("_", "/") + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) == KEY_BYTES:
        return decoded
    if re.fullmatch(r"[0-9a-fA-F]{64}", raw):
        return bytes.fromhex(raw)
    raise CredentialKeyError(
        f"the credential encryption key must be {KEY_BYTES} bytes as base64 or 64 hex digits; "
        f"this one is {len(raw)} characters and decodes to {len(decoded)} bytes"
    )


def encrypt_field(key: bytes, plaintext: str) -> str:
    """``plaintext`` encrypted as the product stores a field: ``base64(iv):base64(tag):base64(ciphertext)``."""
    _check_key(key)
    iv = os.urandom(IV_BYTES)
    sealed = AESGCM(key).encrypt(iv, plaintext.encode(), None)
    ciphertext, tag = sealed[:-TAG_BYTES], sealed[-TAG_BYTES:]
    return ":".join(base64.b64encode(part).decode() for part in (iv, tag, ciphertext))


def decrypt_field(key: bytes, packed: str) -> str:
    """The plaintext of a packed field. Raises :class:`CredentialDecryptError` when it is not three base64 parts
    with a 12-byte IV and a 16-byte tag, or does not authenticate under ``key``."""
    _check_key(key)
    parts = packed.split(":")
    if len(parts) != 3:
        raise CredentialDecryptError(
            f"an encrypted field has {len(parts)} ':'-separated parts, expected 3 (iv:tag:ciphertext)"
        )
    try:
        iv, tag, ciphertext = (base64.b64decode(part, validate=True) for part in parts)
    except (binascii.Error, ValueError) as exc:
        raise CredentialDecryptError(f"an encrypted field is not base64: {exc}") from None
    if len(iv) != IV_BYTES or len(tag) != TAG_BYTES:
        raise CredentialDecryptError(
            f"an encrypted field has a {len(iv)}-byte IV and a {len(tag)}-byte tag, expected {IV_BYTES} and {TAG_BYTES}"
        )
    try:
        return AESGCM(key).decrypt(iv, ciphertext + tag, None).decode()
    except InvalidTag:
        raise CredentialDecryptError(
            "an encrypted field does not authenticate under this key (written under another key, or altered)"
        ) from None


def _check_key(key: bytes) -> None:
    if not isinstance(key, bytes) or len(key) != KEY_BYTES:
        raise CredentialKeyError(
            f"the credential key must be {KEY_BYTES} bytes, got "
            f"{len(key) if isinstance(key, bytes) else type(key).__name__}"
        )


# --- the store ---------------------------------------------------------------------------------------------------


class CredentialStore:
    """Credential records in ``kube``'s namespace, encrypted under ``key`` (32 bytes; see :func:`decode_key`).

    Every call is one or a few bounded kubectl children (``timeout`` seconds each, shortened to the current
    ``wait_for`` attempt). kubectl failures raise :class:`harness.KubectlError` / :class:`harness.KubectlTimeout`;
    answers that are not credential records raise :class:`CredentialError`. Values are never put in a message.
    """

    def __init__(self, kube: Kube, key: bytes, *, timeout: float = DEFAULT_KUBECTL_TIMEOUT) -> None:
        _check_key(key)
        self.kube = kube
        self.key = key
        self.timeout = timeout

    @classmethod
    def from_cluster(
        cls, kube: Kube, *, secret: str = KEY_SECRET, field: str = KEY_FIELD, timeout: float = DEFAULT_KUBECTL_TIMEOUT
    ) -> CredentialStore:
        """A store using the key the gateway uses, read from Secret ``secret`` key ``field`` (a locally invented
        key would give records the gateway can only fail to decrypt, which reads as "no credential linked").
        Raises :class:`CredentialKeyError` when the Secret or the key is missing or malformed."""
        found = cls._get(kube, "secret", secret, timeout)
        encoded = ((found or {}).get("data") or {}).get(field)
        if not encoded:
            where = "does not exist" if found is None else f"has no {field}"
            raise CredentialKeyError(
                f"Secret {secret} in namespace {kube.namespace} {where}: the stack's secrets "
                "were not bootstrapped (upstream's bootstrap-secrets.sh creates them)"
            )
        return cls(kube, decode_key(_b64text(encoded, f"Secret {secret} field {field}")), timeout=timeout)

    # --- reading ------------------------------------------------------------------------------------------------

    def read(self, record_type: RecordType, subject: str) -> CredentialRecord | None:
        """The record stored for ``subject``, or ``None`` when its Secret does not exist (one ``kubectl get``)."""
        found = self._get(self.kube, "secret", secret_name(record_type, subject), self.timeout)
        return None if found is None else _record(found)

    def decrypt(self, record: CredentialRecord, field_name: str) -> str:
        """The plaintext of ``record``'s encrypted ``field_name``. Raises :class:`CredentialError` if absent."""
        if field_name not in record.fields:
            raise CredentialError(
                f"credential {record.name} has no field {field_name!r} "
                f"(fields: {', '.join(sorted(record.fields)) or 'none'})"
            )
        return decrypt_field(self.key, record.fields[field_name])

    def records(self, credential: str | None = None) -> list[CredentialRecord]:
        """Every credential Secret (label ``controller-agent.io/credential``, or ``=credential`` when given:
        ``identity-link`` / ``claude-auth``), sorted by name, in one ``kubectl get``."""
        selector = CREDENTIAL_LABEL if credential is None else f"{CREDENTIAL_LABEL}={credential}"
        listing = self.kube.kubectl_json("get", "secrets", "-l", selector, timeout=self.timeout)
        return sorted((_record(item) for item in listing.get("items", [])), key=lambda r: r.name)

    def subjects(self, record_type: RecordType) -> list[str]:
        """The subjects (from ``_recordKey``, never reversed from the hash) holding a ``record_type`` record, sorted."""
        prefix = record_type.prefix + "-"
        return sorted(
            r.subject
            for r in self.records(record_type.credential)
            if r.name.startswith(prefix) and r.subject is not None
        )

    def github_link_expiry(self, subject: str) -> datetime | None:
        """``expiresAt`` of ``subject``'s GitHub link (aware UTC), or ``None`` without a link."""
        record = self.read(GITHUB_LINK, subject)
        raw = record.fields.get("expiresAt") if record else None
        return None if raw is None else datetime.fromisoformat(raw)

    def has_github_link(self, subject: str) -> bool:
        """Whether ``subject`` has a stored GitHub link (a record with a ``githubLogin``)."""
        record = self.read(GITHUB_LINK, subject)
        return record is not None and "githubLogin" in record.fields

    # --- seeding ------------------------------------------------------------------------------------------------

    def seed(
        self, record_type: RecordType, subject: str, fields: Mapping[str, str], *, seeded: bool = True
    ) -> CredentialRecord:
        """Store exactly ``fields`` for ``subject`` (values as given: encrypt them first with :meth:`encrypt`),
        replacing any record there, and return it as read back; ``seeded`` adds the ``e2e-seeded`` label. Raises
        :class:`CredentialError` if the read-back differs (an admission webhook or a concurrent writer changed it)."""
        name = secret_name(record_type, subject)
        data = {k: _b64(v) for k, v in {**fields, RECORD_KEY_FIELD: subject}.items()}
        labels = {CREDENTIAL_LABEL: record_type.credential, **record_type.labels, SUBJECT_LABEL: subject_label(subject)}
        if seeded:
            labels[SEEDED_LABEL] = "true"
        manifest = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": name, "labels": labels},
            "data": data,
        }
        self.kube.kubectl("apply", "-f", "-", input=json.dumps(manifest), timeout=self.timeout)
        stored = self._get(self.kube, "secret", name, self.timeout) or {}
        stray = sorted(set(stored.get("data") or {}) - set(data))
        if stray:  # left by a writer that does not use apply: remove them so the record is exactly the seed
            patch = [{"op": "remove", "path": f"/data/{_pointer(k)}"} for k in stray]
            self.kube.kubectl("patch", "secret", name, "--type=json", "-p", json.dumps(patch), timeout=self.timeout)
            stored = self._get(self.kube, "secret", name, self.timeout) or {}
        if (stored.get("data") or {}) != data:
            raise CredentialError(
                f"credential {name} for {subject!r} did not persist as seeded: keys stored "
                f"{sorted(stored.get('data') or {})}, seeded {sorted(data)}"
            )
        return _record(stored)

    def encrypt(self, plaintext: str) -> str:
        """``plaintext`` packed as a stored encrypted field under this store's key."""
        return encrypt_field(self.key, plaintext)

    def seed_github_link(
        self,
        subject: str,
        github_login: str,
        *,
        expired: bool = False,
        refresh_token: bool = False,
        token: str = SEEDED_GITHUB_TOKEN,
        now: datetime | None = None,
    ) -> CredentialRecord:
        """A GitHub identity link for ``subject`` carrying ``github_login``: ``expiresAt`` one year ahead, or 60 s
        in the past when ``expired``; with ``refresh_token``, a refresh token valid 180 days (omitted otherwise, so
        an expired link is dead without any refresh attempt)."""
        moment = now or datetime.now(UTC)
        fields = {
            "githubLogin": github_login,
            "expiresAt": js_iso(moment - EXPIRED_BY if expired else moment + LINK_LIFETIME),
            "token": self.encrypt(token),
        }
        if refresh_token:
            fields["refreshToken"] = self.encrypt(SEEDED_GITHUB_REFRESH_TOKEN)
            fields["refreshExpiresAt"] = js_iso(moment + REFRESH_LIFETIME)
        return self.seed(GITHUB_LINK, subject, fields)

    def seed_claude(self, subject: str, kind: ClaudeKind, *, now: datetime | None = None) -> CredentialRecord:
        """A Claude credential of ``kind`` for ``subject`` (``setup-token``: an encrypted ``token``; ``login``: an
        encrypted ``credentialsJson``)."""
        created = js_iso(now or datetime.now(UTC))
        if kind == "setup-token":
            return self.seed(
                CLAUDE_SETUP_TOKEN,
                subject,
                {"kind": kind, "createdAt": created, "token": self.encrypt(SEEDED_CLAUDE_TOKEN)},
            )
        if kind == "login":
            return self.seed(
                CLAUDE_LOGIN,
                subject,
                {"kind": kind, "createdAt": created, "credentialsJson": self.encrypt(SEEDED_CLAUDE_LOGIN)},
            )
        raise ValueError(f"kind must be 'setup-token' or 'login', got {kind!r}")

    def seed_all_claude(self, subject: str) -> list[CredentialRecord]:
        """Both Claude records for ``subject`` (what an agent declaring both Claude providers needs)."""
        return [self.seed_claude(subject, "setup-token"), self.seed_claude(subject, "login")]

    # --- moving and deleting ------------------------------------------------------------------------------------

    def move(
        self, record_type: RecordType, from_subject: str, to_subject: str
    ) -> Literal["moved", "not-found", "occupied"]:
        """Move ``from_subject``'s record to ``to_subject`` in the product's order: read the source, refuse an
        occupied destination (or the same subject), write, read back, and only then delete the source."""
        if from_subject == to_subject:
            return "occupied"
        source = self.read(record_type, from_subject)
        if source is None:
            return "not-found"
        if self.read(record_type, to_subject) is not None:
            return "occupied"
        self.seed(record_type, to_subject, source.fields, seeded=source.labels.get(SEEDED_LABEL) == "true")
        self.kube.kubectl("delete", "secret", source.name, "--ignore-not-found", "--wait=false", timeout=self.timeout)
        return "moved"

    def delete(self, record_type: RecordType, subject: str) -> bool:
        """Delete ``subject``'s record; ``True`` if one was there."""
        done = self.kube.kubectl(
            "delete",
            "secret",
            secret_name(record_type, subject),
            "--ignore-not-found",
            "--wait=false",
            "-o",
            "name",
            timeout=self.timeout,
        )
        return bool(done.stdout.strip())

    def delete_all(self, credential: str | None = None, *, seeded_only: bool = False) -> list[str]:
        """Delete every credential Secret (or those of ``credential``; with ``seeded_only`` only seeded ones) in one
        ``kubectl delete -l``, so a test starts from a known-unlinked state. Returns the deleted names."""
        selector = CREDENTIAL_LABEL if credential is None else f"{CREDENTIAL_LABEL}={credential}"
        if seeded_only:
            selector += f",{SEEDED_LABEL}=true"
        done = self.kube.kubectl(
            "delete",
            "secrets",
            "-l",
            selector,
            "--ignore-not-found",
            "--wait=false",
            "-o",
            "name",
            timeout=self.timeout,
        )
        return sorted(line.split("/", 1)[-1] for line in done.stdout.split() if line)

    @staticmethod
    def _get(kube: Kube, kind: str, name: str, timeout: float) -> dict[str, Any] | None:
        done = kube.kubectl("get", kind, name, "-o", "json", "--ignore-not-found", timeout=timeout)
        if not done.stdout.strip():
            return None
        try:
            found = json.loads(done.stdout)
        except json.JSONDecodeError as exc:
            raise CredentialError(f"kubectl get {kind} {name} printed something that is not JSON ({exc})") from None
        if not isinstance(found, dict):
            raise CredentialError(f"kubectl get {kind} {name} printed a {type(found).__name__}, not an object")
        return found


def _record(secret: dict[str, Any]) -> CredentialRecord:
    meta = secret.get("metadata") or {}
    name = str(meta.get("name", "?"))
    decoded = {k: _b64text(v, f"credential {name} field {k}") for k, v in (secret.get("data") or {}).items()}
    subject = decoded.pop(RECORD_KEY_FIELD, None)
    return CredentialRecord(name, subject, decoded, dict(meta.get("labels") or {}))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _b64text(value: Any, where: str) -> str:
    try:
        return base64.b64decode(str(value), validate=True).decode()
    except (binascii.Error, ValueError) as exc:
        raise CredentialError(f"{where} is not base64 of UTF-8 text ({exc})") from None


def _pointer(key: str) -> str:
    """``key`` escaped for a JSON Pointer (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")
