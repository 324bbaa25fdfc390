"""Open WebUI user JWTs: what ``mint_user_jwt`` signs, and ``resolve_user_jwt`` reading them as the orchestrator's
resolver does (jose's ``jwtVerify`` claim checks, not PyJWT's). Pure PyJWT round trips plus tokens built by hand."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest

from specs.agent_controller.openwebui_jwt import E2E_SECRET, OpenWebUIIdentity, mint_user_jwt, resolve_user_jwt

NOW = 1_750_000_000.0
OTHER_SECRET = "not-the-deployments-secret-at-all-32b"


def hand_signed(claims: dict[str, object], secret: str = E2E_SECRET, header: dict[str, str] | None = None) -> str:
    """A token signed without PyJWT (HMAC over base64url parts), as upstream's harness minted them."""

    def part(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).rstrip(b"=").decode()

    signing_input = f"{part(header or {'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}"
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def test_a_minted_token_resolves_to_the_chat_subject_with_the_configured_roles() -> None:
    identity = resolve_user_jwt(mint_user_jwt(E2E_SECRET, "e2e-chat-user"), E2E_SECRET)
    assert identity == OpenWebUIIdentity(subject="openwebui:e2e-chat-user", roles=("reader", "writer"), per_user=True)


def test_the_minted_token_is_hs256_with_exactly_id_role_and_exp() -> None:
    token = mint_user_jwt(E2E_SECRET, "u-1", expires_in=300, now=NOW)
    assert jwt.get_unverified_header(token) == {"alg": "HS256", "typ": "JWT"}
    assert jwt.decode(token, options={"verify_signature": False}) == {"id": "u-1", "role": "user", "exp": NOW + 300}
    assert jwt.decode(mint_user_jwt(E2E_SECRET, "u-1"), options={"verify_signature": False}) == {
        "id": "u-1",
        "role": "user",
    }


def test_a_token_signed_by_hand_resolves_too() -> None:
    assert resolve_user_jwt(hand_signed({"id": "e2e-chat-user", "role": "user"}), E2E_SECRET) is not None


def test_a_wrong_secret_gives_no_identity() -> None:
    assert resolve_user_jwt(mint_user_jwt(OTHER_SECRET, "e2e-chat-user"), E2E_SECRET) is None


@pytest.mark.parametrize(("expires_in", "resolves"), [(300, True), (1, True), (0, False), (-60, False)])
def test_expiry_is_honoured_in_whole_seconds(expires_in: int, resolves: bool) -> None:
    token = mint_user_jwt(E2E_SECRET, "u", expires_in=expires_in, now=NOW)
    assert (resolve_user_jwt(token, E2E_SECRET, now=NOW + 0.9) is not None) is resolves


def test_the_host_clock_is_the_default() -> None:
    assert resolve_user_jwt(mint_user_jwt(E2E_SECRET, "u", expires_in=300), E2E_SECRET) is not None
    assert resolve_user_jwt(mint_user_jwt(E2E_SECRET, "u", expires_in=-60), E2E_SECRET) is None
    assert resolve_user_jwt(mint_user_jwt(E2E_SECRET, "u", expires_in=-60, now=time.time() + 3600), E2E_SECRET)


def test_nbf_in_the_future_is_refused_but_a_future_iat_is_not() -> None:
    assert resolve_user_jwt(hand_signed({"id": "u", "nbf": NOW + 10}), E2E_SECRET, now=NOW) is None
    assert resolve_user_jwt(hand_signed({"id": "u", "iat": NOW + 10}), E2E_SECRET, now=NOW) is not None


@pytest.mark.parametrize("claim", ["exp", "nbf", "iat"])
def test_a_time_claim_that_is_not_a_number_is_refused(claim: str) -> None:
    assert resolve_user_jwt(hand_signed({"id": "u", claim: str(int(NOW + 100))}), E2E_SECRET, now=NOW) is None
    assert resolve_user_jwt(hand_signed({"id": "u", claim: True}), E2E_SECRET, now=NOW) is None


@pytest.mark.parametrize(
    ("claims", "subject"),
    [
        ({"id": "a", "sub": "b", "email": "c@x"}, "openwebui:a"),
        ({"sub": "b", "email": "c@x"}, "openwebui:b"),
        ({"email": "c@x"}, "openwebui:c@x"),
        ({"id": None, "sub": "b"}, "openwebui:b"),
        ({"id": 7, "sub": "b"}, None),
        ({"id": ""}, None),
        ({"role": "user"}, None),
    ],
)
def test_the_id_is_the_first_present_of_id_sub_email(claims: dict[str, object], subject: str | None) -> None:
    identity = resolve_user_jwt(hand_signed(claims), E2E_SECRET)
    assert (identity.subject if identity else None) == subject


def test_the_role_claim_never_becomes_a_role() -> None:
    identity = resolve_user_jwt(mint_user_jwt(E2E_SECRET, "u", role="admin"), E2E_SECRET, roles=("reader",))
    assert identity is not None
    assert identity.roles == ("reader",)


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")  # HS512 with the 32-byte secret
def test_other_algorithms_and_garbage_are_refused() -> None:
    assert resolve_user_jwt(jwt.encode({"id": "u"}, E2E_SECRET, algorithm="HS512"), E2E_SECRET) is None
    assert resolve_user_jwt(hand_signed({"id": "u"}, header={"alg": "none"}), E2E_SECRET) is None
    assert resolve_user_jwt("not.a.jwt", E2E_SECRET) is None
    assert resolve_user_jwt("", E2E_SECRET) is None
    assert resolve_user_jwt(None, E2E_SECRET) is None
    assert resolve_user_jwt(hand_signed({"id": "u"})[:-2], E2E_SECRET) is None


def test_bad_arguments_are_the_callers_error() -> None:
    with pytest.raises(ValueError, match="secret"):
        mint_user_jwt("", "u")
    with pytest.raises(ValueError, match="user_id"):
        mint_user_jwt(E2E_SECRET, "")
    with pytest.raises(TypeError, match="user_id"):
        mint_user_jwt(E2E_SECRET, 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expires_in"):
        mint_user_jwt(E2E_SECRET, "u", expires_in=float("nan"))
    with pytest.raises(ValueError, match="secret"):
        resolve_user_jwt("x.y.z", "")
