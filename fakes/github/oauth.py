"""GitHub's OAuth endpoints for a GitHub App's user access tokens.

Served on the fake's one host, as the upstream fake-github does (on GitHub they live on github.com, not the API host):

- ``POST /login/device/code``: a device code the fake's ``oauth_login`` user approves at once, so the first poll
  completes (no ``authorization_pending`` round).
- ``POST /login/oauth/access_token``: the device grant, the web-flow ``code`` exchange (codes from
  :meth:`FakeGitHub.add_oauth_code`) and ``grant_type=refresh_token``.

Wire behaviour, from GitHub's docs ("Authorizing OAuth apps", "Refreshing user access tokens", "Troubleshooting OAuth
app access token request errors"): parameters come as a query string, a form body or a JSON body; answers are
form-encoded unless ``Accept`` asks for JSON (XML is not served: 501); errors are HTTP **200** with ``error``,
``error_description`` and ``error_uri``. User tokens are ``ghu_`` (8 h, ``expires_in`` 28800), refresh tokens ``ghr_``
(``refresh_token_expires_in`` 15811200, "always", per the docs' response table; the upstream fake says 15897600), scope
``""``. Using a refresh token rotates it and revokes the old access token. ``client_secret`` is required to refresh a
token from the web flow, and not for one from the device flow (docs table; github/docs#32628): a missing one is answered
with ``invalid_client`` (the stack's gateway relies on that answer; GitHub's exact ``error_description`` there is
unverified).

Not modelled: client id/secret values (any non-empty ones are accepted), scopes, ``slow_down`` and
``authorization_pending`` (the device code completes at once), ``redirect_uri`` checks.
"""

from __future__ import annotations

import secrets
import string
from typing import Any
from urllib.parse import parse_qs, urlencode

from fakes.core import FakeResponse
from fakes.github import errors
from fakes.github.state import OAUTH_CODE_TTL, DeviceCode, RefreshGrant, Token, User
from fakes.github.store import GitHubStore
from fakes.github.wire import Call, RouteTable, json_body

table: RouteTable[GitHubStore] = RouteTable()

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
USER_TOKEN_TTL = 28800  # seconds, "always" (GitHub docs, user access token response)
REFRESH_TOKEN_TTL = 15811200  # seconds, "always" (same table)
DEVICE_CODE_TTL = 900  # seconds before a device code expires (docs default)
DEVICE_INTERVAL = 5  # seconds between polls (docs example)
CODE_TTL = OAUTH_CODE_TTL  # seconds a web-flow code lives (docs: "will expire after 10 minutes")

_TROUBLE = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/"
_DEVICE_DOC = "https://docs.github.com/developers/apps/authorizing-oauth-apps#error-codes-for-the-device-flow"
_DOC = "https://docs.github.com/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps"

# error code -> (description, error_uri); GitHub's wording where its docs or quoted answers give it.
_ERRORS = {
    "incorrect_client_credentials": (
        "The client_id and/or client_secret passed are incorrect.",
        _TROUBLE + "#incorrect-client-credentials",
    ),
    "invalid_client": (
        "The client_id and/or client_secret passed are incorrect.",
        _TROUBLE + "#incorrect-client-credentials",
    ),
    "bad_verification_code": ("The code passed is incorrect or expired.", _TROUBLE + "#bad-verification-code"),
    "bad_refresh_token": ("The refresh token passed is incorrect or expired.", _TROUBLE + "#bad-verification-code"),
    "incorrect_device_code": ("The device_code provided is not valid.", _DEVICE_DOC),
    "expired_token": ("The device_code has expired.", _DEVICE_DOC),
    "unsupported_grant_type": ("The grant type is not supported.", _DEVICE_DOC),
}


def _random(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def _params(call: Call) -> dict[str, str]:
    """Query string, then a JSON or form body (later wins): GitHub accepts all three. A JSON body that does not parse
    is GitHub's 400 ``Problems parsing JSON``."""
    request = call.request
    params = {k: v[-1] for k, v in request.query_params.items()}
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype.endswith("json"):
        body = json_body(request, _DOC)
        if isinstance(body, dict):
            params.update({k: str(v) for k, v in body.items() if isinstance(v, (str, int)) and not isinstance(v, bool)})
    elif request.body.strip():
        form = parse_qs(request.body.decode("utf-8", "replace"), keep_blank_values=True)
        params.update({k: v[-1] for k, v in form.items()})
    return params


def _answer(call: Call, fields: dict[str, Any]) -> FakeResponse:
    """HTTP 200 in the format ``Accept`` asks for: JSON, else form-encoded (GitHub's default); XML is unserved."""
    accept = call.request.headers.get("accept", "").lower()
    if "json" in accept:
        return FakeResponse.json(200, fields)
    if "xml" in accept:
        raise errors.not_served(call.request.method.upper(), f"{call.request.path} with Accept: application/xml")
    body = urlencode(sorted((k, str(v)) for k, v in fields.items())).encode()
    return FakeResponse(200, [("content-type", "application/x-www-form-urlencoded; charset=utf-8")], body)


def _error(call: Call, code: str) -> FakeResponse:
    description, uri = _ERRORS[code]
    return _answer(call, {"error": code, "error_description": description, "error_uri": uri})


@table.route("POST", "/login/device/code", auth="none")
def device_code(fake: GitHubStore, call: Call) -> FakeResponse:
    params = _params(call)
    client_id = params.get("client_id", "")
    if not client_id:
        return _error(call, "incorrect_client_credentials")  # GitHub's exact answer here is unverified
    letters = string.ascii_uppercase + string.digits
    code = DeviceCode(
        value=secrets.token_hex(20),
        user_code=f"{_random(letters, 4)}-{_random(letters, 4)}",
        client_id=client_id,
        login=fake.oauth_login,
        expires_at=fake.now() + DEVICE_CODE_TTL,
    )
    fake.oauth.device_codes[code.value] = code
    return _answer(
        call,
        {
            "device_code": code.value,
            "user_code": code.user_code,
            "verification_uri": f"{call.base}/login/device",
            "expires_in": DEVICE_CODE_TTL,
            "interval": DEVICE_INTERVAL,
        },
    )


@table.route("POST", "/login/oauth/access_token", auth="none")
def access_token(fake: GitHubStore, call: Call) -> FakeResponse:
    params = _params(call)
    if not params.get("client_id"):
        return _error(call, "incorrect_client_credentials")
    grant = params.get("grant_type") or "authorization_code"  # the web flow sends no grant_type
    if grant == DEVICE_GRANT:
        return _device_grant(fake, call, params)
    if grant == "authorization_code":
        return _code_grant(fake, call, params)
    if grant == "refresh_token":
        return _refresh_grant(fake, call, params)
    return _error(call, "unsupported_grant_type")


def _device_grant(fake: GitHubStore, call: Call, params: dict[str, str]) -> FakeResponse:
    code = fake.oauth.device_codes.get(params.get("device_code", ""))
    if code is None or code.client_id != params["client_id"]:
        return _error(call, "incorrect_device_code")
    del fake.oauth.device_codes[code.value]  # one token per approval
    if code.expires_at <= fake.now():
        return _error(call, "expired_token")
    return _issue(fake, call, code.login, code.client_id, from_device_flow=True)


def _code_grant(fake: GitHubStore, call: Call, params: dict[str, str]) -> FakeResponse:
    if not params.get("client_secret"):
        return _error(call, "incorrect_client_credentials")  # the web flow requires client_secret
    found = fake.oauth.codes.pop(params.get("code", ""), None)
    if found is None or found[1] <= fake.now():
        return _error(call, "bad_verification_code")
    return _issue(fake, call, found[0], params["client_id"], from_device_flow=False)


def _refresh_grant(fake: GitHubStore, call: Call, params: dict[str, str]) -> FakeResponse:
    grant = fake.oauth.refresh.get(params.get("refresh_token", ""))
    if grant is None or grant.expires_at <= fake.now() or grant.client_id not in ("", params["client_id"]):
        return _error(call, "bad_refresh_token")
    if not grant.from_device_flow and not params.get("client_secret"):
        return _error(call, "invalid_client")
    del fake.oauth.refresh[grant.value]  # rotation: the old refresh token and access token stop working
    fake.tokens.pop(grant.access_token, None)
    return _issue(fake, call, grant.login, grant.client_id, from_device_flow=grant.from_device_flow)


def _issue(fake: GitHubStore, call: Call, login: str, client_id: str, *, from_device_flow: bool) -> FakeResponse:
    user: User = fake.add_user(login)
    now = fake.now()
    access = Token(
        value="ghu_" + _random(string.ascii_letters + string.digits, 36),
        expires_at=now + USER_TOKEN_TTL,
        user=user,
        scopes=(),
        client_id=client_id,
    )
    fake.tokens[access.value] = access
    refresh = RefreshGrant(
        value="ghr_" + _random(string.ascii_letters + string.digits, 76),
        client_id=client_id,
        login=login,
        expires_at=now + REFRESH_TOKEN_TTL,
        access_token=access.value,
        from_device_flow=from_device_flow,
    )
    fake.oauth.refresh[refresh.value] = refresh
    return _answer(
        call,
        {
            "access_token": access.value,
            "expires_in": USER_TOKEN_TTL,
            "refresh_token": refresh.value,
            "refresh_token_expires_in": REFRESH_TOKEN_TTL,
            "scope": "",
            "token_type": "bearer",
        },
    )
