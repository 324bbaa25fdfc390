"""The state most fake-GitHub specs start from, and the constants they share."""

from __future__ import annotations

from typing import Any, Literal

from githubkit import GitHub

from fakes.github import FakeGitHub

#: The REST schema versions githubkit is installed with; specs run once per version.
Schema = Literal["2022-11-28", "2026-03-10"]
SCHEMAS: list[Schema] = ["2022-11-28", "2026-03-10"]
TOKEN = "ghp_alice_token"
REPO = "octo/hello"


def seed(fake: FakeGitHub) -> None:
    """The world most specs start from: alice (with a token), public octo/hello with issue 1, private octo/secret."""
    fake.add_user("alice", token=TOKEN)
    fake.add_user("mallory", token="ghp_mallory")
    fake.add_repo(REPO, files={"README.md": "# hello\n", "docs/guide.md": "guide é\n", "docs/img/logo.txt": "logo"})
    fake.add_repo("octo/secret", private=True, collaborators=["alice"])
    fake.add_label(REPO, "needs triage", color="d73a4a", description="Someone should look")
    fake.add_issue(REPO, "First issue", body="Body é", user="alice", labels=["bug"])
    fake.add_issue("octo/secret", "Hidden", body="x", user="alice")


def rest_api(kit: GitHub[Any], schema: Schema) -> Any:
    """githubkit's REST namespace for ``schema``. Typed ``Any`` on purpose: over both schema versions its models are a
    union no type checker can narrow usefully; the specs check the parsed models at run time instead."""
    return kit.rest(schema)
