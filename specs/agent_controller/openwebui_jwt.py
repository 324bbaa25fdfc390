"""Open WebUI's forwarded-user JWT: mint one as Open WebUI does, and read it back as the orchestrator does.

With ``ENABLE_FORWARD_USER_INFO_HEADERS=true`` Open WebUI signs a fresh HS256 JWT for every request and sends it in
the ``X-OpenWebUI-User-Jwt`` header, signed with ``FORWARD_USER_INFO_HEADER_JWT_SECRET`` (in e2e the orchestrator's
``AGENT_OPENWEBUI_USER_JWT_SECRET`` is the fixed ``e2e-openwebui-forward-jwt-secret``). The orchestrator turns a
valid token into the chat subject ``openwebui:<id>``; a bad signature, an expired token or no usable id claim gives no
identity at all (it fails closed, never falling back to the shared subject). ``specs/cluster/README.md`` §5 lists
the subjects.

:func:`mint_user_jwt` signs ``{"id": ..., "role": ...[, "exp": ...]}`` with PyJWT (header ``{"alg": "HS256",
"typ": "JWT"}``). :func:`resolve_user_jwt` mirrors the orchestrator's resolver, which verifies with the JavaScript
``jose`` library: HS256 only; the claim checks are jose's ``jwtVerify`` defaults, reproduced here rather than
PyJWT's (which differ):

- ``now`` is whole seconds (``floor(time)``); ``exp``, when present, must be a number and ``exp <= now`` is expired;
  ``nbf``, when present, must be a number and ``nbf > now`` is not yet valid; ``iat``, when present, must be a
  number but may lie in the future (PyJWT would refuse that); ``aud``, ``iss`` and ``sub`` types are not checked;
- the id is the first of ``id``, ``sub``, ``email`` that is present (``??`` semantics: a present non-string ends
  the search and fails); it must be a non-empty string;
- the roles are the deployment's configured ones (e2e: ``reader``, ``writer``), never Open WebUI's ``role`` claim
  (that is Open WebUI's own vocabulary; using it made every catalog lookup come back empty), and ``per_user`` is
  true: without it the pre-flight will not establish or adopt a per-user identity.

PyJWT warns (``InsecureKeyLengthWarning``) about HMAC secrets shorter than 32 bytes; the e2e secret is exactly 32.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jwt

if TYPE_CHECKING:
    from jwt.types import Options

ALGORITHM = "HS256"
E2E_SECRET = "e2e-openwebui-forward-jwt-secret"
"""The e2e deployment's forwarded-user JWT secret (both ends must agree, so it is a fixed string)."""
E2E_ROLES: tuple[str, ...] = ("reader", "writer")
"""The roles the e2e orchestrator grants every verified Open WebUI user."""
SUBJECT_PREFIX = "openwebui:"
HEADER = "x-openwebui-user-jwt"
"""The request header carrying the token (HTTP header names are case-insensitive)."""

_ID_CLAIMS = ("id", "sub", "email")
_SKIP_CLAIM_CHECKS: Options = {  # the claim checks are jose's, done by _claims_valid; PyJWT checks the signature
    "verify_exp": False,
    "verify_nbf": False,
    "verify_iat": False,
    "verify_aud": False,
    "verify_iss": False,
    "verify_sub": False,
    "verify_jti": False,
}


@dataclass(frozen=True)
class OpenWebUIIdentity:
    """What the orchestrator resolves from a valid token: ``subject`` (``openwebui:<id>``), ``roles``, ``per_user``."""

    subject: str
    roles: tuple[str, ...]
    per_user: bool = True


def mint_user_jwt(
    secret: str, user_id: str, *, role: str = "user", expires_in: float | None = None, now: float | None = None
) -> str:
    """An HS256 JWT as Open WebUI forwards it: payload ``{"id": user_id, "role": role}``, plus
    ``exp = floor(now + expires_in)`` when ``expires_in`` (seconds, may be negative for an already expired token)
    is given. ``now`` is epoch seconds (default: the host clock).

    Raises ``ValueError`` for an empty ``secret`` or ``user_id`` or a non-finite ``expires_in``; ``TypeError`` for
    a non-string ``secret`` or ``user_id``.
    """
    _require_text("secret", secret)
    _require_text("user_id", user_id)
    payload: dict[str, Any] = {"id": user_id, "role": role}
    if expires_in is not None:
        if isinstance(expires_in, bool) or not isinstance(expires_in, (int, float)) or not math.isfinite(expires_in):
            raise ValueError(f"expires_in must be a finite number of seconds, got {expires_in!r}")
        payload["exp"] = math.floor((time.time() if now is None else now) + expires_in)
    return jwt.encode(payload, secret, algorithm=ALGORITHM)


def resolve_user_jwt(
    token: str | None, secret: str, *, roles: tuple[str, ...] = E2E_ROLES, now: float | None = None
) -> OpenWebUIIdentity | None:
    """The identity the orchestrator resolves from ``token`` verified with ``secret``, or ``None`` when it would
    resolve none (empty or malformed token, another algorithm, a wrong signature, an expired or not-yet-valid
    token, a claim of the wrong type, no usable id). ``now`` is epoch seconds (default: the host clock).

    Never raises for a bad token; raises ``ValueError`` / ``TypeError`` for an empty or non-string ``secret``.
    """
    _require_text("secret", secret)
    if not token:
        return None
    try:
        claims = jwt.decode(token, secret, algorithms=[ALGORITHM], options=_SKIP_CLAIM_CHECKS)
    except jwt.InvalidTokenError:
        return None
    if not _claims_valid(claims, math.floor(time.time() if now is None else now)):
        return None
    user_id = next((claims[name] for name in _ID_CLAIMS if claims.get(name) is not None), None)
    if not isinstance(user_id, str) or not user_id:
        return None
    return OpenWebUIIdentity(subject=f"{SUBJECT_PREFIX}{user_id}", roles=tuple(roles))


def _claims_valid(claims: dict[str, Any], now: int) -> bool:
    """jose's ``jwtVerify`` time checks with no clock tolerance (``now`` in whole seconds)."""
    for name in ("iat", "nbf", "exp"):
        if name in claims and not _is_number(claims[name]):
            return False
    if "nbf" in claims and claims["nbf"] > now:
        return False
    return not ("exp" in claims and claims["exp"] <= now)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _require_text(name: str, value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")
