"""Specs of specs.agent_controller.github_seed and .github_journal against the fake GitHub on a real socket."""

from __future__ import annotations

import httpx
import pytest

from specs.agent_controller import github_seed
from specs.agent_controller.cluster_secrets import SecretValue
from specs.agent_controller.github_journal import GitHubJournal, JournalUnreadable

BOT_TOKEN = SecretValue("ghs_e2e-bot-token", "gw/GITHUB_TOKEN")


def _as_bot(gh, method: str, path: str, **kwargs) -> httpx.Response:
    return httpx.request(
        method,
        gh.url + path,
        headers={"authorization": f"Bearer {BOT_TOKEN.reveal()}"},
        timeout=10.0,
        trust_env=False,
        **kwargs,
    )


def test_seeding_is_idempotent_and_opens_issues_with_their_own_numbers(fake_github) -> None:
    github_seed.seed_world(fake_github.url, bot_token=BOT_TOKEN)
    github_seed.seed_world(fake_github.url, bot_token=BOT_TOKEN)
    issue = github_seed.open_issue(fake_github.url, 1_000_321, title="t")
    assert issue["number"] == 1_000_321
    assert github_seed.issue_labels(fake_github.url, 1_000_321) == ["ai-triage"]
    with pytest.raises(github_seed.SeedFailed, match="taken"):
        github_seed.open_issue(fake_github.url, 1_000_321, title="again")
    assert _as_bot(fake_github, "GET", "/repos/e2e-org/e2e-private").status_code == 200
    assert httpx.get(fake_github.url + "/repos/e2e-org/e2e-private", trust_env=False).status_code == 404


def test_the_journal_shows_comments_label_removals_and_unstubbed_calls(fake_github) -> None:
    github_seed.seed_world(fake_github.url, bot_token=BOT_TOKEN)
    github_seed.open_issue(fake_github.url, 1_000_400, title="t")
    base = "/repos/e2e-org/e2e-repo/issues/1000400"
    assert (
        _as_bot(
            fake_github, "POST", f"{base}/comments", json={"body": "<!-- agent-controller:reply -->\nhi"}
        ).status_code
        == 201
    )
    assert _as_bot(fake_github, "DELETE", f"{base}/labels/ai-triage").status_code == 200
    assert _as_bot(fake_github, "POST", f"{base}/assignees", json={"assignees": ["e2e-user"]}).status_code == 501
    journal = GitHubJournal(fake_github.url)
    assert journal.comments("e2e-org", "e2e-repo", 1_000_400) == ["<!-- agent-controller:reply -->\nhi"]
    assert [c.status for c in journal.label_removals("e2e-org", "e2e-repo", 1_000_400, "ai-triage")] == [200]
    assert [c.line() for c in journal.unstubbed()] == [f"POST {base}/assignees -> 501"]
    assert github_seed.issue_labels(fake_github.url, 1_000_400) == []
    github_seed.add_label(fake_github.url, 1_000_400)
    assert github_seed.issue_labels(fake_github.url, 1_000_400) == ["ai-triage"]


def test_a_comment_that_was_refused_is_not_counted(fake_github) -> None:
    github_seed.seed_world(fake_github.url, bot_token=BOT_TOKEN)
    assert (
        _as_bot(fake_github, "POST", "/repos/e2e-org/e2e-repo/issues/999999/comments", json={"body": "x"}).status_code
        == 404
    )
    assert GitHubJournal(fake_github.url).comments("e2e-org", "e2e-repo", 999999) == []


def test_something_that_is_not_the_fake_is_named(receiver) -> None:
    with pytest.raises(JournalUnreadable, match="is this the harness's fake GitHub"):
        GitHubJournal(receiver.url).calls()
