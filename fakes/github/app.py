"""The fake GitHub REST API as a :class:`fakes.core.FakeApp`: state plus ``handle()``, framework-free (issue #5).

Served (fakes-api.md §1, §3.1): get repository, list issues, get issue, list/create/get/update issue comments, add and
remove issue labels, reactions on issues and comments, get pull request, repository contents (file or directory),
an App's installation access token and a repository's installation, the authenticated user, a collaborator's
permission, and the OAuth device / code / refresh endpoints (:mod:`fakes.github.oauth`). Everything else answers 501
naming the method and path, and the journal records it, so "no unstubbed endpoint was called" cannot pass vacuously.

Seeding goes through :class:`FakeGitHub`'s methods in-process, or the admin API under ``/_fake/github/`` (see
:mod:`fakes.github.seed_api`) when the fake runs in its own process or pod.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import secrets
import threading
from http import HTTPStatus
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import unquote

from fakes.core import BadJson, FakeRequest, FakeResponse
from fakes.github import errors
from fakes.github.auth import (
    INSTALLATION_TOKEN_TTL,
    UNDECODABLE,
    generate_key_pair,
    new_installation_token,
    split_authorization,
    verify_app_jwt,
)
from fakes.github.state import (
    App,
    Comment,
    Hook,
    Installation,
    Issue,
    Label,
    OAuthState,
    PullInfo,
    Repo,
    Token,
    User,
    checked_epoch,
    describe,
    parse_iso,
)
from fakes.github.webhooks import (
    DELIVERY_TIMEOUT,
    Delivery,
    DeliveryLog,
    Dispatcher,
    check_timeout,
    redeliver,
    send_webhook,
)

_APP_IDS = itertools.count(int(time.time()) % 1_000_000 * 10 + 100_000)
HEALTH_PATH = "/healthz"  # not a GitHub route; outside /_fake/ so the machinery treats it as the health route
ADMIN_PREFIX = "/_fake/github/"
OAUTH_PREFIX = "/login/"  # fakes.github.oauth's routes
ANON_LIMIT, TOKEN_LIMIT = 60, 5000  # GitHub's primary hourly limits (unauthenticated, token)

_DOC = "https://docs.github.com/rest"
_DOCS = {
    "repo": f"{_DOC}/repos/repos#get-a-repository",
    "issues": f"{_DOC}/issues/issues#list-repository-issues",
    "issue": f"{_DOC}/issues/issues#get-an-issue",
    "comments": f"{_DOC}/issues/comments#list-issue-comments",
    "create_comment": f"{_DOC}/issues/comments#create-an-issue-comment",
    "comment": f"{_DOC}/issues/comments#get-an-issue-comment",
    "update_comment": f"{_DOC}/issues/comments#update-an-issue-comment",
    "add_labels": f"{_DOC}/issues/labels#add-labels-to-an-issue",
    "remove_label": f"{_DOC}/issues/labels#remove-a-label-from-an-issue",
    "issue_reaction": f"{_DOC}/reactions/reactions#create-reaction-for-an-issue",
    "comment_reaction": f"{_DOC}/reactions/reactions#create-reaction-for-an-issue-comment",
    "pull": f"{_DOC}/pulls/pulls#get-a-pull-request",
    "contents": f"{_DOC}/repos/contents#get-repository-content",
    "access_token": f"{_DOC}/apps/apps#create-an-installation-access-token-for-an-app",
    "repo_installation": f"{_DOC}/apps/apps#get-a-repository-installation-for-the-authenticated-app",
    "user": f"{_DOC}/users/users#get-the-authenticated-user",
    "permission": f"{_DOC}/collaborators/collaborators#get-repository-permissions-for-a-user",
}


@dataclass(frozen=True)
class Quota:
    """One request's place in its primary rate limit; ``reset`` is epoch seconds."""

    limit: int
    used: int
    remaining: int
    reset: int
    exhausted: bool

    def headers(self) -> list[tuple[str, str]]:
        return [("x-ratelimit-limit", str(self.limit)), ("x-ratelimit-remaining", str(self.remaining)),
                ("x-ratelimit-reset", str(self.reset)), ("x-ratelimit-used", str(self.used)),
                ("x-ratelimit-resource", "core")]


@dataclass
class Call:
    """One API request after authentication: the request, its base URL and who sent it."""

    request: FakeRequest
    base: str
    token: Token | None
    app: App | None  # set on App-JWT routes
    params: dict[str, str]

    @property
    def actor(self) -> User | None:
        return self.token.actor if self.token is not None else None


Handler = Callable[["FakeGitHub", Call], FakeResponse]
_ROUTES: list[tuple[str, re.Pattern[str], Handler, str]] = []  # method, pattern over the raw path, handler, auth kind


def route(method: str, pattern: str, auth: str = "token") -> Callable[[Handler], Handler]:
    """Register a handler; ``auth`` is "token" (optional token, checked when sent), "jwt" (an App JWT required) or
    "none" (OAuth endpoints: no API credential, no API rate limit)."""
    # {name+} spans segments (a contents path); {number} and {..._id} are integers, so /issues/comments is no issue.
    # A negative one matches too and finds nothing: GitHub answers 404 for /issues/-1, not "unserved".
    regex_text = re.sub(r"\{(\w+)\+\}", r"(?P<\1>.+)", pattern)
    regex_text = re.sub(r"\{(number|\w+_id)\}", r"(?P<\1>-?[0-9]+)", regex_text)
    regex = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", regex_text) + "$")

    def register(handler: Handler) -> Handler:
        _ROUTES.append((method, regex, handler, auth))
        return handler

    return register


class FakeGitHub:
    """The fake GitHub: thread-safe state, GitHub's wire behaviour in :meth:`handle`, webhooks for API-made changes.

    ``public_base_url`` (e.g. the in-cluster Service URL) is where URL fields point; when None they follow the request's
    ``Host``. ``token_ttl`` is the installation-token lifetime in seconds (GitHub: 3600); a short one lets a spec see a
    client refresh. ``clock`` returns epoch seconds; :meth:`advance_clock` moves the fake's time forward.
    ``oauth_login`` is the user who approves OAuth device codes (at once) in :mod:`fakes.github.oauth`.
    """

    name = "github"
    unrecorded_paths = frozenset({HEALTH_PATH})

    def __init__(self, *, public_base_url: str | None = None, token_ttl: float = INSTALLATION_TOKEN_TTL,
                 clock: Callable[[], float] = time.time, delivery_timeout: float = DELIVERY_TIMEOUT,
                 oauth_login: str = "octocat") -> None:
        self.public_base_url = public_base_url.rstrip("/") if public_base_url else None
        self.token_ttl = token_ttl
        self.delivery_timeout = check_timeout(delivery_timeout)
        self._clock = clock
        self.oauth_login = oauth_login
        self.lock = threading.RLock()
        self.deliveries = DeliveryLog()
        self._dispatcher = Dispatcher()
        self._init_state()

    def _init_state(self) -> None:
        self._offset = 0.0
        self._next_id = 1000
        self.users: dict[str, User] = {}
        self.repos: dict[str, Repo] = {}
        self.comments: dict[int, Comment] = {}
        self.apps: dict[int, App] = {}
        self.installations: dict[int, Installation] = {}
        self.tokens: dict[str, Token] = {}
        self.hooks: list[Hook] = []
        self.oauth = OAuthState()
        self._used: dict[str, int] = {}
        self._window_start = self.now()
        self._remaining_override: int | None = None
        self._request_seq = 0

    # -- clock and ids --------------------------------------------------------------------------------------------

    def now(self) -> float:
        """The fake's time in epoch seconds (real time plus any :meth:`advance_clock`)."""
        return self._clock() + self._offset

    def advance_clock(self, seconds: float) -> None:
        """Move the fake's clock by ``seconds`` (expires tokens and JWTs without sleeping; negative moves it back).

        Raises ``ValueError`` naming the input, and changes nothing, when ``seconds`` is not a finite number or would
        put the fake's time before 1970 or past year 9999 (trial finding 10: such a clock broke every later request).
        """
        try:
            step = float(seconds)
        except (TypeError, ValueError, OverflowError):
            step = math.nan
        with self.lock:
            if isinstance(seconds, bool) or not math.isfinite(step):
                raise ValueError(f"clock advance must be a finite number of seconds, got {describe(seconds)}")
            checked_epoch(self.now() + step, f"clock advance {describe(seconds)} s: the fake's new time")
            self._offset += step

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    # -- seeding --------------------------------------------------------------------------------------------------

    def add_user(self, login: str, *, token: str | None = None, type: str = "User") -> User:
        """A user (or organization) account; ``token`` makes it a credential the fake accepts (no expiry)."""
        with self.lock:
            found = self.users.get(login.lower())
            if found is None:
                found = self.users[login.lower()] = User(login=login, id=self.new_id(), type=type,
                                                         created_at=self.now())
            if token:
                self.tokens[token] = Token(value=token, expires_at=None, user=found)
            return found

    def add_repo(self, full_name: str, *, private: bool = False, description: str | None = None,
                 default_branch: str = "main", collaborators: tuple[str, ...] | list[str] = (),
                 files: dict[str, str | bytes] | None = None) -> Repo:
        """A repository ``owner/name``; a private one answers 404 to anyone but its owner, collaborators and covering
        installations. ``files`` (path -> content) is the default branch. Raises ``ValueError`` if it exists."""
        owner_login, name = _split_full_name(full_name)
        with self.lock:
            if full_name.lower() in self.repos:
                raise ValueError(f"repository {full_name} already exists in the fake")
            owner = self.add_user(owner_login)
            repo = Repo(id=self.new_id(), owner=owner, name=name, created_at=self.now(), private=private,
                        description=description, default_branch=default_branch, collaborators=set(collaborators))
            for path, content in (files or {}).items():
                repo.files[path.strip("/")] = content.encode() if isinstance(content, str) else content
            self.repos[full_name.lower()] = repo
            return repo

    def repo(self, full_name: str) -> Repo:
        """The seeded repository; raises ``KeyError`` naming it when absent."""
        with self.lock:
            try:
                return self.repos[full_name.lower()]
            except KeyError:
                raise KeyError(f"no repository {full_name!r} seeded in the fake GitHub") from None

    def add_label(self, full_name: str, name: str, *, color: str = "ededed", description: str | None = None) -> Label:
        """A repository label (names match case-insensitively, as on GitHub)."""
        with self.lock:
            repo = self.repo(full_name)
            existing = repo.labels.get(name.lower())
            if existing is not None:
                return existing
            lab = repo.labels[name.lower()] = Label(id=self.new_id(), name=name, color=color, description=description)
            return lab

    def add_issue(self, full_name: str, title: str, *, body: str | None = None, user: str | None = None,
                  labels: tuple[str, ...] | list[str] = (), created_at: float | str | None = None,
                  updated_at: float | str | None = None, state: str = "open", number: int | None = None) -> Issue:
        """An issue with the next number (or ``number``, which must be unused and positive: specs that never reuse
        a number pick their own); times are epoch seconds or ISO strings (default: now). ``ValueError`` for a
        taken or non-positive ``number``."""
        with self.lock:
            repo = self.repo(full_name)
            if number is not None and (number < 1 or number in repo.issues):
                raise ValueError(f"issue number {number} is {'taken' if number >= 1 else 'not positive'} in {full_name}")
            author = self.add_user(user or repo.owner.login)
            created = _when(created_at, self.now(), "created_at")
            iss = Issue(id=self.new_id(), number=number or repo.next_number, title=title, body=body, user=author,
                        created_at=created, updated_at=_when(updated_at, created, "updated_at"), state=state,
                        closed_at=created if state == "closed" else None)
            iss.labels = [self.add_label(full_name, name) for name in labels]
            repo.issues[iss.number] = iss
            repo.next_number = max(repo.next_number, iss.number + 1)
            return iss

    def add_pull(self, full_name: str, title: str, *, head: str = "feature", base: str | None = None,
                 body: str | None = None, user: str | None = None) -> Issue:
        """A pull request (an issue with head and base branches, sharing the issue number sequence)."""
        import hashlib

        with self.lock:
            iss = self.add_issue(full_name, title, body=body, user=user)
            repo = self.repo(full_name)
            sha = lambda ref: hashlib.sha1(f"{full_name}:{ref}:{iss.number}".encode()).hexdigest()  # noqa: E731
            iss.pull = PullInfo(head_ref=head, base_ref=base or repo.default_branch, head_sha=sha(head),
                                base_sha=sha(base or repo.default_branch))
            iss.pull_id = self.new_id()
            return iss

    def add_comment(self, full_name: str, number: int, body: str, *, user: str | None = None,
                    created_at: float | str | None = None) -> Comment:
        """Seed a comment (no webhook: seeding is not an API call)."""
        with self.lock:
            repo = self.repo(full_name)
            iss = self._issue_or_raise(repo, number)
            author = self.add_user(user or repo.owner.login)
            return self.create_comment(repo, iss, body, author, None, _when(created_at, self.now(), "created_at"))

    def add_app(self, slug: str = "fake-app", *, name: str | None = None, owner: str = "octocat") -> App:
        """A GitHub App with a freshly generated RSA key pair (``app.private_key_pem`` goes to the app under test)."""
        private, public = generate_key_pair()
        with self.lock:
            # Process-wide unique, like real App ids: githubkit caches JWTs per App id across clients for 8 minutes,
            # so two fakes reusing an id would see a stale JWT signed with the other fake's key.
            app_id = next(_APP_IDS)
            app = App(id=app_id, slug=slug, name=name or slug, client_id=f"Iv23li{app_id:014d}",
                      owner=self.add_user(owner), public_key_pem=public, private_key_pem=private, created_at=self.now())
            self.apps[app.id] = app
            return app

    def add_installation(self, app_id: int, account: str, *, repositories: list[str] | None = None) -> Installation:
        """Install an App on an account (all its repositories, or the listed full names)."""
        with self.lock:
            if app_id not in self.apps:
                raise KeyError(f"no App {app_id} seeded in the fake GitHub")
            inst = Installation(id=self.new_id(), app=self.apps[app_id], account=self.add_user(account),
                                created_at=self.now(), repositories=repositories)
            self.installations[inst.id] = inst
            return inst

    def add_oauth_code(self, login: str) -> str:
        """A web-flow ``code`` as if ``login`` approved the app in a browser; exchange it at
        ``POST /login/oauth/access_token`` within 10 minutes of fake time (GitHub's code lifetime)."""
        from fakes.github.oauth import CODE_TTL

        with self.lock:
            self.add_user(login)
            code = secrets.token_hex(10)
            self.oauth.codes[code] = (login, self.now() + CODE_TTL)
            return code

    def add_hook(self, url: str, *, secret: str | None, events: list[str] | None = None, content_type: str = "json",
                 repo: str | None = None) -> Hook:
        """Subscribe ``url`` to deliveries caused by API calls (``issue_comment`` created, ``issues`` labeled)."""
        if content_type not in ("json", "form"):
            raise ValueError(f"hook content_type must be 'json' or 'form', not {content_type!r}")
        with self.lock:
            hook = Hook(id=self.new_id(), url=url, secret=secret, events=list(events or ["issues", "issue_comment"]),
                        content_type=content_type, repo=repo)
            self.hooks.append(hook)
            return hook

    def set_rate_limit_remaining(self, remaining: int | None) -> None:
        """Force ``x-ratelimit-remaining`` (0 makes every API call a primary rate-limit 403); None restores counting."""
        with self.lock:
            self._remaining_override = remaining

    # -- webhooks -------------------------------------------------------------------------------------------------

    def base_url(self, request: FakeRequest | None = None) -> str:
        if self.public_base_url:
            return self.public_base_url
        return (request.base_url if request is not None else "http://fake-github").rstrip("/")

    def emit(self, event: str, payload: dict[str, Any], *, repo: Repo) -> None:
        """Queue a delivery of ``payload`` to every hook subscribed to ``event`` on ``repo`` (sent in the background)."""
        with self.lock:
            hooks = [h for h in self.hooks if event in h.events and (h.repo is None or h.repo.lower() ==
                                                                     repo.full_name.lower())]
        for hook in hooks:
            self._dispatcher.submit(lambda hook=hook: self._deliver(hook, event, payload))

    def _deliver(self, hook: Hook, event: str, payload: dict[str, Any]) -> Delivery:
        return send_webhook(hook.url, event, payload, secret=hook.secret, hook_id=hook.id,
                            content_type=hook.content_type, timeout=self.delivery_timeout, log=self.deliveries)

    def redeliver_later(self, delivery_id: str) -> None:
        """Queue a manual redelivery of a recorded delivery (same GUID, same bytes); ``KeyError`` if unknown."""
        if self.deliveries.by_id(delivery_id) is None:
            raise KeyError(f"no recorded delivery {delivery_id!r} to redeliver")
        self._dispatcher.submit(lambda: redeliver(delivery_id, timeout=self.delivery_timeout, log=self.deliveries))

    def drain_deliveries(self, timeout: float = DELIVERY_TIMEOUT + 2.0) -> bool:
        """Wait up to ``timeout`` seconds for queued deliveries to be attempted; True when none is left."""
        return self._dispatcher.drain(timeout)

    # -- FakeApp --------------------------------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget all state, tokens, hooks and deliveries (queued deliveries are dropped)."""
        self._dispatcher.clear()
        with self.lock:
            self._init_state()
        self.deliveries.clear()

    def close(self, timeout: float = DELIVERY_TIMEOUT + 2.0) -> None:
        """Stop the background webhook worker (bounded by ``timeout`` seconds)."""
        self._dispatcher.close(timeout)

    def admin(self, request: FakeRequest) -> FakeResponse | None:
        """The machinery's admin hook: ``/_fake/github/...`` seeding routes (:mod:`fakes.github.seed_api`)."""
        if not request.path.startswith(ADMIN_PREFIX):
            return None
        from fakes.github.seed_api import handle_admin

        return handle_admin(self, request)

    def error_response(self, status: int) -> FakeResponse:
        """What an injected ``status`` fault sends: GitHub's error body for that status (``status`` as a string)."""
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Error"
        return errors.error(status, reason)

    def handle(self, request: FakeRequest) -> FakeResponse:
        if request.path == HEALTH_PATH:
            return FakeResponse.json(200, {"status": "ok"})
        if request.path.startswith(ADMIN_PREFIX):  # reached only when a caller bypasses the machinery
            return self.admin(request) or errors.not_served(request.method, request.path)
        with self.lock:
            # OAuth endpoints live on github.com on GitHub: outside the REST API's quota and its headers.
            quota = None if request.path.startswith(OAUTH_PREFIX) else self._spend(request)
            response = self._dispatch(request, quota)
            response.headers.extend(quota.headers() if quota is not None else [])
            response.headers.append(("x-github-media-type", "github.v3; format=json"))
            self._request_seq += 1
            response.headers.append(("x-github-request-id", f"FAKE:{self._request_seq:08X}"))
            return response

    def _dispatch(self, request: FakeRequest, quota: Quota | None) -> FakeResponse:
        path = request.raw_path or request.path
        path = path.split("?", 1)[0]
        for method, regex, handler, auth in _ROUTES:
            match = regex.match(path)
            if match is None or method != request.method.upper():
                continue
            params = {k: unquote(v) for k, v in match.groupdict().items()}
            call = Call(request=request, base=self.base_url(request), token=None, app=None, params=params)
            refusal = self._authenticate(call, auth)
            if refusal is not None:
                return refusal
            if quota is not None and quota.exhausted:
                return errors.error(403, f"API rate limit exceeded for {self._identity(call)}.",
                                    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api")
            return handler(self, call)
        return errors.not_served(request.method.upper(), request.path)

    def _authenticate(self, call: Call, auth: str) -> FakeResponse | None:
        if auth == "none":
            return None
        credential = split_authorization(call.request.headers.get("authorization"))
        if auth == "jwt":
            verdict = verify_app_jwt(credential or "", list(self.apps.values()), self.now())
            if verdict.app is None:
                return errors.error(401, verdict.message or UNDECODABLE)
            call.app = verdict.app
            return None
        if credential is None:
            return None
        token = self.tokens.get(credential)
        if token is None or (token.expires_at is not None and token.expires_at <= self.now()):
            return errors.bad_credentials()
        call.token = token
        return None

    def _identity(self, call: Call) -> str:
        """Who exceeded the limit, in GitHub's words ("user ID 1", "installation ID 2"); never the token itself.
        GitHub names an anonymous caller by IP address, which the fake does not see: it says "anonymous caller"."""
        if call.app is not None:
            return f"app ID {call.app.id}"
        if call.token is None:
            return "anonymous caller"
        if call.token.installation is not None:
            return f"installation ID {call.token.installation.id}"
        return f"user ID {call.token.actor.id}"

    def _spend(self, request: FakeRequest) -> Quota:
        """Count this request against its credential's hourly quota (§3.4: 60 anonymous, 5000 with a token); the
        window restarts on the fake's clock. Past the limit, API calls get GitHub's 403 with ``remaining`` 0."""
        now = self.now()
        if now - self._window_start >= 3600:
            self._window_start, self._used = now, {}
        key = split_authorization(request.headers.get("authorization")) or "anonymous"
        limit = ANON_LIMIT if key == "anonymous" else TOKEN_LIMIT
        used = self._used[key] = self._used.get(key, 0) + 1
        remaining = max(0, limit - used) if self._remaining_override is None else self._remaining_override
        exhausted = used > limit if self._remaining_override is None else self._remaining_override <= 0
        return Quota(limit, used, remaining, int(self._window_start + 3600), exhausted)

    # -- shared lookups -------------------------------------------------------------------------------------------

    def can_see(self, token: Token | None, repo: Repo) -> bool:
        """Whether the caller may see ``repo``: public, or the owner, a collaborator or a covering installation."""
        if not repo.private:
            return True
        if token is None:
            return False
        if token.installation is not None:
            return token.installation.covers(repo)
        login = token.actor.login.lower()
        return login == repo.owner.login.lower() or login in {c.lower() for c in repo.collaborators}

    def visible_repo(self, call: Call) -> Repo | None:
        repo = self.repos.get(f"{call.params['owner']}/{call.params['repo']}".lower())
        if repo is None or not self.can_see(call.token, repo):
            return None
        return repo

    def _issue_or_raise(self, repo: Repo, number: int) -> Issue:
        try:
            return repo.issues[number]
        except KeyError:
            raise KeyError(f"no issue #{number} in {repo.full_name}") from None

    def create_comment(self, repo: Repo, iss: Issue, body: str, author: User, via: App | None,
                        when: float) -> Comment:
        c = Comment(id=self.new_id(), repo=repo, issue_number=iss.number, body=body, user=author, created_at=when,
                    updated_at=when, via_app=via)
        self.comments[c.id] = c
        iss.comment_ids.append(c.id)
        iss.updated_at = max(iss.updated_at, when)
        return c

    def issue_token(self, inst: Installation) -> Token:
        token = Token(value=new_installation_token(), expires_at=self.now() + self.token_ttl, installation=inst)
        self.tokens[token.value] = token
        return token


def _split_full_name(full_name: str) -> tuple[str, str]:
    owner, sep, name = full_name.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise ValueError(f"repository must be 'owner/name', got {full_name!r}")
    return owner, name


def _when(value: float | str | None, default: float, what: str) -> float:
    """A seeded timestamp: ISO text or epoch seconds, checked to be in range (``ValueError`` naming ``what``)."""
    if value is None:
        return default
    return checked_epoch(parse_iso(value) if isinstance(value, str) else value, what)


def load_json(request: FakeRequest) -> Any:
    """The request body as strict JSON (None when empty); raises :class:`BadJson` for anything GitHub would not parse.

    Besides what ``FakeRequest.json`` refuses, this refuses by itself what Python's parser lets through or crashes on:
    ``NaN``/``Infinity`` and numbers that overflow a double (``1e400``), over-long integers (``ValueError``) and deep
    nesting (``RecursionError``), so no body can reach a handler and come back as a 500 or as invalid JSON.
    """
    try:
        value = request.json()
        json.dumps(value, allow_nan=False)  # ValueError on NaN/Infinity anywhere inside
    except BadJson:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadJson(f"{type(exc).__name__}: {str(exc)[:200]}") from None
    return value


def parse_body(request: FakeRequest, doc: str) -> tuple[Any, FakeResponse | None]:
    """The JSON body, or GitHub's 400 ``Problems parsing JSON`` response for every body :func:`load_json` refuses."""
    try:
        return load_json(request), None
    except BadJson:
        return None, errors.problems_parsing_json(doc)


# Route handlers live in fakes.github.routes; importing it registers them.
from fakes.github import oauth as _oauth  # noqa: E402,F401
from fakes.github import routes as _routes  # noqa: E402,F401
