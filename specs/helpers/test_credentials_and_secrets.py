"""The credentials the specs seed (``specs.agent_controller.credentials``) are the ones the twin's product reader
opens
(``fakes.stack.credentials``): both sides of the stored format agree. And secret values never print."""

from __future__ import annotations

import asyncio
import base64
import os

import pytest

from fakes.kube import KubeHandle
from fakes.kube.client import Api
from fakes.stack import credentials as twin_credentials
from fakes.stack.cluster_api import ClusterApi
from specs.agent_controller.cluster_secrets import SecretMissing, read_secret_value
from specs.agent_controller.credentials import (
    CLAUDE_SETUP_TOKEN,
    CredentialStore,
    decode_key,
    encrypt_field,
    secret_name,
)

KEY_TEXT = base64.b64encode(os.urandom(32)).decode()


def test_both_sides_name_a_record_alike() -> None:
    assert twin_credentials.secret_name("claude-auth-setup-token", "github:e2e-user") == secret_name(
        CLAUDE_SETUP_TOKEN, "github:e2e-user"
    )


def test_a_field_the_harness_encrypts_opens_in_the_twin_under_that_key_only() -> None:
    packed = encrypt_field(decode_key(KEY_TEXT), "sk-ant-oat01-e2e")
    assert twin_credentials.open_field(packed, decode_key(KEY_TEXT)) == "sk-ant-oat01-e2e"
    assert twin_credentials.open_field(packed, os.urandom(32)) is None
    assert twin_credentials.open_field("not:three-parts", decode_key(KEY_TEXT)) is None


def claude(handle: KubeHandle, subject: str, key_text: str) -> dict[str, str]:
    """What the twin's reader finds for ``subject``, read through the double's API."""

    async def read() -> dict[str, str]:
        api = Api(handle.url, token=handle.token)
        try:
            return await twin_credentials.claude(ClusterApi(api, "default"), subject, key_text)
        finally:
            await api.aclose()

    return asyncio.run(read())


def test_seeded_claude_credentials_are_found_for_their_subject_alone(fake_kube: KubeHandle) -> None:
    store = CredentialStore(fake_kube.kube(namespace="default"), decode_key(KEY_TEXT))
    store.seed_all_claude("github:e2e-user")
    store.seed_all_claude("github:e2e-user")  # applied: replaces, no conflict
    found = claude(fake_kube, "github:e2e-user", KEY_TEXT)
    assert sorted(found) == ["CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_LOGIN_CREDENTIALS_JSON"]
    assert claude(fake_kube, "client-integration-gateway", KEY_TEXT) == {}
    other_key = base64.b64encode(os.urandom(32)).decode()
    assert claude(fake_kube, "github:e2e-user", other_key) == {}
    store.delete_all()
    assert claude(fake_kube, "github:e2e-user", KEY_TEXT) == {}


def test_secret_values_are_read_and_never_printed(fake_kube: KubeHandle) -> None:
    fake_kube.store.create(
        "secrets",
        {"metadata": {"name": "gw", "namespace": "default"}, "data": {"TOKEN": base64.b64encode(b"hunter2").decode()}},
    )
    kube = fake_kube.kube(namespace="default")
    value = read_secret_value(kube, "gw", "TOKEN")
    assert value.reveal() == "hunter2"
    assert repr(value) == "<secret gw/TOKEN>"
    with pytest.raises(SecretMissing, match=r"Secret default/gw has no key 'OTHER' \(keys: TOKEN\)"):
        read_secret_value(kube, "gw", "OTHER")
