"""The fake GitHub's own admin routes under ``/_fake/github/``: seeding, clock, hooks, deliveries.

For a fake in its own process or pod (the in-process Python methods of :class:`~fakes.github.store.GitHubStore` do the
same). Bodies are JSON objects; answers are JSON; a bad body is a 400 whose ``message`` names the field and the
route. Routes (all POST unless noted):

- ``users`` ``{"login", "token"?, "type"?, "scopes"?}``
- ``repos`` ``{"full_name", "private"?, "description"?, "default_branch"?, "collaborators"?, "files"? {path: text}}``
- ``labels`` ``{"repo", "name", "color"?, "description"?}``
- ``issues`` ``{"repo", "title", "body"?, "user"?, "labels"?, "created_at"?, "updated_at"?, "state"?, "type"?,
  "parent"?, "blocked_by"?, "number"?}``
- ``pulls`` ``{"repo", "title", "head"?, "base"?, "body"?, "user"?, "draft"?, "mergeable"?}``
- ``comments`` ``{"repo", "number", "body", "user"?, "created_at"?}`` (seeding: no webhook)
- ``apps`` ``{"slug"?, "name"?, "owner"?}`` -> ``{"id", "slug", "client_id", "private_key", "public_key"}``
- ``installations`` ``{"app_id", "account", "repositories"?}``
- ``hooks`` ``{"url", "secret"?, "events"?, "content_type"?, "repo"?}``
- ``clock`` ``{"advance": seconds}`` (finite; the fake's time stays in 1970..9999); ``rate_limit``
  ``{"remaining": int | null}``
- ``oauth`` ``{"login"}``: who approves OAuth device codes from now on; answers ``{"login", "code"}`` with a web-flow
  ``code`` for that user (:mod:`fakes.github.oauth`)
- ``refresh_tokens`` ``{"login", "refresh_token", "client_id"?}``: a web-flow refresh token for ``login`` (refreshing
  it needs ``client_secret``; without ``client_id`` any client may use it), as if a link had been made earlier
- ``webhooks`` ``{"event", "action", "repo", "number"?, "comment_id"?, "label"?, "sender"?}``: build a payload from
  state and deliver it to every subscribed hook (in the background; 202 with the hook count)
- GET ``deliveries``; POST ``deliveries/{guid}/redeliver`` (202); POST ``deliveries/drain`` ``{"timeout"?}``
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fakes.core import BadJson, FakeRequest, FakeResponse
from fakes.github import payloads, render
from fakes.github.state import describe
from fakes.github.store import GitHubStore
from fakes.github.wire import load_json

ADMIN_PREFIX = "/_fake/github/"
_PREFIX = ADMIN_PREFIX
MAX_DRAIN = 300.0  # seconds a drain may wait: bounded, like every wait in the harness


class AdminError(ValueError):
    """A bad admin request: becomes a 400 (or 404 for an unknown object) with this message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _field(body: dict[str, Any], name: str, kind: type | tuple[type, ...], route: str, default: Any = ...) -> Any:
    if name not in body or body[name] is None:
        if default is ...:
            raise AdminError(f"POST {_PREFIX}{route}: field {name!r} is required")
        return default
    if not isinstance(body[name], kind) or isinstance(body[name], bool) and kind in (int, float, (int, float)):
        raise AdminError(f"POST {_PREFIX}{route}: field {name!r} has the wrong type ({type(body[name]).__name__})")
    return body[name]


def handle_admin(fake: GitHubStore, request: FakeRequest) -> FakeResponse:
    """Answer one ``/_fake/github/...`` request."""
    route = request.path[len(_PREFIX) :].strip("/")
    try:
        if request.method.upper() == "GET" and route == "deliveries":
            return FakeResponse.json(200, [d.summary() for d in fake.deliveries.all()])
        if request.method.upper() == "GET" and route == "state":
            return FakeResponse.json(200, _state(fake))
        if request.method.upper() != "POST":
            raise AdminError(f"{request.method} {request.path}: the fake GitHub's admin API has no such route", 404)
        try:
            body = load_json(request) or {}
        except BadJson as exc:
            raise AdminError(f"POST {request.path}: body is not JSON ({exc.detail})") from None
        if not isinstance(body, dict):
            raise AdminError(f"POST {request.path}: body must be a JSON object")
        if route.startswith("deliveries/") and route.endswith("/redeliver"):
            return _redeliver(fake, route.split("/")[1])
        handler = _HANDLERS.get(route)
        if handler is None:
            raise AdminError(f"POST {request.path}: the fake GitHub's admin API has no such route", 404)
        status, answer = handler(fake, body, fake.base_url(request))
        return FakeResponse.json(status, answer)
    except AdminError as exc:
        return FakeResponse.json(exc.status, {"message": str(exc)})
    except (KeyError, ValueError) as exc:
        text = exc.args[0] if exc.args else str(exc)
        return FakeResponse.json(404 if isinstance(exc, KeyError) else 400, {"message": f"{request.path}: {text}"})


def _users(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    u = fake.add_user(
        _field(body, "login", str, "users"),
        token=_field(body, "token", str, "users", None),
        type=_field(body, "type", str, "users", "User"),
        scopes=_field(body, "scopes", list, "users", ["repo", "user"]),
    )
    return 201, render.user(base, u)


def _repos(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    repo = fake.add_repo(
        _field(body, "full_name", str, "repos"),
        private=_field(body, "private", bool, "repos", False),
        description=_field(body, "description", str, "repos", None),
        default_branch=_field(body, "default_branch", str, "repos", "main"),
        collaborators=_field(body, "collaborators", list, "repos", []),
        files=_field(body, "files", dict, "repos", {}),
    )
    return 201, render.repository(base, repo)


def _labels(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    repo = _field(body, "repo", str, "labels")
    lab = fake.add_label(
        repo,
        _field(body, "name", str, "labels"),
        color=_field(body, "color", str, "labels", "ededed"),
        description=_field(body, "description", str, "labels", None),
    )
    return 201, render.label(base, fake.repo(repo), lab)


def _issues(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    repo = _field(body, "repo", str, "issues")
    iss = fake.add_issue(
        repo,
        _field(body, "title", str, "issues"),
        body=_field(body, "body", str, "issues", None),
        user=_field(body, "user", str, "issues", None),
        labels=_field(body, "labels", list, "issues", []),
        created_at=_field(body, "created_at", (str, int, float), "issues", None),
        updated_at=_field(body, "updated_at", (str, int, float), "issues", None),
        state=_field(body, "state", str, "issues", "open"),
        type=_field(body, "type", str, "issues", None),
        parent=_field(body, "parent", int, "issues", None),
        blocked_by=_field(body, "blocked_by", list, "issues", []),
        number=_field(body, "number", int, "issues", None),
    )
    return 201, render.issue(base, fake.repo(repo), iss)


def _pulls(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    repo = _field(body, "repo", str, "pulls")
    iss = fake.add_pull(
        repo,
        _field(body, "title", str, "pulls"),
        head=_field(body, "head", str, "pulls", "feature"),
        base=_field(body, "base", str, "pulls", None),
        body=_field(body, "body", str, "pulls", None),
        user=_field(body, "user", str, "pulls", None),
        draft=_field(body, "draft", bool, "pulls", False),
        mergeable=_field(body, "mergeable", bool, "pulls", True),
    )
    return 201, render.pull(base, fake.repo(repo), iss)


def _comments(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    repo = _field(body, "repo", str, "comments")
    c = fake.add_comment(
        repo,
        _field(body, "number", int, "comments"),
        _field(body, "body", str, "comments"),
        user=_field(body, "user", str, "comments", None),
        created_at=_field(body, "created_at", (str, int, float), "comments", None),
    )
    return 201, render.comment(base, fake.repo(repo), c)


def _apps(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    app = fake.add_app(
        _field(body, "slug", str, "apps", "fake-app"),
        name=_field(body, "name", str, "apps", None),
        owner=_field(body, "owner", str, "apps", "octocat"),
    )
    return 201, {**render.app(base, app), "private_key": app.private_key_pem, "public_key": app.public_key_pem}


def _installations(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    inst = fake.add_installation(
        _field(body, "app_id", int, "installations"),
        _field(body, "account", str, "installations"),
        repositories=_field(body, "repositories", list, "installations", None),
    )
    return 201, render.installation(base, inst)


def _hooks(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    hook = fake.add_hook(
        _field(body, "url", str, "hooks"),
        secret=_field(body, "secret", str, "hooks", None),
        events=_field(body, "events", list, "hooks", None),
        content_type=_field(body, "content_type", str, "hooks", "json"),
        repo=_field(body, "repo", str, "hooks", None),
    )
    return 201, {"id": hook.id, "url": hook.url, "events": hook.events, "content_type": hook.content_type}


def _clock(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    fake.advance_clock(_field(body, "advance", (int, float), "clock"))
    return 200, {"now": fake.now()}


def _oauth(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    login = _field(body, "login", str, "oauth")
    if not login.strip():
        raise AdminError(f"POST {_PREFIX}oauth: field 'login' must not be empty")
    fake.oauth_login = login
    return 200, {"login": login, "code": fake.add_oauth_code(login)}


def _refresh_tokens(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    login = _field(body, "login", str, "refresh_tokens")
    value = _field(body, "refresh_token", str, "refresh_tokens")
    if not login.strip() or not value.strip():
        raise AdminError(f"POST {_PREFIX}refresh_tokens: fields 'login' and 'refresh_token' must not be empty")
    fake.add_refresh_token(login, value, client_id=_field(body, "client_id", str, "refresh_tokens", ""))
    return 201, {"login": login}


def _rate_limit(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    remaining = _field(body, "remaining", int, "rate_limit", None)
    fake.set_rate_limit_remaining(remaining)
    return 200, {"remaining": remaining}


_BUILDERS: dict[tuple[str, str], Callable[[GitHubStore, dict[str, Any], str], dict[str, Any]]] = {
    ("issues", "opened"): lambda f, b, base: payloads.issues_opened_payload(
        f, b["repo"], b["number"], sender=b.get("sender"), base=base
    ),
    ("issues", "labeled"): lambda f, b, base: payloads.issues_labeled_payload(
        f, b["repo"], b["number"], b["label"], sender=b.get("sender"), base=base
    ),
    ("issue_comment", "created"): lambda f, b, base: payloads.issue_comment_created_payload(
        f, b["repo"], b["comment_id"], sender=b.get("sender"), base=base
    ),
    ("pull_request", "opened"): lambda f, b, base: payloads.pull_request_opened_payload(
        f, b["repo"], b["number"], sender=b.get("sender"), base=base
    ),
}


def _webhooks(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    key = (_field(body, "event", str, "webhooks"), _field(body, "action", str, "webhooks"))
    build = _BUILDERS.get(key)
    if build is None:
        raise AdminError(
            f"POST {_PREFIX}webhooks: no payload builder for {key[0]}.{key[1]} "
            f"(known: {', '.join('.'.join(k) for k in _BUILDERS)})"
        )
    try:
        payload = build(fake, body, base)
    except KeyError as exc:
        raise AdminError(f"POST {_PREFIX}webhooks: {exc.args[0]}", 404) from None
    repo = fake.repo(body["repo"])
    before = len([h for h in fake.hooks if key[0] in h.events])
    fake.emit(key[0], payload, repo=repo)
    return 202, {"hooks": before}


def _drain(fake: GitHubStore, body: dict[str, Any], base: str) -> tuple[int, Any]:
    timeout = _field(body, "timeout", (int, float), "deliveries/drain", 12.0)
    if not 0 < timeout <= MAX_DRAIN:  # NaN fails too
        raise AdminError(
            f"POST {_PREFIX}deliveries/drain: field 'timeout' must be seconds in (0, {MAX_DRAIN:g}], "
            f"got {describe(timeout)}"
        )
    done = fake.drain_deliveries(float(timeout))
    return 200, {"drained": done}


def _redeliver(fake: GitHubStore, guid: str) -> FakeResponse:
    if fake.deliveries.by_id(guid) is None:
        raise AdminError(f"no recorded delivery {guid!r} to redeliver", 404)
    fake.redeliver_later(guid)
    return FakeResponse.json(202, {"id": guid})


def _state(fake: GitHubStore) -> dict[str, Any]:
    with fake.lock:
        return {
            "repos": sorted(r.full_name for r in fake.repos.values()),
            "issues": {r.full_name: sorted(r.issues) for r in fake.repos.values()},
            "comments": len(fake.comments),
            "apps": sorted(fake.apps),
            "installations": sorted(fake.installations),
            "hooks": [h.url for h in fake.hooks],
            "now": fake.now(),
        }


_HANDLERS: dict[str, Callable[[GitHubStore, dict[str, Any], str], tuple[int, Any]]] = {
    "users": _users,
    "repos": _repos,
    "labels": _labels,
    "issues": _issues,
    "pulls": _pulls,
    "comments": _comments,
    "apps": _apps,
    "installations": _installations,
    "hooks": _hooks,
    "clock": _clock,
    "rate_limit": _rate_limit,
    "oauth": _oauth,
    "refresh_tokens": _refresh_tokens,
    "webhooks": _webhooks,
    "deliveries/drain": _drain,
}
