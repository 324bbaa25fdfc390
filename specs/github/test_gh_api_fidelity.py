"""The fake GitHub answers as api.github.com does today, one case per spec with the value GitHub gives: path
normalisation, caching headers and conditional requests (a 304 costs no rate limit), the headers GitHub always sends,
and the issue, pull request, user and repository shapes (keys only where GitHub sends them)."""

from __future__ import annotations

import re
import time
from email.utils import formatdate
from typing import Any

import httpx
import jwt
import pytest
from githubkit import GitHub

from fakes.github import FakeGitHub, unserved
from fakes.server import FakeHandle
from specs.github.world import REPO, SCHEMAS, TOKEN, Schema, rest_api

AUTH = {"authorization": f"token {TOKEN}"}
WEAK_ETAG = re.compile(r'W/"[0-9a-f]{64}"')


def _get(handle: FakeHandle[FakeGitHub], path: str, **headers: str) -> httpx.Response:
    with handle.client() as http:
        return http.get(path, headers=headers)


# -- paths ------------------------------------------------------------------------------------------------------


def test_contents_with_a_trailing_slash_is_the_root_listing(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    root = _get(fake_inproc, f"/repos/{REPO}/contents/", **AUTH)
    assert root.status_code == 200
    assert sorted((e["name"], e["type"]) for e in root.json()) == [("README.md", "file"), ("docs", "dir")]
    docs = _get(fake_inproc, f"/repos/{REPO}/contents/docs/", **AUTH)
    assert sorted(e["path"] for e in docs.json()) == ["docs/guide.md", "docs/img"]


@pytest.mark.parametrize(
    "path", [f"/repos/{REPO}/", f"/repos/{REPO}/issues/1/", f"/repos//{REPO}", f"/repos/{REPO}//issues", "/user/"]
)
def test_a_trailing_slash_or_empty_segment_is_githubs_404_not_a_501(
    fake_inproc: FakeHandle[FakeGitHub], path: str
) -> None:
    answer = _get(fake_inproc, path, **AUTH)
    assert answer.status_code == 404
    assert answer.json() == {
        "message": "Not Found",
        "documentation_url": "https://docs.github.com/rest",
        "status": "404",
    }


def test_percent_encoded_names_are_the_same_route(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    encoded = _get(fake_inproc, "/repos/oct%6F/h%65llo/issues/%31", **AUTH)
    assert encoded.status_code == 200
    assert encoded.json()["number"] == 1
    fake_inproc.app.add_issue(REPO, "slashed", labels=["area/ci"])
    with fake_inproc.client(headers=AUTH) as http:
        removed = http.delete(f"/repos/{REPO}/issues/2/labels/area%2Fci")  # %2F stays inside the name
    assert removed.status_code == 200
    assert removed.json() == []


# -- caching headers and conditional requests -------------------------------------------------------------------


def test_successful_gets_carry_etag_cache_control_and_vary(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    mine = _get(fake_inproc, f"/repos/{REPO}", **AUTH)
    anonymous = _get(fake_inproc, f"/repos/{REPO}")
    assert WEAK_ETAG.fullmatch(mine.headers["etag"])
    assert mine.headers["cache-control"] == "private, max-age=60, s-maxage=60"
    assert mine.headers.get_list("vary") == [
        "Accept, Authorization, Cookie, X-GitHub-OTP",
        "Accept-Encoding, Accept, X-Requested-With",
    ]
    assert anonymous.headers["cache-control"] == "public, max-age=60, s-maxage=60"
    assert anonymous.headers.get_list("vary") == ["Accept", "Accept-Encoding, Accept, X-Requested-With"]
    missing = _get(fake_inproc, "/repos/octo/nope", **AUTH)
    assert "etag" not in missing.headers  # errors carry no validators


def test_last_modified_on_single_objects_not_on_lists(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    issue = fake_inproc.app.repo(REPO).issues[1]
    single = _get(fake_inproc, f"/repos/{REPO}/issues/1", **AUTH)
    listed = _get(fake_inproc, f"/repos/{REPO}/issues", **AUTH)
    assert single.headers["last-modified"] == formatdate(int(issue.updated_at), usegmt=True)
    assert "last-modified" not in listed.headers
    assert WEAK_ETAG.fullmatch(listed.headers["etag"])


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", f"/repos/{REPO}/issues/1/comments", {"body": "hi"}),
        ("PATCH", "/repos/octo/hello/issues/comments/{comment}", {"body": "edited"}),
        ("POST", f"/repos/{REPO}/issues/1/labels", ["triage"]),
        ("DELETE", f"/repos/{REPO}/issues/1/labels/bug", None),
        ("POST", f"/repos/{REPO}/issues/1/reactions", {"content": "+1"}),
        ("POST", "/repos/octo/hello/issues/comments/{comment}/reactions", {"content": "eyes"}),
    ],
)
def test_write_answers_carry_etag_cache_control_and_vary(
    fake_inproc: FakeHandle[FakeGitHub], method: str, path: str, body: Any
) -> None:
    comment = fake_inproc.app.add_comment(REPO, 1, "first", user="alice")
    with fake_inproc.client(headers=AUTH) as http:
        answer = http.request(method, path.format(comment=comment.id), json=body)
    assert answer.is_success, answer.text
    assert WEAK_ETAG.fullmatch(answer.headers["etag"])
    assert answer.headers["cache-control"] == "private, max-age=60, s-maxage=60"
    assert answer.headers.get_list("vary") == [
        "Accept, Authorization, Cookie, X-GitHub-OTP",
        "Accept-Encoding, Accept, X-Requested-With",
    ]


def test_an_installation_token_answer_carries_the_caching_headers(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    fake = fake_inproc.app
    app = fake.add_app("reply-bot")
    inst = fake.add_installation(app.id, "octo")
    now = int(fake.now())
    signed = jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(app.id)}, app.private_key_pem, "RS256")
    with fake_inproc.client(headers={"authorization": f"Bearer {signed}"}) as http:
        answer = http.post(f"/app/installations/{inst.id}/access_tokens")
    assert answer.status_code == 201
    assert WEAK_ETAG.fullmatch(answer.headers["etag"])
    assert answer.headers["cache-control"] == "private, max-age=60, s-maxage=60"


def test_contents_answers_carry_last_modified(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    created = formatdate(int(fake_inproc.app.repo(REPO).created_at), usegmt=True)
    assert _get(fake_inproc, f"/repos/{REPO}/contents/README.md", **AUTH).headers["last-modified"] == created
    assert _get(fake_inproc, f"/repos/{REPO}/contents/docs", **AUTH).headers["last-modified"] == created


def test_a_files_download_url_serves_its_bytes(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    fake_inproc.app.add_repo("octo/private-docs", private=True, collaborators=["alice"], files={"a b.md": "secret"})
    listed = _get(fake_inproc, f"/repos/{REPO}/contents/docs/guide.md", **AUTH).json()
    with fake_inproc.client() as http:
        raw = http.get(listed["download_url"])
        hidden_url = f"{fake_inproc.url}/raw/octo/private-docs/main/a%20b.md"
        anonymous, allowed = http.get(hidden_url), http.get(hidden_url, headers=AUTH)
        missing = http.get(f"{fake_inproc.url}/raw/octo/hello/main/nope.md")
    assert raw.status_code == 200
    assert raw.content == "guide é\n".encode()
    assert raw.headers["content-type"] == "text/plain; charset=utf-8"
    assert raw.headers["etag"] == f'"{listed["sha"]}"'
    assert "x-ratelimit-limit" not in raw.headers  # downloads are another host's, outside the REST API's limit
    assert (anonymous.status_code, anonymous.text) == (404, "404: Not Found")
    assert allowed.content == b"secret"
    assert missing.status_code == 404
    assert [e.path for e in unserved(fake_inproc)] == []


def test_if_none_match_is_a_304_without_body_that_costs_no_rate_limit(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    first = _get(fake_inproc, f"/repos/{REPO}/issues/1", **AUTH)
    again = _get(fake_inproc, f"/repos/{REPO}/issues/1", **AUTH, **{"if-none-match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == first.headers["etag"]
    assert "content-type" not in again.headers
    assert again.headers["x-ratelimit-used"] == first.headers["x-ratelimit-used"] == "1"
    assert again.headers["x-ratelimit-remaining"] == "4999"
    after = _get(fake_inproc, f"/repos/{REPO}/issues/1", **AUTH)
    assert after.headers["x-ratelimit-used"] == "2"  # the 304 was not counted
    star = _get(fake_inproc, f"/repos/{REPO}/issues/1", **AUTH, **{"if-none-match": "*"})
    stale = _get(fake_inproc, f"/repos/{REPO}/issues/1", **AUTH, **{"if-none-match": 'W/"0000"'})
    assert star.status_code == 304
    assert stale.status_code == 200


def test_the_etag_changes_exactly_when_the_representation_changes(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    path = f"/repos/{REPO}/issues/1/comments"
    before = _get(fake_inproc, path, **AUTH).headers["etag"]
    assert _get(fake_inproc, path, **AUTH).headers["etag"] == before  # counters moved, the list did not
    comment = fake_inproc.app.add_comment(REPO, 1, "new", user="alice")
    changed = _get(fake_inproc, path, **AUTH, **{"if-none-match": before})
    assert changed.status_code == 200
    assert changed.headers["etag"] != before
    comment.body = "edited"
    assert _get(fake_inproc, path, **AUTH).headers["etag"] != changed.headers["etag"]


def test_if_modified_since_is_a_304_when_nothing_changed_since(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    first = _get(fake_inproc, f"/repos/{REPO}/issues/1", **AUTH)
    modified = first.headers["last-modified"]
    same = _get(fake_inproc, f"/repos/{REPO}/issues/1", **AUTH, **{"if-modified-since": modified})
    older = _get(
        fake_inproc, f"/repos/{REPO}/issues/1", **AUTH, **{"if-modified-since": "Mon, 01 Jan 2001 00:00:00 GMT"}
    )
    assert same.status_code == 304
    assert older.status_code == 200


def test_githubkit_with_an_http_cache_revalidates_with_a_304(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    kit = GitHub(
        TOKEN,
        base_url=fake_inproc.url,
        transport=fake_inproc.transport(),
        auto_retry=False,
        http_cache=True,
        timeout=10.0,
    )
    first = kit.rest.issues.get("octo", "hello", 1, headers={"cache-control": "no-cache"})
    second = kit.rest.issues.get("octo", "hello", 1, headers={"cache-control": "no-cache"})
    assert second.parsed_data.title == first.parsed_data.title == "First issue"
    statuses = [e.status for e in fake_inproc.requests(path_prefix=f"/repos/{REPO}/issues/1")]
    assert statuses == [200, 304]


# -- headers GitHub always sends --------------------------------------------------------------------------------


def test_json_answers_say_their_charset(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    assert _get(fake_inproc, f"/repos/{REPO}", **AUTH).headers["content-type"] == "application/json; charset=utf-8"
    assert _get(fake_inproc, "/repos/octo/nope").headers["content-type"] == "application/json; charset=utf-8"


def test_the_selected_api_version_is_echoed_and_an_unknown_one_is_githubs_400(
    fake_inproc: FakeHandle[FakeGitHub],
) -> None:
    default = _get(fake_inproc, f"/repos/{REPO}", **AUTH)
    pinned = _get(fake_inproc, f"/repos/{REPO}", **AUTH, **{"x-github-api-version": "2026-03-10"})
    unknown = _get(fake_inproc, f"/repos/{REPO}", **AUTH, **{"x-github-api-version": "1999-01-01"})
    bad_token = _get(fake_inproc, f"/repos/{REPO}", authorization="token nope", **{"x-github-api-version": "v3"})
    assert default.headers["x-github-api-version-selected"] == "2022-11-28"
    assert pinned.headers["x-github-api-version-selected"] == "2026-03-10"
    assert unknown.status_code == 400
    assert unknown.json()["message"] == "Bad Request"
    assert unknown.json()["errors"] == (
        'The version you specified in the "X-GitHub-API-Version" request header, "1999-01-01", is not a supported '
        'version. The following versions are currently supported: "2026-03-10" (most recent) and "2022-11-28".'
    )
    assert "x-github-api-version-selected" not in unknown.headers
    assert bad_token.status_code == 401  # the credential is checked first


def test_oauth_tokens_get_their_scopes_and_the_accepted_ones(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    repo = _get(fake_inproc, f"/repos/{REPO}", **AUTH)
    me = _get(fake_inproc, "/user", **AUTH)
    assert repo.headers["x-oauth-scopes"] == "repo, user"
    assert repo.headers["x-accepted-oauth-scopes"] == "repo"
    assert me.headers["x-accepted-oauth-scopes"] == ""
    assert "x-accepted-github-permissions" not in repo.headers  # a classic token has scopes, not permissions
    assert "github-authentication-token-expiration" not in repo.headers  # it does not expire
    anonymous = _get(fake_inproc, f"/repos/{REPO}")
    assert "x-oauth-scopes" not in anonymous.headers


def test_a_github_app_user_token_shows_permissions_and_expiry(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    fake_inproc.app.oauth_login = "alice"
    with fake_inproc.client() as http:
        code = http.post("/login/device/code", data={"client_id": "Iv1.abc"}, headers={"accept": "application/json"})
        token = http.post(
            "/login/oauth/access_token",
            headers={"accept": "application/json"},
            data={
                "client_id": "Iv1.abc",
                "device_code": code.json()["device_code"],
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            },
        ).json()
    me = _get(fake_inproc, "/user", authorization=f"Bearer {token['access_token']}")
    expires = fake_inproc.app.tokens[token["access_token"]].expires_at
    assert me.headers["x-oauth-scopes"] == ""
    assert me.headers["x-accepted-github-permissions"] == "allows_permissionless_access=true"
    assert me.headers["x-oauth-client-id"] == "Iv1.abc"
    assert me.headers["github-authentication-token-expiration"] == time.strftime(
        "%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires)
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", me.headers["github-authentication-token-expiration"])


def _installation_token(handle: FakeHandle[FakeGitHub]) -> tuple[str, httpx.Response]:
    fake = handle.app
    app = fake.add_app("reply-bot")
    inst = fake.add_installation(app.id, "octo")
    now = int(time.time())
    signed = jwt.encode({"iss": str(app.id), "iat": now - 60, "exp": now + 300}, app.private_key_pem, "RS256")
    with handle.client() as http:
        answer = http.post(
            f"/app/installations/{inst.id}/access_tokens", json={}, headers={"authorization": f"Bearer {signed}"}
        )
    return answer.json()["token"], answer


def test_installation_tokens_get_accepted_permissions_and_jwt_routes_no_rate_limit(
    fake_inproc: FakeHandle[FakeGitHub],
) -> None:
    token, minted = _installation_token(fake_inproc)
    assert minted.status_code == 201
    assert not any(name.startswith("x-ratelimit-") for name in minted.headers)  # App JWT routes carry none
    with fake_inproc.client(headers={"authorization": f"token {token}"}) as http:
        posted = http.post(f"/repos/{REPO}/issues/1/comments", json={"body": "hi"})
        read = http.get(f"/repos/{REPO}/issues/1")
    assert posted.headers["x-accepted-github-permissions"] == "issues=write; pull_requests=write"
    assert read.headers["x-accepted-github-permissions"] == "issues=read"
    assert "x-oauth-scopes" not in read.headers
    assert read.headers["github-authentication-token-expiration"].endswith(" UTC")
    assert read.headers["x-ratelimit-used"] == "2"


# -- the issue and pull request shape ---------------------------------------------------------------------------


ORG_REPO = "acme/tracker"  # issue types are an organization feature


def _issue(handle: FakeHandle[FakeGitHub], number: int, repo: str = REPO) -> dict[str, Any]:
    answer: dict[str, Any] = _get(handle, f"/repos/{repo}/issues/{number}", **AUTH).json()
    return answer


def _org_repo(fake: FakeGitHub) -> None:
    fake.add_user("acme", type="Organization")
    fake.add_repo(ORG_REPO)
    fake.add_issue(ORG_REPO, "First issue", user="alice")


def test_draft_only_on_pull_requests_and_summaries_only_on_issues(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    fake_inproc.app.add_pull(REPO, "A pull", head="feat", user="alice", draft=True)
    plain, as_pull = _issue(fake_inproc, 1), _issue(fake_inproc, 2)
    assert "draft" not in plain
    assert as_pull["draft"] is True
    assert plain["issue_dependencies_summary"] == {
        "blocked_by": 0,
        "total_blocked_by": 0,
        "blocking": 0,
        "total_blocking": 0,
    }
    assert plain["sub_issues_summary"] == {"total": 0, "completed": 0, "percent_completed": 0}
    assert "issue_dependencies_summary" not in as_pull
    assert "parent_issue_url" not in plain
    assert plain["pinned_comment"] is None  # GitHub sends the key on every issue, null until a comment is pinned
    assert as_pull["pinned_comment"] is None


def test_type_only_on_issues_of_an_organizations_repository(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    fake = fake_inproc.app
    _org_repo(fake)
    assert "type" not in _issue(fake_inproc, 1)  # octo is a user: GitHub omits the key
    assert _issue(fake_inproc, 1, ORG_REPO)["type"] is None
    with pytest.raises(ValueError, match="issue types belong to organizations"):
        fake.add_issue(REPO, "typed", type="Bug")


def test_types_sub_issues_dependencies_and_a_pinned_comment(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    fake = fake_inproc.app
    _org_repo(fake)
    fake.add_issue(ORG_REPO, "child", type="Bug", parent=1)
    fake.add_issue(ORG_REPO, "done child", parent=1, state="closed", blocked_by=[1])
    pinned = fake.add_comment(ORG_REPO, 1, "read me first", user="alice")
    fake.pin_comment(ORG_REPO, pinned.id)
    parent, child = _issue(fake_inproc, 1, ORG_REPO), _issue(fake_inproc, 2, ORG_REPO)
    assert child["type"]["name"] == "Bug"
    assert set(child["type"]) == {
        "id",
        "node_id",
        "name",
        "description",
        "color",
        "created_at",
        "updated_at",
        "is_enabled",
    }
    assert child["parent_issue_url"] == f"{fake_inproc.url}/repos/{ORG_REPO}/issues/1"
    assert parent["sub_issues_summary"] == {"total": 2, "completed": 1, "percent_completed": 50}
    assert parent["issue_dependencies_summary"]["total_blocking"] == 1
    assert parent["issue_dependencies_summary"]["blocking"] == 0  # the blocked issue is closed
    assert parent["pinned_comment"]["id"] == pinned.id


@pytest.mark.parametrize(
    ("kind", "titles"), [("Bug", ["bug"]), ("bug", ["bug"]), ("*", ["task", "bug"]), ("none", ["First issue"])]
)
def test_the_type_filter_of_the_issue_list(fake_inproc: FakeHandle[FakeGitHub], kind: str, titles: list[str]) -> None:
    _org_repo(fake_inproc.app)
    fake_inproc.app.add_issue(ORG_REPO, "bug", type="Bug")
    fake_inproc.app.add_issue(ORG_REPO, "task", type="Task")
    with fake_inproc.client(headers=AUTH) as http:
        listed = http.get(f"/repos/{ORG_REPO}/issues", params={"type": kind}).json()
    assert [i["title"] for i in listed] == titles


@pytest.mark.parametrize("schema", SCHEMAS)
def test_githubkit_parses_the_new_keys(kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]) -> None:
    _org_repo(fake_inproc.app)
    fake_inproc.app.add_issue(ORG_REPO, "child", type="Task", parent=1, blocked_by=[1])
    child = rest_api(kit, schema).issues.get("acme", "tracker", 2).parsed_data
    assert child.type is not None
    assert child.type.name == "Task"
    assert child.issue_dependencies_summary is not None
    assert child.issue_dependencies_summary.blocked_by == 1
    assert child.parent_issue_url == f"{fake_inproc.url}/repos/{ORG_REPO}/issues/1"


@pytest.mark.parametrize("schema", SCHEMAS)
def test_mergeable_is_null_while_github_computes_it(
    kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]
) -> None:
    fake_inproc.app.add_pull(REPO, "A pull", head="feat", user="alice")
    rest = rest_api(kit, schema)
    first, second = rest.pulls.get("octo", "hello", 2).parsed_data, rest.pulls.get("octo", "hello", 2).parsed_data
    assert (first.mergeable, first.rebaseable, first.mergeable_state) == (None, None, "unknown")
    assert (second.mergeable, second.rebaseable, second.mergeable_state) == (True, True, "clean")
    fake_inproc.app.touch_pull(REPO, 2, mergeable=False)
    raw = [_get(fake_inproc, f"/repos/{REPO}/pulls/2", **AUTH).json() for _ in range(2)]
    assert [(r["mergeable"], r["mergeable_state"]) for r in raw] == [(None, "unknown"), (False, "dirty")]
    assert all(re.fullmatch(r"[0-9a-f]{40}", r["merge_commit_sha"]) for r in raw)


# -- private fields only where GitHub shows them ----------------------------------------------------------------

PRIVATE_USER_FIELDS = {
    "private_gists",
    "total_private_repos",
    "owned_private_repos",
    "disk_usage",
    "collaborators",
    "two_factor_authentication",
}


def test_get_user_shows_private_fields_only_with_the_user_scope(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    fake_inproc.app.add_user("bob", token="gho_bob_repo_only", scopes=["repo"])
    with_scope = _get(fake_inproc, "/user", **AUTH).json()
    without = _get(fake_inproc, "/user", authorization="token gho_bob_repo_only").json()
    assert set(with_scope) >= PRIVATE_USER_FIELDS
    assert PRIVATE_USER_FIELDS.isdisjoint(without)
    assert without["public_repos"] == 0
    assert "notification_email" in without


def test_temp_clone_token_only_for_those_who_may_clone(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    anonymous = _get(fake_inproc, f"/repos/{REPO}").json()
    public = _get(fake_inproc, f"/repos/{REPO}", **AUTH).json()
    private = _get(fake_inproc, "/repos/octo/secret", **AUTH).json()
    assert anonymous["temp_clone_token"] is None
    assert public["temp_clone_token"] == ""
    assert re.fullmatch(r"[A-Z2-7]{29}", private["temp_clone_token"])
