"""Credential records as the stack stores them: the field encryption (a known answer from Node's crypto, as the
gateway encrypts, and Node decrypting ours when it is installed), the naming, and seeding, reading, moving and
deleting through the real kubectl against the Kubernetes API double."""

from __future__ import annotations

import base64
import json
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import fakes.kube
from fakes.kube import KubeHandle
from harness import process
from specs.agent_controller.credentials import (
    CLAUDE_LOGIN,
    CLAUDE_SETUP_TOKEN,
    GITHUB_LINK,
    CredentialStore,
    decode_key,
    decrypt_field,
    encrypt_field,
    js_iso,
    secret_name,
    subject_label,
)
from specs.agent_controller.errors import CredentialDecryptError, CredentialKeyError
from specs.kube.conftest import require_kubectl

pytestmark = pytest.mark.timeout(120)

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
# Produced once by Node's crypto exactly as the gateway encrypts a field (aes-256-gcm, random 12-byte IV,
# `${iv.base64}:${authTag.base64}:${ciphertext.base64}`) under KEY, for the plaintext "gho_e2e-seeded".
NODE_PACKED = "HwIA7S9hm/6aw7db:jbmrvNbuVPlfbFuT+1tS9w==:i8sVWNXN+tjWREo3GkU="
ISO_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


# --- encryption and naming, no cluster -------------------------------------------------------------------------


def test_a_field_the_gateway_wrote_decrypts() -> None:
    assert decrypt_field(KEY, NODE_PACKED) == "gho_e2e-seeded"


def test_an_encrypted_field_is_iv_tag_ciphertext_with_a_fresh_iv() -> None:
    packed = encrypt_field(KEY, "sk-ant-oat01-e2e-seeded")
    iv, tag, ciphertext = (base64.b64decode(p, validate=True) for p in packed.split(":"))
    assert (len(iv), len(tag)) == (12, 16)
    assert AESGCM(KEY).decrypt(iv, ciphertext + tag, None) == b"sk-ant-oat01-e2e-seeded"
    assert encrypt_field(KEY, "sk-ant-oat01-e2e-seeded") != packed


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: the cross-check needs Node's crypto")
def test_node_decrypts_what_we_encrypt_as_the_gateway_does() -> None:
    script = (
        "const c=require('node:crypto');const [iv,tag,ct]=process.argv[2].split(':').map(p=>Buffer.from(p,"
        "'base64'));const d=c.createDecipheriv('aes-256-gcm',Buffer.from(process.argv[1],'base64'),iv);"
        "d.setAuthTag(tag);process.stdout.write(Buffer.concat([d.update(ct),d.final()]).toString('utf8'))"
    )
    packed = encrypt_field(KEY, '{"e2e":true}')
    done = process.run_bounded(["node", "-e", script, base64.b64encode(KEY).decode(), packed], timeout=30.0)
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"e2e":true}'


def test_a_field_under_another_key_or_altered_does_not_decrypt() -> None:
    with pytest.raises(CredentialDecryptError, match="does not authenticate"):
        decrypt_field(OTHER_KEY, NODE_PACKED)
    iv, tag, ciphertext = NODE_PACKED.split(":")
    flipped = base64.b64encode(bytes([base64.b64decode(ciphertext)[0] ^ 1]) + base64.b64decode(ciphertext)[1:])
    with pytest.raises(CredentialDecryptError, match="does not authenticate"):
        decrypt_field(KEY, f"{iv}:{tag}:{flipped.decode()}")
    with pytest.raises(CredentialDecryptError, match="3"):
        decrypt_field(KEY, "gho_plaintext")
    with pytest.raises(CredentialDecryptError, match="5-byte IV and a 16-byte tag, expected 12 and 16"):
        decrypt_field(KEY, f"{base64.b64encode(b'short').decode()}:{tag}:{ciphertext}")


def test_the_key_is_read_as_the_product_reads_it() -> None:
    assert decode_key(base64.b64encode(KEY).decode()) == KEY
    assert decode_key(base64.urlsafe_b64encode(KEY).decode().rstrip("=") + "\n") == KEY
    assert decode_key(KEY.hex()) == KEY
    with pytest.raises(CredentialKeyError, match="decodes to 16 bytes") as short:
        decode_key(base64.b64encode(KEY[:16]).decode())
    assert base64.b64encode(KEY[:16]).decode() not in str(short.value)
    with pytest.raises(CredentialKeyError):
        CredentialStore(None, KEY[:31])  # type: ignore[arg-type]


def test_names_are_the_prefix_and_sixteen_hex_of_the_subjects_sha256() -> None:
    # Digests computed independently (`printf 'github:e2e-user' | sha256sum`).
    assert secret_name(GITHUB_LINK, "github:e2e-user") == "identity-link-github-7d7beb89b35e7bec"
    assert secret_name(CLAUDE_LOGIN, "openwebui:e2e-chat-user") == "claude-auth-login-35327ca7c37d22e7"


@pytest.mark.parametrize(
    ("subject", "label"),
    [
        ("openwebui:1234", "openwebui-1234"),
        ("github:E2E-User", "github-E2E-User"),
        (":::github:x", "github-x"),
        ("client-integration-gateway", "client-integration-gateway"),
        ("a" * 62 + ":b", "a" * 62),
        ("::::", "unknown"),
    ],
)
def test_the_subject_label_is_made_label_safe_as_the_product_does(subject: str, label: str) -> None:
    assert subject_label(subject) == label


def test_timestamps_are_written_as_javascript_writes_them() -> None:
    moment = datetime(2025, 1, 31, 13, 0, 0, 123456, tzinfo=timezone(timedelta(hours=1)))
    assert js_iso(moment) == "2025-01-31T12:00:00.123Z"


# --- the store through kubectl against the double ---------------------------------------------------------------


@pytest.fixture(scope="module")
def kd() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve(controllers=False) as handle:  # pods here are scripted by hand
        yield handle


@pytest.fixture
def store(kd: KubeHandle) -> CredentialStore:
    kd.reset()
    return CredentialStore(kd.kube(), KEY)


def stored(kd: KubeHandle, name: str) -> dict[str, Any]:
    found = kd.store.get("secrets", kd.namespace, name)
    assert found is not None, f"no Secret {name}"
    return found


def test_a_seeded_link_is_stored_as_the_product_stores_it(store: CredentialStore, kd: KubeHandle) -> None:
    before = datetime.now(UTC)
    record = store.seed_github_link("github:e2e-user", "e2e-user")
    secret = stored(kd, "identity-link-github-7d7beb89b35e7bec")
    assert secret["metadata"]["labels"] == {
        "controller-agent.io/credential": "identity-link",
        "controller-agent.io/provider": "github",
        "controller-agent.io/subject": "github-e2e-user",
        "controller-agent.io/e2e-seeded": "true",
    }
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert sorted(data) == ["_recordKey", "expiresAt", "githubLogin", "token"]
    assert data["_recordKey"] == "github:e2e-user"
    assert data["githubLogin"] == "e2e-user"
    assert ISO_MS.fullmatch(data["expiresAt"])
    expires = datetime.fromisoformat(data["expiresAt"])
    assert timedelta(days=364) < expires - before < timedelta(days=366)
    assert decrypt_field(KEY, data["token"]) == "gho_e2e-seeded"
    assert record.subject == "github:e2e-user"
    assert store.decrypt(record, "token") == "gho_e2e-seeded"


def test_reseeding_replaces_the_record_and_never_conflicts(store: CredentialStore, kd: KubeHandle) -> None:
    store.seed_github_link("github:e2e-user", "e2e-user", expired=True, refresh_token=True)
    first = store.read(GITHUB_LINK, "github:e2e-user")
    assert first is not None
    assert sorted(first.fields) == ["expiresAt", "githubLogin", "refreshExpiresAt", "refreshToken", "token"]
    assert store.decrypt(first, "refreshToken") == "ghr_e2e-seeded"
    second = store.seed_github_link("github:e2e-user", "e2e-other-user")
    assert sorted(second.fields) == ["expiresAt", "githubLogin", "token"]
    assert second.fields["githubLogin"] == "e2e-other-user"
    assert store.github_link_expiry("github:e2e-user") > datetime.now(UTC)  # type: ignore[operator]


def test_keys_left_by_a_writer_that_does_not_apply_are_removed(store: CredentialStore, kd: KubeHandle) -> None:
    name = secret_name(CLAUDE_SETUP_TOKEN, "github:e2e-user")
    kd.store.create(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": kd.namespace},
            "data": {"token": base64.b64encode(b"old").decode(), "legacyField": base64.b64encode(b"x").decode()},
        },
    )
    record = store.seed_claude("github:e2e-user", "setup-token")
    assert sorted(record.fields) == ["createdAt", "kind", "token"]
    assert sorted(stored(kd, name)["data"]) == ["_recordKey", "createdAt", "kind", "token"]


def test_the_key_comes_from_the_gateways_secret(kd: KubeHandle) -> None:
    kd.reset()
    kube = kd.kube()
    with pytest.raises(CredentialKeyError, match="e2e-integration-gateway-secrets .* does not exist.*bootstrap"):
        CredentialStore.from_cluster(kube)
    key_text = base64.b64encode(KEY)  # the gateway's env value, itself stored base64 in the Secret
    kd.store.create(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "e2e-integration-gateway-secrets", "namespace": kd.namespace},
            "data": {"IDENTITY_LINK_ENCRYPTION_KEY": base64.b64encode(key_text).decode()},
        },
    )
    assert CredentialStore.from_cluster(kube).key == KEY


def test_claude_records_and_the_subjects_that_hold_them(store: CredentialStore) -> None:
    store.seed_all_claude("github:e2e-user")
    store.seed_claude("openwebui:e2e-chat-user", "login")
    store.seed_github_link("github:e2e-user", "e2e-user")
    assert store.subjects(CLAUDE_SETUP_TOKEN) == ["github:e2e-user"]
    assert store.subjects(CLAUDE_LOGIN) == ["github:e2e-user", "openwebui:e2e-chat-user"]
    assert store.subjects(GITHUB_LINK) == ["github:e2e-user"]
    login = store.read(CLAUDE_LOGIN, "openwebui:e2e-chat-user")
    assert login is not None
    assert login.fields["kind"] == "login"
    assert json.loads(store.decrypt(login, "credentialsJson")) == {"e2e": True}
    assert login.labels["controller-agent.io/claude-auth-kind"] == "login"
    assert [r.name for r in store.records("claude-auth")] == sorted(
        secret_name(t, s)
        for t, s in [
            (CLAUDE_SETUP_TOKEN, "github:e2e-user"),
            (CLAUDE_LOGIN, "github:e2e-user"),
            (CLAUDE_LOGIN, "openwebui:e2e-chat-user"),
        ]
    )


def test_a_record_moves_as_the_product_moves_it(store: CredentialStore, kd: KubeHandle) -> None:
    seeded = store.seed_claude("openwebui:e2e-chat-user", "setup-token")
    assert store.move(CLAUDE_SETUP_TOKEN, "openwebui:e2e-chat-user", "github:e2e-user") == "moved"
    assert store.read(CLAUDE_SETUP_TOKEN, "openwebui:e2e-chat-user") is None
    moved = store.read(CLAUDE_SETUP_TOKEN, "github:e2e-user")
    assert moved is not None
    assert moved.subject == "github:e2e-user"
    assert moved.fields == seeded.fields  # ciphertext copied as is: it is not bound to the subject
    assert moved.labels["controller-agent.io/subject"] == "github-e2e-user"
    assert store.move(CLAUDE_SETUP_TOKEN, "openwebui:e2e-chat-user", "github:e2e-user") == "not-found"
    store.seed_claude("openwebui:e2e-chat-user", "setup-token")
    assert store.move(CLAUDE_SETUP_TOKEN, "openwebui:e2e-chat-user", "github:e2e-user") == "occupied"
    assert store.move(CLAUDE_SETUP_TOKEN, "github:e2e-user", "github:e2e-user") == "occupied"


def test_reading_what_is_not_there(store: CredentialStore) -> None:
    assert store.read(GITHUB_LINK, "github:nobody") is None
    assert store.github_link_expiry("github:nobody") is None
    assert store.has_github_link("github:nobody") is False
    assert store.subjects(GITHUB_LINK) == []
    store.seed_github_link("github:e2e-user", "e2e-user", expired=True)
    assert store.has_github_link("github:e2e-user") is True
    expiry = store.github_link_expiry("github:e2e-user")
    assert expiry is not None
    assert timedelta(seconds=30) < datetime.now(UTC) - expiry < timedelta(seconds=120)


def test_deleting_by_label_keeps_what_it_should(store: CredentialStore, kd: KubeHandle) -> None:
    store.seed_github_link("github:e2e-user", "e2e-user")
    store.seed_claude("github:e2e-user", "login")
    product_written = secret_name(CLAUDE_SETUP_TOKEN, "github:someone")
    kd.store.create(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": product_written,
                "namespace": kd.namespace,
                "labels": {"controller-agent.io/credential": "claude-auth"},
            },
            "data": {"_recordKey": base64.b64encode(b"github:someone").decode()},
        },
    )
    assert store.delete_all("claude-auth", seeded_only=True) == [secret_name(CLAUDE_LOGIN, "github:e2e-user")]
    assert store.delete(GITHUB_LINK, "github:e2e-user") is True
    assert store.delete(GITHUB_LINK, "github:e2e-user") is False
    remaining = store.read(CLAUDE_SETUP_TOKEN, "github:someone")
    assert remaining is not None
    assert remaining.fields == {}  # a record without fields: the product reads it as absent
    assert store.delete_all() == [product_written]
    assert store.records() == []
