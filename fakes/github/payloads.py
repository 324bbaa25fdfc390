"""Webhook payload builders over the fake's state.

Each builder returns a dict for ``send_webhook`` that parses with githubkit's webhook models for both pinned schema
versions (2022-11-28 and 2026-03-10). Those models require some nullable fields to be present (as ``null``), which
about a third of the published example payloads omit, so the fake builds payloads from its own state instead.
``base`` is the URL prefix of every URL field (default: the fake's public base URL, else ``http://fake-github``).
``installation`` (``{"id", "node_id"}``) is added when an installed App covers the repository, as in App deliveries.

Two layers: :func:`opened`, :func:`labeled`, :func:`comment_created` and :func:`pull_opened` take the objects a caller
already holds (the routes do); the public ``*_payload`` functions look them up by name first and raise ``KeyError``
naming the missing repository, issue, comment, label or sender.
"""

from __future__ import annotations

from typing import Any

from fakes.github import render
from fakes.github.state import Comment, Issue, Label, Repo, User
from fakes.github.store import GitHubStore


def _base(fake: GitHubStore, base: str | None) -> str:
    return (base or fake.public_base_url or "http://fake-github").rstrip("/")


def _repository(base: str, repo: Repo) -> dict[str, Any]:
    shape = render.repository(base, repo, full=False)
    shape.update(stargazers=0, master_branch=repo.default_branch)
    shape["owner"] = render.user(base, repo.owner)
    return shape


def _envelope(fake: GitHubStore, base: str, repo: Repo, sender: User) -> dict[str, Any]:
    envelope: dict[str, Any] = {"repository": _repository(base, repo), "sender": render.user(base, sender)}
    inst = fake.installation_for(repo)
    if inst is not None:
        envelope["installation"] = {"id": inst.id, "node_id": render.node_id("MDIz_", inst.id)}
    if repo.owner.type == "Organization":
        envelope["organization"] = _organization(base, repo)
    return envelope


def _organization(base: str, repo: Repo) -> dict[str, Any]:
    login = repo.owner.login
    api = f"{base}/orgs/{login}"
    return {
        "login": login,
        "id": repo.owner.id,
        "node_id": render.node_id("O_", repo.owner.id),
        "url": api,
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events",
        "hooks_url": f"{api}/hooks",
        "issues_url": f"{api}/issues",
        "members_url": f"{api}/members{{/member}}",
        "public_members_url": f"{api}/public_members{{/member}}",
        "avatar_url": f"{base}/avatars/u/{repo.owner.id}",
        "description": None,
    }


# -- from objects -----------------------------------------------------------------------------------------------


def opened(
    fake: GitHubStore, repo: Repo, iss: Issue, *, sender: User | None = None, base: str | None = None
) -> dict[str, Any]:
    """``issues`` / ``opened``; the sender defaults to the issue's author."""
    b = _base(fake, base)
    return {
        "action": "opened",
        "issue": render.issue(b, repo, iss, webhook=True),
        **_envelope(fake, b, repo, sender or iss.user),
    }


def labeled(
    fake: GitHubStore, repo: Repo, iss: Issue, label: Label, *, sender: User | None = None, base: str | None = None
) -> dict[str, Any]:
    """``issues`` / ``labeled``: ``label`` is the label just added (a receiver reads ``label.name``)."""
    b = _base(fake, base)
    return {
        "action": "labeled",
        "issue": render.issue(b, repo, iss, webhook=True),
        "label": render.label(b, repo, label),
        **_envelope(fake, b, repo, sender or iss.user),
    }


def comment_created(
    fake: GitHubStore, repo: Repo, iss: Issue, comment: Comment, *, sender: User | None = None, base: str | None = None
) -> dict[str, Any]:
    """``issue_comment`` / ``created``; the sender defaults to the comment's author (a ``Bot`` for comments an App
    posted), which is what a receiver's loop guard looks at."""
    b = _base(fake, base)
    return {
        "action": "created",
        "issue": render.issue(b, repo, iss, webhook=True),
        "comment": render.comment(b, repo, comment),
        **_envelope(fake, b, repo, sender or comment.user),
    }


def pull_opened(
    fake: GitHubStore, repo: Repo, iss: Issue, *, sender: User | None = None, base: str | None = None
) -> dict[str, Any]:
    """``pull_request`` / ``opened``; ``iss`` must be a pull request."""
    b = _base(fake, base)
    return {
        "action": "opened",
        "number": iss.number,
        "pull_request": render.pull(b, repo, iss, webhook=True),
        **_envelope(fake, b, repo, sender or iss.user),
    }


# -- by name ----------------------------------------------------------------------------------------------------


def _sender(fake: GitHubStore, login: str | None) -> User | None:
    if not login:
        return None
    found = fake.user_or_bot(login)
    if found is None:
        raise KeyError(f"no user {login!r} seeded in the fake GitHub to send this event")
    return found


def _issue(repo: Repo, number: int) -> Issue:
    iss = repo.issues.get(number)
    if iss is None:
        raise KeyError(f"no issue #{number} in {repo.full_name} to build a webhook payload from")
    return iss


def issues_opened_payload(
    fake: GitHubStore, repo: str, number: int, *, sender: str | None = None, base: str | None = None
) -> dict[str, Any]:
    """``issues`` / ``opened`` for issue ``number`` of ``repo`` (``owner/name``); sender defaults to the author."""
    with fake.lock:
        r = fake.repo(repo)
        return opened(fake, r, _issue(r, number), sender=_sender(fake, sender), base=base)


def issues_labeled_payload(
    fake: GitHubStore, repo: str, number: int, label: str, *, sender: str | None = None, base: str | None = None
) -> dict[str, Any]:
    """``issues`` / ``labeled``: ``label`` is the label just added (the gateway reads ``label.name``)."""
    with fake.lock:
        r = fake.repo(repo)
        iss = _issue(r, number)
        lab = r.labels.get(label.lower())
        if lab is None:
            raise KeyError(f"no label {label!r} in {r.full_name} for a labeled event")
        return labeled(fake, r, iss, lab, sender=_sender(fake, sender), base=base)


def issue_comment_created_payload(
    fake: GitHubStore, repo: str, comment_id: int, *, sender: str | None = None, base: str | None = None
) -> dict[str, Any]:
    """``issue_comment`` / ``created`` for a comment; the sender defaults to the comment's author."""
    with fake.lock:
        r = fake.repo(repo)
        c = fake.comments.get(comment_id)
        if c is None or c.repo is not r:
            raise KeyError(f"no comment {comment_id} in {r.full_name} to build a webhook payload from")
        return comment_created(fake, r, _issue(r, c.issue_number), c, sender=_sender(fake, sender), base=base)


def pull_request_opened_payload(
    fake: GitHubStore, repo: str, number: int, *, sender: str | None = None, base: str | None = None
) -> dict[str, Any]:
    """``pull_request`` / ``opened`` for pull request ``number`` (seeded with ``add_pull``)."""
    with fake.lock:
        r = fake.repo(repo)
        iss = r.issues.get(number)
        if iss is None or iss.pull is None:
            raise KeyError(f"no pull request #{number} in {r.full_name} to build a webhook payload from")
        return pull_opened(fake, r, iss, sender=_sender(fake, sender), base=base)
