"""githubkit drives every REST endpoint of the fake GitHub, once per pinned schema version (2022-11-28 and
2026-03-10), automatic retries off. Each call parses its model (``.parsed_data``) and the
journal shows what went over the wire."""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from githubkit import GitHub
from githubkit.exception import RequestFailed

from fakes.github import FakeGitHub
from fakes.server import FakeHandle
from specs.github.world import REPO, TOKEN, Schema, rest_api

OWNER, NAME = REPO.split("/")


def test_get_issue_parses_and_points_back_at_the_fake(
    kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]
) -> None:
    issue = rest_api(kit, schema).issues.get(OWNER, NAME, 1).parsed_data
    assert (issue.number, issue.title, issue.body, issue.state) == (1, "First issue", "Body é", "open")
    assert [lab.name for lab in issue.labels] == ["bug"]
    assert issue.url == f"{fake_inproc.url}/repos/{REPO}/issues/1"
    assert issue.comments_url.startswith(fake_inproc.url)
    assert issue.user.url.startswith(fake_inproc.url)
    # Following the url field stays on the fake and returns the same issue.
    followed = kit.request("GET", issue.url).json()
    assert followed["id"] == issue.id


def test_comment_create_get_update_and_list(
    kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]
) -> None:
    rest = rest_api(kit, schema)
    created = rest.issues.create_comment(OWNER, NAME, 1, body="<!-- agent-controller:reply -->\nhi")
    assert created.status_code == 201
    comment = created.parsed_data
    assert created.headers["location"] == comment.url == f"{fake_inproc.url}/repos/{REPO}/issues/comments/{comment.id}"
    assert comment.user.login == "alice"
    assert comment.body.startswith("<!-- agent-controller:reply -->")
    assert rest.issues.get_comment(OWNER, NAME, comment.id).parsed_data.body == comment.body
    updated = rest.issues.update_comment(OWNER, NAME, comment.id, body="edited").parsed_data
    assert updated.body == "edited"
    assert [c.id for c in rest.issues.list_comments(OWNER, NAME, 1).parsed_data] == [comment.id]
    assert rest.issues.get(OWNER, NAME, 1).parsed_data.comments == 1
    posted = [e for e in fake_inproc.requests(method="POST") if e.path.endswith("/comments")]
    assert json.loads(posted[-1].body) == {"body": "<!-- agent-controller:reply -->\nhi"}


@pytest.mark.parametrize("count", [0, 1, 3, 4])  # 0, 1, per_page and per_page + 1 items with per_page=3
def test_pagination_link_and_page_until_empty(
    kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub], count: int
) -> None:
    for i in range(count):
        fake_inproc.app.add_comment(REPO, 1, f"c{i}", user="alice")
    rest = rest_api(kit, schema)
    pages_of = kit.rest.paginate(rest.issues.list_comments, owner=OWNER, repo=NAME, issue_number=1, per_page=3)
    via_link = [c.body for c in pages_of]
    assert via_link == [f"c{i}" for i in range(count)]
    pages = -(-count // 3)
    assert _pages_requested(fake_inproc) == [str(n) for n in range(1, max(pages, 1) + 1)]  # Link rel=next only
    fake_inproc.runtime.journal.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # legacy page-until-empty pagination is deprecated
        legacy = [
            c.body for c in kit.paginate(rest.issues.list_comments, per_page=3, owner=OWNER, repo=NAME, issue_number=1)
        ]
    assert legacy == via_link
    assert _pages_requested(fake_inproc) == [str(n) for n in range(1, pages + 2)]  # until an empty page


def _pages_requested(handle: FakeHandle[FakeGitHub]) -> list[str]:
    listed = handle.requests(path_prefix=f"/repos/{REPO}/issues/1/comments")
    return [e.query_params.get("page", ["1"])[-1] for e in listed]


def test_link_header_shape_and_per_page_cap(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    for i in range(31):
        fake_inproc.app.add_comment(REPO, 1, f"c{i}", user="alice")
    with fake_inproc.client() as http:
        first = http.get(f"/repos/{REPO}/issues/1/comments")
        middle = http.get(f"/repos/{REPO}/issues/1/comments", params={"per_page": 10, "page": 2})
        capped = http.get(f"/repos/{REPO}/issues/1/comments", params={"per_page": 500})
        past = http.get(f"/repos/{REPO}/issues/1/comments", params={"page": 3})
    base = f"{fake_inproc.url}/repos/{REPO}/issues/1/comments"
    assert len(first.json()) == 30
    assert first.headers["link"] == f'<{base}?page=2>; rel="next", <{base}?page=2>; rel="last"'
    assert middle.headers["link"] == (
        f'<{base}?per_page=10&page=1>; rel="prev", <{base}?per_page=10&page=3>; '
        f'rel="next", <{base}?per_page=10&page=4>; rel="last", '
        f'<{base}?per_page=10&page=1>; rel="first"'
    )
    assert len(capped.json()) == 31  # silently capped at 100: one page
    assert "link" not in capped.headers
    assert past.status_code == 200
    assert past.json() == []


def test_since_filters_updated_at_at_or_after(
    kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]
) -> None:
    fake = fake_inproc.app
    fake.add_comment(REPO, 1, "old", user="alice", created_at="2024-01-01T00:00:00Z")
    fake.add_comment(REPO, 1, "edge", user="alice", created_at="2024-05-01T00:00:00Z")
    fake.add_comment(REPO, 1, "new", user="alice", created_at="2024-06-01T00:00:00Z")
    got = rest_api(kit, schema).issues.list_comments(OWNER, NAME, 1, since="2024-05-01T00:00:00Z").parsed_data
    assert [c.body for c in got] == ["edge", "new"]


def test_labels_three_body_shapes_spaces_and_remove(
    kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]
) -> None:
    rest = rest_api(kit, schema)
    assert [lab.name for lab in rest.issues.add_labels(OWNER, NAME, 1, labels=["needs triage"]).parsed_data] == [
        "bug",
        "needs triage",
    ]
    with fake_inproc.client(headers={"authorization": f"token {TOKEN}"}) as http:
        bare = http.post(f"/repos/{REPO}/issues/1/labels", content=b'["p1"]')
        objects = http.post(f"/repos/{REPO}/issues/1/labels", json={"labels": [{"name": "area: ci"}]})
    assert bare.status_code == objects.status_code == 200
    assert [lab["name"] for lab in objects.json()] == ["bug", "needs triage", "p1", "area: ci"]
    remaining = rest.issues.remove_label(OWNER, NAME, 1, "needs triage").parsed_data
    assert [lab.name for lab in remaining] == ["bug", "p1", "area: ci"]
    deletes = fake_inproc.requests(method="DELETE")
    assert deletes[-1].path == f"/repos/{REPO}/issues/1/labels/needs triage"  # decoded; it went out as needs%20triage
    with pytest.raises(RequestFailed) as missing:
        rest.issues.remove_label(OWNER, NAME, 1, "needs triage")
    assert missing.value.response.status_code == 404
    body = missing.value.response.json()
    assert body["message"] == "Label does not exist"
    assert body["status"] == "404"


def test_reactions_twice_give_201_then_200(kit: GitHub[Any], schema: Schema) -> None:
    rest = rest_api(kit, schema)
    comment = rest.issues.create_comment(OWNER, NAME, 1, body="x").parsed_data
    creates: list[Callable[[], Any]] = [
        lambda: rest.reactions.create_for_issue(OWNER, NAME, 1, content="heart"),
        lambda: rest.reactions.create_for_issue_comment(OWNER, NAME, comment.id, content="rocket"),
    ]
    for create in creates:
        first, second = create(), create()
        assert (first.status_code, second.status_code) == (201, 200)
        assert first.parsed_data.id == second.parsed_data.id
    assert rest.issues.get(OWNER, NAME, 1).parsed_data.reactions.heart == 1


def test_pull_request_and_pr_as_issue(kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]) -> None:
    fake_inproc.app.add_pull(REPO, "Add feature", head="feat", user="alice")
    rest = rest_api(kit, schema)
    pull = rest.pulls.get(OWNER, NAME, 2).parsed_data
    assert (pull.number, pull.head.ref, pull.base.ref, pull.merged) == (2, "feat", "main", False)
    as_issue = rest.issues.get(OWNER, NAME, 2).parsed_data
    assert as_issue.pull_request is not None
    assert as_issue.pull_request.url == pull.url
    with pytest.raises(RequestFailed) as not_a_pull:
        rest.pulls.get(OWNER, NAME, 1)
    assert not_a_pull.value.response.status_code == 404


def test_contents_file_and_directory(kit: GitHub[Any], schema: Schema) -> None:
    rest = rest_api(kit, schema)
    readme = rest.repos.get_content(OWNER, NAME, "README.md").parsed_data
    assert readme.type == "file"
    assert base64.b64decode(readme.content) == b"# hello\n"
    docs = rest.repos.get_content(OWNER, NAME, "docs").parsed_data
    assert sorted((e.name, e.type) for e in docs) == [("guide.md", "file"), ("img", "dir")]
    with pytest.raises(RequestFailed) as missing:
        rest.repos.get_content(OWNER, NAME, "nope.txt")
    assert missing.value.response.status_code == 404


def test_repository_and_private_repo_answers_404(
    kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]
) -> None:
    rest = rest_api(kit, schema)
    assert rest.repos.get(OWNER, NAME).parsed_data.full_name == REPO
    assert rest.repos.get("octo", "secret").parsed_data.private is True  # alice is a collaborator
    with fake_inproc.client(headers={"authorization": "token ghp_mallory"}) as http:
        hidden = http.get("/repos/octo/secret")
        hidden_issue = http.get("/repos/octo/secret/issues/1")
    assert hidden.status_code == hidden_issue.status_code == 404
    assert hidden.json()["message"] == "Not Found"
    assert hidden.json()["status"] == "404"


def test_error_bodies_422_401_400(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    with fake_inproc.client(headers={"authorization": f"token {TOKEN}"}) as http:
        missing = http.post(f"/repos/{REPO}/issues/1/comments", json={})
        broken = http.post(f"/repos/{REPO}/issues/1/comments", content=b"{not json")
        bad_reaction = http.post(f"/repos/{REPO}/issues/1/reactions", json={"content": "thumbs"})
        bad_token = http.get(f"/repos/{REPO}", headers={"authorization": "token nope"})
    anonymous_write = httpx.Client(base_url=fake_inproc.url, transport=fake_inproc.transport()).post(
        f"/repos/{REPO}/issues/1/comments", json={"body": "x"}
    )
    assert missing.status_code == 422
    assert missing.json()["message"] == "Validation Failed"
    assert missing.json()["errors"] == [{"resource": "IssueComment", "code": "missing_field", "field": "body"}]
    assert missing.json()["status"] == "422"
    assert missing.json()["documentation_url"].startswith("https://docs.github")
    assert broken.status_code == 400
    assert broken.json()["message"] == "Problems parsing JSON"
    assert bad_reaction.status_code == 422
    assert bad_token.status_code == 401
    assert bad_token.json() == {
        "message": "Bad credentials",
        "documentation_url": "https://docs.github.com/rest",
        "status": "401",
    }
    assert anonymous_write.status_code == 401


def test_rate_limit_headers_on_every_response_and_primary_limit(
    kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]
) -> None:
    from githubkit.exception import PrimaryRateLimitExceeded

    with fake_inproc.client(headers={"authorization": f"token {TOKEN}"}) as http:
        answers = [
            http.get(f"/repos/{REPO}"),
            http.get("/repos/octo/nope"),
            http.post(f"/repos/{REPO}/issues/1/comments", json={}),
        ]
    for answer in answers:
        assert {
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
            "x-ratelimit-used",
            "x-ratelimit-resource",
        } <= set(answer.headers), answer
    assert [int(a.headers["x-ratelimit-used"]) for a in answers] == [1, 2, 3]
    assert int(answers[0].headers["x-ratelimit-remaining"]) == 4999
    fake_inproc.app.set_rate_limit_remaining(0)
    with pytest.raises(PrimaryRateLimitExceeded) as limited:
        rest_api(kit, schema).issues.get(OWNER, NAME, 1)
    alice = fake_inproc.app.users["alice"].id
    assert limited.value.response.json()["message"] == f"API rate limit exceeded for user ID {alice}."


def test_unserved_endpoint_is_501_and_journaled_but_health_is_not(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    with fake_inproc.client() as http:
        unserved = http.put(f"/repos/{REPO}/issues/1/labels", json={"labels": ["x"]})
        health = http.get("/healthz")
    assert unserved.status_code == 501
    assert unserved.headers["x-ratelimit-used"] == "1"
    assert unserved.json()["message"] == f"fake GitHub does not serve PUT /repos/{REPO}/issues/1/labels"
    assert health.status_code == 200
    assert [(e.method, e.path, e.status) for e in fake_inproc.requests()] == [
        ("PUT", f"/repos/{REPO}/issues/1/labels", 501)
    ]


def test_list_issues_31_open_is_two_pages_and_state_since_filters(
    kit: GitHub[Any], schema: Schema, fake_inproc: FakeHandle[FakeGitHub]
) -> None:
    fake = fake_inproc.app
    for i in range(30):  # issue 1 is already open: 31 in all, one more than a page
        fake.add_issue(
            REPO,
            f"bulk {i}",
            user="alice",
            created_at="2024-01-01T00:00:00Z",
            updated_at="2024-06-01T00:00:00Z" if i == 5 else "2024-01-01T00:00:00Z",
        )
    fake.add_issue(REPO, "closed one", user="alice", state="closed")
    rest = rest_api(kit, schema)
    first = rest.issues.list_for_repo(OWNER, NAME)
    assert len(first.parsed_data) == 30
    assert 'rel="next"' in first.headers["link"]
    every = list(kit.rest.paginate(rest.issues.list_for_repo, owner=OWNER, repo=NAME))
    assert len(every) == 31
    assert all(i.state == "open" for i in every)
    assert len(rest.issues.list_for_repo(OWNER, NAME, state="all", per_page=100).parsed_data) == 32
    recent = rest.issues.list_for_repo(OWNER, NAME, since="2024-05-01T00:00:00Z").parsed_data
    assert {i.title for i in recent} == {"First issue", "bulk 5"}  # issue 1 was created (and updated) now


def test_anonymous_callers_get_60_an_hour_then_githubs_403(fake_inproc: FakeHandle[FakeGitHub]) -> None:
    with fake_inproc.client() as http:
        answers = [http.get(f"/repos/{REPO}") for _ in range(61)]
        fake_inproc.app.advance_clock(3600)  # a new hourly window
        fresh = http.get(f"/repos/{REPO}")
    assert [a.status_code for a in answers[:60]] == [200] * 60
    last = answers[60]
    assert last.status_code == 403
    assert last.headers["x-ratelimit-remaining"] == "0"
    assert last.json()["message"] == "API rate limit exceeded for anonymous caller."
    assert last.json()["status"] == "403"
    assert fresh.status_code == 200
    assert fresh.headers["x-ratelimit-used"] == "1"
