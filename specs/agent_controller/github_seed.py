"""Seeding the fake GitHub with the world the stack's specs use, through its port-forward (idempotent).

What the stack expects GitHub to hold (specs/cluster/README.md §5): the repositories ``e2e-org/e2e-repo`` and
``e2e-org/e2e-private`` (private: 404 to outsiders), the senders ``e2e-user``, ``e2e-other-user``, the bot
``e2e-bot`` whose token the gateway uses (read from the cluster, passed in as a
:class:`~specs.agent_controller.cluster_secrets.SecretValue`), the trigger label, and per spec an issue whose number
never repeats
(:func:`harness.unique_issue_number`), opened with the trigger label. Admin routes under ``/_fake/github/``.
"""

from __future__ import annotations

from typing import Any

from harness.fetch import Forward, fetch_through_sync
from specs.agent_controller.cluster_secrets import SecretValue
from specs.agent_controller.errors import SeedFailed as SeedFailed

REPO = "e2e-org/e2e-repo"
PRIVATE_REPO = "e2e-org/e2e-private"
USERS = ("e2e-user", "e2e-other-user")
BOT = "e2e-bot"
USER_TOKEN = "gho_e2e-seeded"
"""The token seeded for ``e2e-user`` (a fixed fake value: specs re-label issues as that user)."""
TRIGGER_LABEL = "ai-triage"


def _admin(target: Forward | str, route: str, body: dict[str, Any] | None = None, *, timeout: float) -> Any:
    method = "POST" if body is not None else "GET"
    answer = fetch_through_sync(target, method, f"/_fake/github/{route}", json=body, timeout=timeout)
    if answer.status_code >= 300:
        raise SeedFailed(f"{method} /_fake/github/{route} answered {answer.status_code}: {answer.text[:300]}")
    return answer.json()


def seed_world(target: Forward | str, *, bot_token: SecretValue, timeout: float = 20.0) -> None:
    """Users, repositories and the trigger label, creating only what is missing (safe to call before every spec)."""
    _admin(target, "users", {"login": BOT, "token": bot_token.reveal()}, timeout=timeout)
    _admin(target, "users", {"login": USERS[0], "token": USER_TOKEN}, timeout=timeout)
    _admin(target, "users", {"login": USERS[1]}, timeout=timeout)
    existing = set(_admin(target, "state", timeout=timeout).get("repos") or [])
    if REPO not in existing:
        _admin(target, "repos", {"full_name": REPO, "collaborators": [BOT, *USERS]}, timeout=timeout)
    if PRIVATE_REPO not in existing:
        _admin(target, "repos", {"full_name": PRIVATE_REPO, "private": True, "collaborators": [BOT]}, timeout=timeout)
    _admin(target, "labels", {"repo": REPO, "name": TRIGGER_LABEL}, timeout=timeout)


def register_refresh_token(target: Forward | str, login: str, refresh_token: str, *, timeout: float = 20.0) -> None:
    """Make the fake GitHub honour ``refresh_token`` for ``login`` (a web-flow one: refreshing needs the App's
    ``client_secret``), as if the link holding it had been made earlier. Re-registering replaces it (a refresh
    rotates the token, so register it again before each spec that refreshes)."""
    _admin(target, "refresh_tokens", {"login": login, "refresh_token": refresh_token}, timeout=timeout)


def open_issue(
    target: Forward | str,
    number: int,
    *,
    title: str,
    body: str | None = None,
    labels: tuple[str, ...] = (TRIGGER_LABEL,),
    user: str = USERS[0],
    repo: str = REPO,
    timeout: float = 20.0,
) -> dict[str, Any]:
    """Open issue ``number`` (never reused) with ``labels``; returns the fake's issue object."""
    issue: dict[str, Any] = _admin(
        target,
        "issues",
        {"repo": repo, "number": number, "title": title, "body": body, "user": user, "labels": list(labels)},
        timeout=timeout,
    )
    return issue


def add_label(
    target: Forward | str, number: int, label: str = TRIGGER_LABEL, *, repo: str = REPO, timeout: float = 20.0
) -> None:
    """Put ``label`` back on an issue as ``e2e-user`` would (REST ``POST .../labels``), before a re-trigger."""
    answer = fetch_through_sync(
        target,
        "POST",
        f"/repos/{repo}/issues/{number}/labels",
        json={"labels": [label]},
        headers={"authorization": f"Bearer {USER_TOKEN}", "accept": "application/vnd.github+json"},
        timeout=timeout,
    )
    if answer.status_code != 200:
        raise SeedFailed(f"labelling {repo}#{number} with {label} answered {answer.status_code}: {answer.text[:300]}")


def issue_labels(target: Forward | str, number: int, *, repo: str = REPO, timeout: float = 20.0) -> list[str]:
    """The issue's current label names (REST ``GET .../issues/<n>`` as ``e2e-user``)."""
    answer = fetch_through_sync(
        target,
        "GET",
        f"/repos/{repo}/issues/{number}",
        headers={"authorization": f"Bearer {USER_TOKEN}"},
        timeout=timeout,
    )
    if answer.status_code != 200:
        raise SeedFailed(f"GET {repo}#{number} answered {answer.status_code}: {answer.text[:300]}")
    return [str(label["name"]) for label in answer.json().get("labels") or []]
