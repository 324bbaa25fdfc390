"""Specs of harness.credentials and harness.cluster_secrets: linked credentials sealed as the stack stores them
(the twin's reader opens them), seeded by apply (re-seeding replaces), and secret values that never print."""

from __future__ import annotations

import base64
import hashlib
import json
import os

import pytest

from fakes.stack import credentials as twin_credentials
from harness import credentials
from harness.cluster_secrets import SecretMissing, SecretValue, read_secret_value

KEY = SecretValue(base64.b64encode(os.urandom(32)).decode(), "gw/IDENTITY_LINK_ENCRYPTION_KEY")


def test_names_are_prefix_and_the_subjects_hash() -> None:
    digest = hashlib.sha256(b"github:e2e-user").hexdigest()[:16]
    assert credentials.secret_name("claude-auth-setup-token", "github:e2e-user") == f"claude-auth-setup-token-{digest}"


def test_a_sealed_payload_opens_with_the_key_only() -> None:
    sealed = credentials.seal({"subject": "s", "token": "t"}, KEY)
    assert twin_credentials.open_payload(sealed, KEY.reveal()) == {"subject": "s", "token": "t"}
    other = base64.b64encode(os.urandom(32)).decode()
    assert twin_credentials.open_payload(sealed, other) is None
    raw = base64.b64decode(sealed)
    assert len(raw) == 12 + len(json.dumps({"subject": "s", "token": "t"})) + 16  # IV, ciphertext, GCM tag


def test_a_key_of_the_wrong_size_is_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        credentials.seal({}, SecretValue(base64.b64encode(b"short").decode(), "k"))


def test_seeded_credentials_are_found_for_their_subject_alone(fake_kube) -> None:
    kube = fake_kube.kube(namespace="default")
    names = credentials.seed_claude(kube, "github:e2e-user", KEY)
    credentials.seed_claude(kube, "github:e2e-user", KEY)  # applied: replaces, no conflict
    store = fake_kube.store
    for name in names:
        labels = store.get("secrets", "default", name)["metadata"]["labels"]
        assert labels == {"controller-agent.io/credential": name.rsplit("-", 1)[0]}
    found = twin_credentials.claude(store, "default", "github:e2e-user", KEY.reveal())
    assert sorted(found) == ["CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_LOGIN_CREDENTIALS_JSON"]
    assert twin_credentials.claude(store, "default", "client-integration-gateway", KEY.reveal()) == {}
    credentials.unseed(kube, "github:e2e-user")
    assert twin_credentials.claude(store, "default", "github:e2e-user", KEY.reveal()) == {}


def test_secret_values_are_read_and_never_printed(fake_kube) -> None:
    fake_kube.store.create("secrets", {"metadata": {"name": "gw", "namespace": "default"},
                                       "data": {"TOKEN": base64.b64encode(b"hunter2").decode()}})
    kube = fake_kube.kube(namespace="default")
    value = read_secret_value(kube, "gw", "TOKEN")
    assert value.reveal() == "hunter2"
    assert repr(value) == "<secret gw/TOKEN>"
    with pytest.raises(SecretMissing, match=r"Secret default/gw has no key 'OTHER' \(keys: TOKEN\)"):
        read_secret_value(kube, "gw", "OTHER")
