"""The OAuth and user routes the stack under test calls:
device flow, web-flow code exchange and refresh at ``/login/...`` with GitHub's form/JSON answers and HTTP-200
errors, ``GET /user`` and collaborator permission, driven by githubkit and PyGithub where they have a call for it."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from github import Auth, Github
from githubkit import GitHub
from githubkit.exception import RequestFailed

from fakes.github import FakeGitHub, unserved
from fakes.server import FakeHandle
from specs.github.world import REPO, SCHEMAS, TOKEN, Schema, rest_api

JSON = {"accept": "application/json"}
CLIENT = {"client_id": "Iv23liFAKE"}


def _kit(handle: FakeHandle[FakeGitHub], token: str | None) -> GitHub[Any]:
    return GitHub(
        token, base_url=handle.url, transport=handle.transport(), auto_retry=False, http_cache=False, timeout=10.0
    )


def _device_token(http: httpx.Client, **extra: str) -> dict[str, Any]:
    code = http.post("/login/device/code", data={**CLIENT, "scope": ""}, headers=JSON).json()
    grant = {**CLIENT, "device_code": code["device_code"], "grant_type": "urn:ietf:params:oauth:grant-type:device_code"}
    token: dict[str, Any] = http.post("/login/oauth/access_token", data={**grant, **extra}, headers=JSON).json()
    return token


def test_device_flow_answers_form_encoded_by_default_and_json_on_request(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    with fake_inproc.client() as http:
        form = http.post("/login/device/code", data=CLIENT)
        as_json = http.post("/login/device/code", json=CLIENT, headers=JSON)  # a JSON body is accepted too
    assert form.status_code == 200
    assert form.headers["content-type"].startswith("application/x-www-form-urlencoded")
    fields = {k: v[0] for k, v in parse_qs(form.text).items()}
    assert sorted(fields) == ["device_code", "expires_in", "interval", "user_code", "verification_uri"]
    assert (fields["expires_in"], fields["interval"], len(fields["device_code"])) == ("900", "5", 40)
    assert len(fields["user_code"]) == 9
    assert fields["user_code"][4] == "-"
    assert fields["verification_uri"] == f"{fake_inproc.url}/login/device"
    body = as_json.json()
    assert (body["expires_in"], body["interval"]) == (900, 5)
    assert body["device_code"] != fields["device_code"]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_device_grant_completes_at_once_and_the_token_is_the_user(
    fake_inproc: FakeHandle[FakeGitHub], schema: Schema
) -> None:
    fake_inproc.app.oauth_login = "alice"
    with fake_inproc.client() as http:
        token = _device_token(http)
    assert token["access_token"].startswith("ghu_")
    assert token["refresh_token"].startswith("ghr_")
    assert (token["expires_in"], token["refresh_token_expires_in"], token["scope"], token["token_type"]) == (
        28800,
        15811200,
        "",
        "bearer",
    )
    kit = _kit(fake_inproc, token["access_token"])  # keep the client: its rest namespace holds a weak reference
    me = rest_api(kit, schema).users.get_authenticated().parsed_data
    assert (me.login, me.type) == ("alice", "User")
    assert me.url == f"{fake_inproc.url}/users/alice"
    fake_inproc.app.advance_clock(28800)  # the user access token lives 8 hours
    with pytest.raises(RequestFailed) as dead:
        rest_api(kit, schema).users.get_authenticated()
    assert dead.value.response.status_code == 401
    assert unserved(fake_inproc) == []


def test_refresh_without_client_secret_is_http_200_invalid_client_for_a_web_flow_token(
    fake_inproc: FakeHandle[FakeGitHub],
) -> None:
    code = fake_inproc.app.add_oauth_code("alice")
    with fake_inproc.client() as http:
        first = http.post(
            "/login/oauth/access_token", data={**CLIENT, "client_secret": "s", "code": code}, headers=JSON
        ).json()
        refresh = {**CLIENT, "grant_type": "refresh_token", "refresh_token": first["refresh_token"]}
        refused = http.post("/login/oauth/access_token", data=refresh, headers=JSON)
        assert refused.status_code == 200
        assert refused.json()["error"] == "invalid_client"
        fresh = http.post("/login/oauth/access_token", params={**refresh, "client_secret": "s"}, headers=JSON)
        again = http.post("/login/oauth/access_token", data={**refresh, "client_secret": "s"}, headers=JSON)
        old_user = http.get("/user", headers={"authorization": f"Bearer {first['access_token']}"})
        new_user = http.get("/user", headers={"authorization": f"Bearer {fresh.json()['access_token']}"})
    new = fresh.json()
    assert fresh.status_code == 200
    assert new["refresh_token"] != first["refresh_token"]
    assert (new["expires_in"], new["refresh_token_expires_in"]) == (28800, 15811200)
    assert again.status_code == 200
    assert again.json()["error"] == "bad_refresh_token"  # rotated: the old one is dead
    assert (old_user.status_code, new_user.status_code) == (401, 200)
    assert new_user.json()["login"] == "alice"


def test_device_flow_token_refreshes_without_client_secret(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    # GitHub docs, "Refreshing user access tokens": client_secret is required "unless the user access token was
    # generated using the device flow".
    with fake_inproc.client() as http:
        token = _device_token(http)
        fresh = http.post(
            "/login/oauth/access_token",
            headers=JSON,
            data={**CLIENT, "grant_type": "refresh_token", "refresh_token": token["refresh_token"]},
        ).json()
    assert fresh["access_token"].startswith("ghu_")
    assert "error" not in fresh


def test_oauth_errors_are_http_200_with_githubs_codes(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    grant = "urn:ietf:params:oauth:grant-type:device_code"
    with fake_inproc.client() as http:
        code = http.post("/login/device/code", data=CLIENT, headers=JSON).json()["device_code"]
        fake_inproc.app.advance_clock(901)
        answers = {
            "expired_token": http.post(
                "/login/oauth/access_token", headers=JSON, data={**CLIENT, "device_code": code, "grant_type": grant}
            ),
            "incorrect_device_code": http.post(
                "/login/oauth/access_token", headers=JSON, data={**CLIENT, "device_code": "nope", "grant_type": grant}
            ),
            "incorrect_client_credentials": http.post(
                "/login/oauth/access_token", headers=JSON, data={"device_code": code, "grant_type": grant}
            ),
            "unsupported_grant_type": http.post(
                "/login/oauth/access_token", headers=JSON, data={**CLIENT, "grant_type": "password"}
            ),
            "bad_verification_code": http.post(
                "/login/oauth/access_token", headers=JSON, data={**CLIENT, "client_secret": "s", "code": "made-up"}
            ),
        }
        form = http.post("/login/oauth/access_token", data={**CLIENT, "code": "made-up", "client_secret": "s"})
    for expected, answer in answers.items():
        assert answer.status_code == 200, (expected, answer.text)
        assert answer.json()["error"] == expected, (expected, answer.text)
        assert answer.json()["error_description"]
        assert answer.json()["error_uri"].startswith("https://docs.github.com/")
    assert parse_qs(form.text)["error"] == ["bad_verification_code"]  # form-encoded without Accept: JSON


def test_oauth_bad_json_is_400_and_xml_is_unserved(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    with fake_inproc.client() as http:
        bad = http.post(
            "/login/oauth/access_token", content=b'{"client_id": NaN}', headers={"content-type": "application/json"}
        )
        xml = http.post("/login/device/code", data=CLIENT, headers={"accept": "application/xml"})
    assert bad.status_code == 400
    assert bad.json()["message"] == "Problems parsing JSON"
    assert xml.status_code == 501
    assert [e.status for e in unserved(fake_inproc)] == [501]


def test_get_user_needs_a_user_token(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    app = fake_inproc.app.add_app("reply-bot")
    ghs = fake_inproc.app.issue_token(fake_inproc.app.add_installation(app.id, "octo")).value
    with fake_inproc.client() as http:
        anonymous = http.get("/user")
        installation = http.get("/user", headers={"authorization": f"token {ghs}"})
        bad = http.get("/user", headers={"authorization": "token nope"})
    assert (anonymous.status_code, anonymous.json()["message"]) == (401, "Requires authentication")
    assert (installation.status_code, installation.json()["message"]) == (403, "Resource not accessible by integration")
    assert (bad.status_code, bad.json()["message"]) == (401, "Bad credentials")


def test_pygithub_get_user(served: FakeHandle[FakeGitHub]) -> None:
    client = Github(
        base_url=served.url,
        auth=Auth.Token(TOKEN),
        retry=None,
        timeout=10,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
    try:
        me = client.get_user()
        assert (me.login, me.public_repos, me.total_private_repos) == ("alice", 0, 0)
    finally:
        client.close()
    assert unserved(served) == []


@pytest.mark.parametrize("schema", SCHEMAS)
def test_collaborator_permission_with_githubkit(fake_inproc: FakeHandle[FakeGitHub], schema: Schema) -> None:
    fake = fake_inproc.app
    fake.add_repo("alice/tools", collaborators=["bob"])
    fake.add_user("bob")
    fake.add_user("carol", token="ghp_carol")
    kits = {
        who: _kit(fake_inproc, token) for who, token in (("alice", TOKEN), ("carol", "ghp_carol"), ("anonymous", None))
    }
    rest = kits["alice"].rest(schema)
    levels = {
        who: rest.repos.get_collaborator_permission_level("alice", "tools", who).parsed_data
        for who in ("alice", "bob", "mallory")
    }
    assert {who: (p.permission, p.role_name) for who, p in levels.items()} == {
        "alice": ("admin", "admin"),
        "bob": ("write", "write"),
        "mallory": ("read", "read"),
    }
    bob = levels["bob"].user
    assert bob is not None
    assert bob.login == "bob"
    assert bob.permissions
    assert bob.permissions.push
    secret = rest.repos.get_collaborator_permission_level("octo", "secret", "mallory").parsed_data
    assert secret.permission == "none"
    failures = {}
    for label, client, owner, repo, who in [
        ("unknown user", rest, "alice", "tools", "nobody"),
        ("no push access", kits["carol"].rest(schema), "alice", "tools", "bob"),
        ("anonymous", kits["anonymous"].rest(schema), "alice", "tools", "bob"),
        ("private, not visible", kits["carol"].rest(schema), "octo", "secret", "alice"),
    ]:
        with pytest.raises(RequestFailed) as refused:
            client.repos.get_collaborator_permission_level(owner, repo, who)
        failures[label] = (refused.value.response.status_code, refused.value.response.json()["message"])
    assert failures == {
        "unknown user": (404, "Not Found"),
        "no push access": (403, "Must have push access to view collaborator permission."),
        "anonymous": (401, "Requires authentication"),
        "private, not visible": (404, "Not Found"),
    }
    assert unserved(fake_inproc) == []


def test_admin_oauth_sets_the_approving_user_and_hands_out_a_web_flow_code(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    with fake_inproc.client() as http:
        seeded = http.post("/_fake/github/oauth", json={"login": "e2e-user"})
        empty = http.post("/_fake/github/oauth", json={"login": " "})
        by_code = http.post(
            "/login/oauth/access_token",
            headers=JSON,
            data={**CLIENT, "client_secret": "s", "code": seeded.json()["code"]},
        ).json()
        by_device = _device_token(http)
        logins = [
            http.get("/user", headers={"authorization": f"Bearer {t['access_token']}"}).json()["login"]
            for t in (by_code, by_device)
        ]
    assert seeded.status_code == 200
    assert empty.status_code == 400
    assert "login" in empty.json()["message"]
    assert logins == ["e2e-user", "e2e-user"]


def test_oauth_calls_do_not_spend_the_rest_api_rate_limit(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    with fake_inproc.client() as http:
        for _ in range(61):  # one more than the anonymous hourly limit
            assert "x-ratelimit-used" not in http.post("/login/device/code", data=CLIENT).headers
        repo = http.get(f"/repos/{REPO}")
    assert repo.status_code == 200
    assert repo.headers["x-ratelimit-used"] == "1"


def test_a_seeded_refresh_token_refreshes_with_the_client_secret_only(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    """The admin route ``refresh_tokens`` stands for a link made earlier (the stack's gateway refreshes it): like
    any web-flow refresh token it needs ``client_secret``, answers with a rotated pair, and cannot be used twice."""
    with fake_inproc.client() as http:
        seeded = http.post("/_fake/github/refresh_tokens", json={"login": "e2e-user", "refresh_token": "ghr_seeded"})
        grant = {**CLIENT, "grant_type": "refresh_token", "refresh_token": "ghr_seeded"}
        refused = http.post("/login/oauth/access_token", data=grant, headers=JSON)
        refreshed = http.post("/login/oauth/access_token", data={**grant, "client_secret": "s"}, headers=JSON)
        again = http.post("/login/oauth/access_token", data={**grant, "client_secret": "s"}, headers=JSON)
        me = http.get("/user", headers={"authorization": f"Bearer {refreshed.json().get('access_token')}"})
    assert seeded.status_code == 201
    assert refused.status_code == 200
    assert refused.json()["error"] == "invalid_client"
    assert refreshed.json()["access_token"].startswith("ghu_")
    assert refreshed.json()["refresh_token"] != "ghr_seeded"
    assert again.json()["error"] == "bad_refresh_token"
    assert me.json()["login"] == "e2e-user"


def test_the_journal_tells_which_credential_a_call_used_without_holding_it(
    fake_inproc: FakeHandle[FakeGitHub],
) -> None:
    from specs.agent_controller.github_journal import credential_fingerprint

    with fake_inproc.client() as http:
        http.get(f"/repos/{REPO}", headers={"authorization": f"Bearer {TOKEN}"})
        http.get(f"/repos/{REPO}")
        journal = http.get("/_fake/requests", params={"path_prefix": f"/repos/{REPO}"}).json()["requests"]
    assert [entry["credential"] for entry in journal] == [credential_fingerprint(f"Bearer {TOKEN}"), None]
    assert TOKEN not in str(journal)
