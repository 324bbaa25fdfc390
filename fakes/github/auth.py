"""GitHub App JWTs, installation tokens and the ``Authorization`` header (GitHub docs: "Generating a JSON Web Token
(JWT) for a GitHub App").

A JWT is accepted when it is RS256, signed by the App's private key, names the App in ``iss`` (numeric id as int or
string, or the client ID), has ``iat`` no later than now + 60 s and ``exp`` in the future and at most 600 s after
``iat``. That last rule is the one GitHub applies: githubkit sends ``iat = now - 60, exp = iat + 600`` and must pass, so
checking ``exp <= now + 540`` would be wrong (it would refuse githubkit). Refusals carry GitHub's exact 401 messages.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TypeGuard

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fakes.github.state import App

# GitHub's 401 messages for App JWTs, verbatim.
TOO_FAR = "'Expiration time' claim ('exp') is too far in the future"
EXPIRED = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the "
    "assertion expires"
)
UNDECODABLE = "A JSON web token could not be decoded"
IAT_FUTURE = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"

MAX_JWT_LIFETIME = 600.0  # seconds between iat and exp, GitHub's limit
CLOCK_SKEW = 60.0  # seconds an iat may lie in the future (GitHub advises backdating iat by 60 s for drift)
INSTALLATION_TOKEN_TTL = 3600.0  # seconds; GitHub's installation tokens live one hour


def generate_key_pair() -> tuple[str, str]:
    """A fresh 2048-bit RSA key pair as ``(private_pem, public_pem)`` strings (PKCS#1 private key, like GitHub's)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def new_installation_token() -> str:
    """``ghs_`` plus 36 random characters, the shape of GitHub's installation tokens."""
    return "ghs_" + secrets.token_urlsafe(27)[:36]


@dataclass(frozen=True)
class JwtVerdict:
    app: App | None
    message: str | None  # GitHub's 401 message when refused


def verify_app_jwt(token: str, apps: list[App], now: float) -> JwtVerdict:
    """Check an App JWT as GitHub does; ``now`` is the fake's clock in epoch seconds."""
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return JwtVerdict(None, UNDECODABLE)
    if header.get("alg") != "RS256":
        return JwtVerdict(None, UNDECODABLE)
    app = _find_app(claims.get("iss"), apps)
    if app is None:
        return JwtVerdict(None, UNDECODABLE)
    try:
        # Signature only: GitHub's own time rules below replace PyJWT's (which would accept exp far in the future).
        jwt.decode(
            token,
            app.public_key_pem,
            algorithms=["RS256"],
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
        )
    except jwt.PyJWTError:
        return JwtVerdict(None, UNDECODABLE)
    exp, iat = claims.get("exp"), claims.get("iat")
    if not _numeric(exp) or exp <= now:
        return JwtVerdict(None, EXPIRED)
    if not _numeric(iat) or iat > now + CLOCK_SKEW:
        return JwtVerdict(None, IAT_FUTURE)
    if exp - iat > MAX_JWT_LIFETIME or exp > now + MAX_JWT_LIFETIME + CLOCK_SKEW:
        return JwtVerdict(None, TOO_FAR)
    return JwtVerdict(app, None)


def _numeric(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _find_app(iss: object, apps: list[App]) -> App | None:
    if isinstance(iss, bool) or iss is None:
        return None
    text = str(iss)
    for app in apps:
        if text == str(app.id) or text == app.client_id:
            return app
    return None


def split_authorization(header: str | None) -> str | None:
    """The credential of ``token X`` or ``Bearer X`` (GitHub accepts both for every token kind); None if absent."""
    if not header:
        return None
    scheme, _, credential = header.strip().partition(" ")
    if scheme.lower() in ("token", "bearer") and credential.strip():
        return credential.strip()
    return ""  # present but unusable: a 401 Bad credentials
