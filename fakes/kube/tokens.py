"""Who a request is: the double's admin, or a ServiceAccount holding a token the double issued (TokenRequest).

Tokens are JWTs with the claims a real kube-apiserver puts in a bound ServiceAccount token (kubernetes
``pkg/serviceaccount/claims.go`` ``Claims``: ``iss``, ``sub`` ``system:serviceaccount:<ns>:<name>``, ``aud``, ``iat``,
``nbf``, ``exp``, ``jti`` and ``kubernetes.io: {namespace, serviceaccount: {name, uid}}``), signed HS256 with a
secret of the double's own (a real server signs RS256 with its service-account key; nobody but the issuer checks the
signature). Nothing is kept per token: a token carries what validating it needs, so memory stays bounded however
many are issued.

A token is accepted (:meth:`TokenIssuer.authenticate`) as ``claims.go`` ``validator.Validate`` and go-jose's
``Claims.Validate`` accept one: the signature and issuer are the double's, one audience is the double's
(:data:`AUDIENCE`, what a TokenRequest without ``audiences`` gets), ``exp``/``nbf``/``iat`` hold on the double's clock
within go-jose's ``DefaultLeeway`` (60 s: a token is still accepted up to a minute after its
``expirationTimestamp``), and the ServiceAccount it names still exists with the uid in the token and is not being
deleted. Anything else is ``None``, which the server answers with its 401 ``Unauthorized``.

Not modelled: tokens bound to a Pod, Secret or Node (``boundObjectRef`` is answered ``null`` and never checked), the
legacy Secret-based tokens (``kubernetes.io/service-account-token`` Secrets get no ``data.token``), the apiserver's
10 s cache of successful token authentications (the double refuses a deleted ServiceAccount's token at once; a
real server may accept it for up to 10 s more), and tokens in the WebSocket ``Sec-WebSocket-Protocol`` header.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

from fakes.kube.clock import parse_rfc3339

ISSUER = "https://kubernetes.default.svc"
"""The double's ``iss`` (a real server's ``--service-account-issuer``)."""
AUDIENCE = "https://kubernetes.default.svc"
"""The one audience the double accepts, and the default of a TokenRequest (a real server's ``--api-audiences``,
which defaults to its issuer)."""
LEEWAY = 60.0
"""Seconds of clock leeway on ``exp``, ``nbf`` and ``iat`` (go-jose ``jwt.DefaultLeeway``)."""
SA_PREFIX = "system:serviceaccount:"
MAX_TOKEN_BYTES = 16 * 1024
"""A longer bearer token is never one of the double's (and is not decoded)."""


@dataclass(frozen=True)
class User:
    """An authenticated user (``user.Info``): ``name``, ``groups``; ``privileged`` skips authorization (the double's
    admin token and the tokenless plain-http requests, the kubeconfig's user, as ``system:masters``)."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    privileged: bool = False


ADMIN = User("fake-kube-admin", ("system:masters", "system:authenticated"), privileged=True)
"""The double's own user: every request with ``double.token`` or, over plain http, without credentials."""


def service_account_user(namespace: str, name: str, uid: str) -> User:
    """The user a ServiceAccount token authenticates as (apiserver ``pkg/authentication/serviceaccount/util.go``
    ``UserInfo``): ``system:serviceaccount:<ns>:<name>`` in ``system:serviceaccounts``,
    ``system:serviceaccounts:<ns>`` and ``system:authenticated``."""
    return User(
        f"{SA_PREFIX}{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
        uid,
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenIssuer:
    """Issues and validates one double's ServiceAccount tokens (see the module docstring). Thread-safe (no state but
    the signing secret)."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)
        self._kid = _b64(hashlib.sha256(self._secret).digest()[:12])

    def issue(self, service_account: dict[str, Any], audiences: list[str], seconds: int, now: float) -> str:
        """A token for the stored ``service_account`` (its namespace, name and uid), valid ``seconds`` from ``now``
        (epoch seconds on the double's clock) for ``audiences``."""
        meta = service_account["metadata"]
        issued = int(now)
        claims = {
            "aud": list(audiences),
            "exp": issued + int(seconds),
            "iat": issued,
            "iss": ISSUER,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": {
                "namespace": meta["namespace"],
                "serviceaccount": {"name": meta["name"], "uid": meta.get("uid", "")},
            },
            "nbf": issued,
            "sub": f"{SA_PREFIX}{meta['namespace']}:{meta['name']}",
        }
        header = _b64(json.dumps({"alg": "HS256", "kid": self._kid, "typ": "JWT"}, separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        return f"{header}.{payload}.{self._sign(f'{header}.{payload}')}"

    def _sign(self, signing_input: str) -> str:
        return _b64(hmac.new(self._secret, signing_input.encode("ascii"), hashlib.sha256).digest())

    def claims(self, token: str) -> dict[str, Any] | None:
        """The claims of a token this issuer signed, or ``None`` (not a JWT, another signer, unreadable)."""
        if len(token) > MAX_TOKEN_BYTES or token.count(".") != 2:
            return None
        header, payload, signature = token.split(".")
        try:
            if not hmac.compare_digest(self._sign(f"{header}.{payload}"), signature):
                return None
            claims = json.loads(_unb64(payload))
        except (UnicodeError, ValueError, binascii.Error):
            return None
        return claims if isinstance(claims, dict) else None

    def authenticate(self, token: str, store: Any, now: float) -> User | None:
        """The ServiceAccount user ``token`` stands for at ``now`` (the double's clock), or ``None`` when it is not
        accepted (``claims.go`` ``validator.Validate``): not this issuer's, outside its validity (with
        :data:`LEEWAY`), for another audience, or its ServiceAccount gone, recreated (another uid) or deleted."""
        claims = self.claims(token)
        if claims is None or claims.get("iss") != ISSUER:
            return None
        exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
        if not (isinstance(exp, int) and isinstance(nbf, int) and isinstance(iat, int)):
            return None
        if now - LEEWAY > exp or now + LEEWAY < nbf or now + LEEWAY < iat:
            return None
        audiences = claims.get("aud")
        if not isinstance(audiences, list) or AUDIENCE not in audiences:
            return None
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict) or not isinstance(private.get("serviceaccount"), dict):
            return None
        namespace, ref = private.get("namespace"), private["serviceaccount"]
        name, uid = ref.get("name"), ref.get("uid")
        if not (isinstance(namespace, str) and isinstance(name, str) and isinstance(uid, str) and namespace and name):
            return None
        stored = store.get("serviceaccounts", namespace, name)
        if stored is None or stored["metadata"].get("uid") != uid:
            return None
        deleted = stored["metadata"].get("deletionTimestamp")
        if deleted and parse_rfc3339(deleted) < now - LEEWAY:
            return None
        return service_account_user(namespace, name, uid)


def authenticate(double: Any, header: str | None, *, public: bool) -> User | None:
    """Who sent a request with ``Authorization`` ``header`` (``None``: none sent), or ``None`` for a 401.

    Without credentials: :data:`ADMIN` on a ``public`` path (``/version``, health) or over plain http (where
    client-go never sends the kubeconfig's token, see ``fakes.kube.tls``), else ``None``. A bearer token: the
    double's own (``double.token``) is :data:`ADMIN`, one of its TokenRequest tokens its ServiceAccount's user,
    anything else ``None``."""
    if header is None:
        return ADMIN if public or not double.require_token else None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    if double.token and hmac.compare_digest(token.encode(), double.token.encode()):
        return ADMIN
    issuer: TokenIssuer = double.tokens
    return issuer.authenticate(token, double.store, double.clock.time())


__all__ = ["User", "ADMIN", "TokenIssuer", "authenticate", "service_account_user", "ISSUER", "AUDIENCE", "LEEWAY"]
