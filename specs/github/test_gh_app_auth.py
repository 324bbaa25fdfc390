"""GitHub App authentication against the fake: RS256 JWTs checked against the App's
public key with GitHub's exact 401 messages, installation tokens with ``expires_at`` accepted as ``token X`` and
``Bearer X`` until they expire, and both real clients fetching a new token once theirs has run out."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import jwt
import pytest
from github import Auth, Github, GithubIntegration
from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy

from fakes.github import FakeGitHub, in_process
from fakes.github.auth import generate_key_pair
from fakes.github.state import App, Installation
from fakes.server import FakeHandle
from specs.github.world import REPO, Schema, rest_api, seed

TOO_FAR = "'Expiration time' claim ('exp') is too far in the future"
EXPIRED = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the "
    "assertion expires"
)
UNDECODABLE = "A JSON web token could not be decoded"


#: The seeded fake, its GitHub App and the App's installation on ``octo``.
World = tuple[FakeHandle[FakeGitHub], App, Installation]


@pytest.fixture
def world() -> Iterator[World]:
    with in_process(token_ttl=30.0) as handle:
        seed(handle.app)
        app = handle.app.add_app("reply-bot")
        inst = handle.app.add_installation(app.id, "octo")
        yield handle, app, inst


def _jwt(key: str, iss: int | str, iat: float, exp: float, alg: str = "RS256") -> str:
    # Signed over raw claims: PyJWT's jwt.encode refuses an integer iss, which GitHub accepts.
    claims = json.dumps({"iss": iss, "iat": int(iat), "exp": int(exp)}).encode()
    return jwt.PyJWS().encode(claims, key, algorithm=alg)


def _token_request(handle: FakeHandle[FakeGitHub], inst_id: int, token: str) -> httpx.Response:
    with handle.client() as http:
        return http.post(
            f"/app/installations/{inst_id}/access_tokens", json={}, headers={"authorization": f"Bearer {token}"}
        )


@pytest.mark.parametrize("case", ["githubkit", "pygithub", "client_id", "int_iss"])
def test_jwt_within_github_rules_gets_a_token(world: World, case: str) -> None:
    handle, app, inst = world
    now = time.time()
    iat, exp = now - 60, {"githubkit": now + 540, "pygithub": now + 300}.get(case, now + 500)
    issuers: dict[str, int | str] = {"client_id": app.client_id, "int_iss": app.id}
    iss = issuers.get(case, str(app.id))
    answer = _token_request(handle, inst.id, _jwt(app.private_key_pem, iss, iat, exp))
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["token"].startswith("ghs_")
    assert body["repository_selection"] == "all"
    assert time.strptime(body["expires_at"], "%Y-%m-%dT%H:%M:%SZ")


def test_jwt_refusals_carry_githubs_messages(world: World) -> None:
    handle, app, inst = world
    now = time.time()
    wrong_key, _ = generate_key_pair()
    cases = {
        "far future": (_jwt(app.private_key_pem, app.id, now, now + 601), TOO_FAR),
        "expired": (_jwt(app.private_key_pem, app.id, now - 700, now - 100), EXPIRED),
        "wrong key": (_jwt(wrong_key, app.id, now - 60, now + 300), UNDECODABLE),
        "HS256": (_jwt("shared-secret-of-32-bytes-or-more!!", app.id, now - 60, now + 300, "HS256"), UNDECODABLE),
        "garbage": ("not-a-jwt", UNDECODABLE),
    }
    for name, (token, message) in cases.items():
        answer = _token_request(handle, inst.id, token)
        assert answer.status_code == 401, name
        assert answer.json() == {
            "message": message,
            "documentation_url": "https://docs.github.com/rest",
            "status": "401",
        }, name
    good = _jwt(app.private_key_pem, app.id, now - 60, now + 300)
    assert _token_request(handle, 999_999, good).status_code == 404
    with handle.client() as http:
        as_app = {"authorization": f"Bearer {good}"}
        assert http.get(f"/repos/{REPO}/installation", headers=as_app).json()["id"] == inst.id
        assert http.get("/repos/nobody/else/installation", headers=as_app).status_code == 404


def test_installation_token_schemes_and_expiry(world: World) -> None:
    handle, app, inst = world
    now = time.time()
    token = _token_request(handle, inst.id, _jwt(app.private_key_pem, app.id, now - 60, now + 300)).json()["token"]
    with handle.client() as http:
        for scheme in ("token", "Bearer"):
            answer = http.post(
                f"/repos/{REPO}/issues/1/comments",
                json={"body": scheme},
                headers={"authorization": f"{scheme} {token}"},
            )
            assert answer.status_code == 201
            assert answer.json()["user"]["login"] == "reply-bot[bot]"
            assert answer.json()["user"]["type"] == "Bot"
            assert answer.json()["performed_via_github_app"]["slug"] == "reply-bot"
        handle.app.advance_clock(31)  # past the 30 s TTL this fake was built with
        expired = http.get(f"/repos/{REPO}", headers={"authorization": f"token {token}"})
    assert expired.status_code == 401
    assert expired.json()["message"] == "Bad credentials"


def test_githubkit_app_auth_caches_then_refreshes_after_expiry(world: World) -> None:
    handle, app, inst = world
    kit = GitHub(
        AppAuthStrategy(app.id, app.private_key_pem),
        base_url=handle.url,
        transport=handle.transport(),
        auto_retry=False,
        http_cache=False,
        cache_strategy=MemCacheStrategy(),
    )  # no process-wide token cache
    bot = kit.with_auth(kit.auth.as_installation(inst.id))
    author = bot.rest.issues.create_comment("octo", "hello", 1, body="one").parsed_data.user
    assert author is not None
    assert author.login == "reply-bot[bot]"
    handle.app.advance_clock(31)
    assert bot.rest.issues.create_comment("octo", "hello", 1, body="two").status_code == 201
    posts = handle.requests(path_prefix="/app/installations/")
    assert [e.status for e in posts] == [201, 201]  # a fresh token once the first ran out
    comments = [e for e in handle.requests(method="POST") if e.path.endswith("/comments")]
    assert comments[0].status == comments[1].status == 201


def test_githubkit_reuses_a_token_that_is_still_valid(world: World) -> None:
    handle, app, inst = world
    handle.app.token_ttl = 3600.0
    kit = GitHub(
        AppAuthStrategy(app.id, app.private_key_pem),
        base_url=handle.url,
        transport=handle.transport(),
        auto_retry=False,
        http_cache=False,
        cache_strategy=MemCacheStrategy(),
    )  # no process-wide token cache
    bot = kit.with_auth(kit.auth.as_installation(inst.id))
    for body in ("one", "two"):
        bot.rest.issues.create_comment("octo", "hello", 1, body=body)
    assert len(handle.requests(path_prefix="/app/installations/")) == 1


def test_pygithub_integration_and_installation_auth_refresh(no_leaks: None) -> None:
    from fakes.github import serve

    # PyGithub refreshes a token 20 s before its expires_at; a 15 s TTL is inside that window from the start.
    with serve(token_ttl=15.0) as handle:
        seed(handle.app)
        app = handle.app.add_app("reply-bot")
        inst = handle.app.add_installation(app.id, "octo")
        integration = GithubIntegration(auth=Auth.AppAuth(app.id, app.private_key_pem), base_url=handle.url)
        try:
            assert integration.get_access_token(inst.id).token.startswith("ghs_")
            assert integration.get_repo_installation("octo", "hello").id == inst.id
        finally:
            integration.close()
        auth = Auth.AppAuth(app.id, app.private_key_pem).get_installation_auth(inst.id)
        client = Github(
            base_url=handle.url,
            auth=auth,
            retry=None,
            timeout=10,
            seconds_between_requests=None,
            seconds_between_writes=None,
        )
        try:
            issue = client.get_repo(REPO).get_issue(1)
            handle.app.advance_clock(16)  # the first installation token is now dead on the fake
            assert issue.create_comment("after expiry").user.login == "reply-bot[bot]"
        finally:
            client.close()
        token_posts = handle.requests(path_prefix="/app/installations/")
        assert len(token_posts) >= 3
        assert all(e.status == 201 for e in token_posts)
        assert all(e.status != 401 for e in handle.requests())


def test_installation_token_writes_only_where_installed(world: World) -> None:
    handle, app, _ = world
    selected = handle.app.add_installation(app.id, "octo", repositories=["octo/secret"])
    now = time.time()
    answer = _token_request(handle, selected.id, _jwt(app.private_key_pem, app.id, now - 60, now + 300))
    assert answer.json()["repository_selection"] == "selected"
    token = answer.json()["token"]
    with handle.client(headers={"authorization": f"token {token}"}) as http:
        refused = http.post(f"/repos/{REPO}/issues/1/comments", json={"body": "x"})
        allowed = http.post("/repos/octo/secret/issues/1/comments", json={"body": "x"})
    assert refused.status_code == 403
    assert refused.json()["message"] == "Resource not accessible by integration"
    assert allowed.status_code == 201


def test_githubkit_app_endpoints_parse_in_both_schemas(world: World, schema: Schema) -> None:
    handle, app, inst = world
    kit = GitHub(
        AppAuthStrategy(str(app.id), app.private_key_pem),
        base_url=handle.url,
        transport=handle.transport(),
        auto_retry=False,
        http_cache=False,
        cache_strategy=MemCacheStrategy(),
    )
    found = rest_api(kit, schema).apps.get_repo_installation("octo", "hello").parsed_data
    assert (found.id, found.app_id, found.app_slug, found.account.login) == (inst.id, app.id, "reply-bot", "octo")
    assert found.access_tokens_url == f"{handle.url}/app/installations/{inst.id}/access_tokens"
    token = rest_api(kit, schema).apps.create_installation_access_token(inst.id).parsed_data
    assert token.token.startswith("ghs_")
    assert str(token.expires_at).endswith("Z")
