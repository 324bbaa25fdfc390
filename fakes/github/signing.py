"""Webhook signatures: HMAC over the exact body bytes (GitHub docs "Validating webhook deliveries").

``X-Hub-Signature-256: sha256=<hex>`` is HMAC-SHA256 keyed with the secret's UTF-8 bytes over the body exactly as sent;
the legacy ``X-Hub-Signature: sha1=<hex>`` is the same over SHA-1. Receivers should accept SHA-256 only:
:func:`verify_signature` does, and never raises for any header (a malformed header is a 401 for the receiver, not a
500). GitHub's test vector: secret ``It's a Secret to Everybody``, body ``Hello, World!``, signature
``sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17``.
"""

from __future__ import annotations

import hashlib
import hmac
import string

_HEX = frozenset(string.hexdigits.lower())


def _key(secret: str | bytes) -> bytes:
    return secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)


def sign_sha256(secret: str | bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value for ``body``: ``sha256=`` + 64 lower-case hex digits."""
    return "sha256=" + hmac.new(_key(secret), body, hashlib.sha256).hexdigest()


def sign_sha1(secret: str | bytes, body: bytes) -> str:
    """The legacy ``X-Hub-Signature`` value: ``sha1=`` + 40 hex digits (GitHub still sends it; never verify with it)."""
    return "sha1=" + hmac.new(_key(secret), body, hashlib.sha1).hexdigest()


def verify_signature(*, secret: str | bytes | None, body: bytes, header: str | bytes | None) -> bool:
    """True when ``header`` is a valid ``sha256=<hex>`` HMAC of ``body`` under ``secret``, compared in constant time.

    Keyword-only, so the three cannot be passed in the wrong order (all three may be bytes):
    ``verify_signature(secret=s, body=raw_body, header=request.headers.get("x-hub-signature-256"))``.

    ``header`` is what came off the wire: ``False``, never an exception, for a missing one, a non-ASCII or non-hex one,
    one without ``=``, the wrong length, or a ``sha1=`` signature (a downgrade githubkit's ``verify`` would accept).
    ``False`` also for a missing (``None``, e.g. an unset env var) or empty ``secret``: anyone can compute an HMAC under
    the empty key, so accepting it would let unsigned forgeries through. Raises ``TypeError`` for a caller's mistake:
    a ``secret`` that is not text, bytes or None, or a ``body`` that is not bytes (a decoded or re-serialised body
    cannot carry the signed bytes).
    """
    if secret is not None and not isinstance(secret, (str, bytes, bytearray)):
        raise TypeError(f"verify_signature: secret must be str, bytes or None, not {type(secret).__name__}")
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError(f"verify_signature: body must be the raw request bytes, not {type(body).__name__}")
    if not secret:
        return False
    if isinstance(header, bytes):
        try:
            header = header.decode("ascii")
        except UnicodeDecodeError:
            return False
    if not isinstance(header, str):
        return False
    prefix, sep, digest = header.strip().partition("=")
    if not sep or prefix.lower() != "sha256" or len(digest) != 64 or not set(digest.lower()) <= _HEX:
        return False
    expected = hmac.new(_key(secret), bytes(body), hashlib.sha256).hexdigest()
    # Both sides are ASCII bytes here, so compare_digest cannot raise TypeError (it does on non-ASCII str).
    return hmac.compare_digest(expected.encode("ascii"), digest.lower().encode("ascii"))
