"""PyGithub (requests, so a real socket) drives the fake GitHub. PyGithub follows ``url``
fields of earlier responses, sends a bare-array label body, counts with ``per_page=1`` + ``rel="last"``, and uses
preview Accept headers; the fake must satisfy all of that with retries off."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from github import Auth, Github, UnknownObjectException
from github.ContentFile import ContentFile

from fakes.github import FakeGitHub, unserved
from fakes.server import FakeHandle
from specs.github.world import REPO, TOKEN


@pytest.fixture
def pyg(served: FakeHandle[FakeGitHub]) -> Iterator[Github]:
    client = _client(served.url, TOKEN)
    yield client
    client.close()
    assert unserved(served) == []  # PyGithub called nothing the fake does not model


def _client(url: str, token: str, **options: Any) -> Github:
    """PyGithub with retries off and without its default politeness pauses (0.25 s per request, 1 s per write)."""
    return Github(
        base_url=url,
        auth=Auth.Token(token),
        retry=None,
        timeout=10,
        seconds_between_requests=None,
        seconds_between_writes=None,
        **options,
    )


def test_issue_comment_edit_follows_url_fields(pyg: Github, served: FakeHandle[FakeGitHub]) -> None:
    issue = pyg.get_repo(REPO).get_issue(1)
    assert (issue.title, issue.body) == ("First issue", "Body é")
    comment = issue.create_comment("hello")
    assert comment.url.startswith(served.url)
    comment.edit("edited")
    assert comment.body == "edited"
    patch = served.requests(method="PATCH")[-1]
    assert patch.path == f"/repos/{REPO}/issues/comments/{comment.id}"  # the url field, followed
    assert json.loads(patch.body) == {"body": "edited"}


@pytest.mark.parametrize("count", [0, 1, 2, 3])  # 0, 1, per_page and per_page + 1 with per_page=2
def test_pagination_and_total_count(served: FakeHandle[FakeGitHub], count: int) -> None:
    for i in range(count):
        served.app.add_comment(REPO, 1, f"c{i}", user="alice")
    client = _client(served.url, TOKEN, per_page=2)
    try:
        comments = client.get_repo(REPO).get_issue(1).get_comments()
        assert [c.body for c in comments] == [f"c{i}" for i in range(count)]
        assert comments.totalCount == count
    finally:
        client.close()
    if count > 1:  # totalCount asked for one item per page and read the page number of rel="last"
        listed = served.requests(path_prefix=f"/repos/{REPO}/issues/1/comments")
        assert any(e.query_params.get("per_page") == ["1"] for e in listed)


def test_labels_bare_array_and_space_in_name(pyg: Github, served: FakeHandle[FakeGitHub]) -> None:
    issue = pyg.get_repo(REPO).get_issue(1)
    issue.add_to_labels("needs triage", "p1")
    post = served.requests(method="POST")[-1]
    assert json.loads(post.body) == ["needs triage", "p1"]  # PyGithub's bare-array body
    issue.remove_from_labels("needs triage")
    assert served.requests(method="DELETE")[-1].path == f"/repos/{REPO}/issues/1/labels/needs triage"
    assert [lab.name for lab in pyg.get_repo(REPO).get_issue(1).labels] == ["bug", "p1"]


def test_reactions_twice(pyg: Github, served: FakeHandle[FakeGitHub]) -> None:
    issue = pyg.get_repo(REPO).get_issue(1)
    first, second = issue.create_reaction("+1"), issue.create_reaction("+1")
    assert first.id == second.id
    assert first.content == "+1"
    comment = issue.create_comment("x")
    assert comment.create_reaction("eyes").id == comment.create_reaction("eyes").id
    statuses = [e.status for e in served.requests(path_prefix=f"/repos/{REPO}/issues") if e.path.endswith("/reactions")]
    assert statuses == [201, 200, 201, 200]


def test_pull_and_lazy_404(pyg: Github, served: FakeHandle[FakeGitHub]) -> None:
    served.app.add_pull(REPO, "Feature", head="feat", user="alice")
    pull = pyg.get_repo(REPO).get_pull(2)
    assert (pull.head.ref, pull.base.ref, pull.number) == ("feat", "main", 2)
    with pytest.raises(UnknownObjectException):
        pyg.get_repo(REPO).get_issue(99)
    with pytest.raises(UnknownObjectException):
        outsider = _client(served.url, "ghp_mallory")
        try:
            outsider.get_repo("octo/secret")
        finally:
            outsider.close()


def test_contents(pyg: Github) -> None:
    readme = pyg.get_repo(REPO).get_contents("README.md")
    assert isinstance(readme, ContentFile)  # a file: one ContentFile
    assert readme.decoded_content == b"# hello\n"
    docs = pyg.get_repo(REPO).get_contents("docs")
    assert isinstance(docs, list)  # a directory: a list of entries
    assert sorted(e.path for e in docs) == ["docs/guide.md", "docs/img"]
