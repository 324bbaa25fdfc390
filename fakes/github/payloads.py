"""Webhook payload builders over the fake's state (issue #5; fakes-api.md §3.8).

Each builder returns a dict for ``send_webhook`` that parses with githubkit's webhook models for both pinned schema
versions (2022-11-28 and 2026-03-10): nullable-but-required fields are present as ``null`` (24 of 67 published
examples fail those models; §0 item 7). ``base`` is the URL prefix of every URL field (default: the fake's public base
URL, else ``http://fake-github``). ``installation`` (``{"id", "node_id"}``) is added when an installed App covers the
repository, as in App deliveries. Builders raise ``KeyError`` naming the missing repository, issue or comment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakes.github import render

if TYPE_CHECKING:
    from fakes.github.app import FakeGitHub
    from fakes.github.state import Repo


def _base(fake: FakeGitHub, base: str | None) -> str:
    return (base or fake.public_base_url or "http://fake-github").rstrip("/")


def _repository(base: str, repo: Repo) -> dict[str, Any]:
    shape = render.repository(base, repo, full=False)
    shape.update(stargazers=0, master_branch=repo.default_branch)
    shape["owner"] = render.user(base, repo.owner)
    return shape


def _envelope(fake: FakeGitHub, base: str, repo: Repo, sender_login: str | None, default_sender: Any) -> dict[str, Any]:
    sender = fake.users.get(sender_login.lower()) if sender_login else None
    if sender_login and sender is None:
        sender = _bot_by_login(fake, sender_login)
    if sender_login and sender is None:
        raise KeyError(f"no user {sender_login!r} seeded in the fake GitHub to send this event")
    envelope: dict[str, Any] = {
        "repository": _repository(base, repo),
        "sender": render.user(base, sender or default_sender),
    }
    inst = next((i for i in fake.installations.values() if i.covers(repo)), None)
    if inst is not None:
        envelope["installation"] = {"id": inst.id, "node_id": render.node_id("MDIz_", inst.id)}
    if repo.owner.type == "Organization":
        envelope["organization"] = _organization(base, repo)
    return envelope


def _bot_by_login(fake: FakeGitHub, login: str):  # -> User | None
    return next((a.bot for a in fake.apps.values() if a.bot.login.lower() == login.lower()), None)


def _organization(base: str, repo: Repo) -> dict[str, Any]:
    login = repo.owner.login
    api = f"{base}/orgs/{login}"
    return {
        "login": login, "id": repo.owner.id, "node_id": render.node_id("O_", repo.owner.id), "url": api,
        "repos_url": f"{api}/repos", "events_url": f"{api}/events", "hooks_url": f"{api}/hooks",
        "issues_url": f"{api}/issues", "members_url": f"{api}/members{{/member}}",
        "public_members_url": f"{api}/public_members{{/member}}", "avatar_url": f"{base}/avatars/u/{repo.owner.id}",
        "description": None,
    }


def _issue(fake: FakeGitHub, base: str, repo: Repo, number: int) -> dict[str, Any]:
    iss = repo.issues.get(number)
    if iss is None:
        raise KeyError(f"no issue #{number} in {repo.full_name} to build a webhook payload from")
    return render.issue(base, repo, iss)


def issues_opened_payload(fake: FakeGitHub, repo: str, number: int, *, sender: str | None = None,
                          base: str | None = None) -> dict[str, Any]:
    """``issues`` / ``opened`` for issue ``number`` of ``repo`` (``owner/name``); sender defaults to the author."""
    with fake.lock:
        r, b = fake.repo(repo), _base(fake, base)
        iss = _issue(fake, b, r, number)
        return {"action": "opened", "issue": iss, **_envelope(fake, b, r, sender, r.issues[number].user)}


def issues_labeled_payload(fake: FakeGitHub, repo: str, number: int, label: str, *, sender: str | None = None,
                           base: str | None = None) -> dict[str, Any]:
    """``issues`` / ``labeled``: ``label`` is the label just added (the gateway reads ``label.name``)."""
    with fake.lock:
        r, b = fake.repo(repo), _base(fake, base)
        iss = _issue(fake, b, r, number)
        lab = r.labels.get(label.lower())
        if lab is None:
            raise KeyError(f"no label {label!r} in {r.full_name} for a labeled event")
        return {"action": "labeled", "issue": iss, "label": render.label(b, r, lab),
                **_envelope(fake, b, r, sender, r.issues[number].user)}


def issue_comment_created_payload(fake: FakeGitHub, repo: str, comment_id: int, *, sender: str | None = None,
                                  base: str | None = None) -> dict[str, Any]:
    """``issue_comment`` / ``created`` for a comment; the sender is the comment's author (a ``Bot`` for comments an
    App posted), which is what a receiver's loop guard looks at (§3.10 item 5)."""
    with fake.lock:
        r, b = fake.repo(repo), _base(fake, base)
        c = fake.comments.get(comment_id)
        if c is None or c.repo is not r:
            raise KeyError(f"no comment {comment_id} in {r.full_name} to build a webhook payload from")
        return {"action": "created", "issue": _issue(fake, b, r, c.issue_number),
                "comment": render.comment(b, r, c), **_envelope(fake, b, r, sender, c.user)}


def pull_request_opened_payload(fake: FakeGitHub, repo: str, number: int, *, sender: str | None = None,
                                base: str | None = None) -> dict[str, Any]:
    """``pull_request`` / ``opened`` for pull request ``number`` (seeded with ``add_pull``)."""
    with fake.lock:
        r, b = fake.repo(repo), _base(fake, base)
        iss = r.issues.get(number)
        if iss is None or iss.pull is None:
            raise KeyError(f"no pull request #{number} in {r.full_name} to build a webhook payload from")
        return {"action": "opened", "number": number, "pull_request": render.pull(b, r, iss),
                **_envelope(fake, b, r, sender, iss.user)}
