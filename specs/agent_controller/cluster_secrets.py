"""Values the specs read from the cluster's Secrets (the webhook secret, the gateway's GitHub token, the
credential key), wrapped so they never show up in a log, a repr or an assertion message.

Upstream read the webhook secret from the cluster and never logged it; here that is a type:
:class:`SecretValue` reveals its text only through :meth:`SecretValue.reveal`.
"""

from __future__ import annotations

import base64
import binascii

from harness.kube import Kube
from specs.agent_controller.errors import SecretMissing as SecretMissing


class SecretValue:
    """A secret's text; ``repr``/``str`` print ``<secret NAME/KEY>``, never the value."""

    __slots__ = ("_value", "where")

    def __init__(self, value: str, where: str) -> None:
        self._value = value
        self.where = where

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"<secret {self.where}>"

    __str__ = __repr__


def read_secret_value(kube: Kube, name: str, key: str, *, timeout: float = 30.0) -> SecretValue:
    """``data[key]`` of Secret ``name`` in ``kube``'s namespace, decoded. One bounded ``kubectl get``.

    Raises :class:`SecretMissing` when the Secret has no such key (or is not valid base64),
    ``KubectlError`` / ``KubectlTimeout`` when kubectl fails (e.g. the Secret does not exist).
    """
    data = kube.kubectl_json("get", "secret", name, timeout=timeout).get("data") or {}
    if key not in data:
        keys = ", ".join(sorted(data)) or "none"
        raise SecretMissing(f"Secret {kube.namespace}/{name} has no key {key!r} (keys: {keys})")
    try:
        value = base64.b64decode(data[key], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise SecretMissing(f"Secret {kube.namespace}/{name} key {key!r} is not base64-encoded UTF-8 text") from None
    return SecretValue(value, f"{name}/{key}")
