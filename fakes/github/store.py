"""The fake GitHub's world: thread-safe state, its clock, seeding, the rate limiter and webhook deliveries.

:class:`GitHubStore` is everything the handlers, the payload builders and the admin API work on; the app
(:class:`fakes.github.app.FakeGitHub`) adds the wire on top. Seed in-process through its methods, or through the admin
API under ``/_fake/github/`` (:mod:`fakes.github.seed_api`) when the fake runs in its own process or pod.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from fakes.core import FakeRequest
from fakes.github.auth import INSTALLATION_TOKEN_TTL, generate_key_pair, new_installation_token
from fakes.github.ratelimit import RateLimiter
from fakes.github.state import (
    OAUTH_CODE_TTL,
    App,
    Comment,
    Hook,
    Installation,
    Issue,
    IssueType,
    Label,
    OAuthState,
    PullInfo,
    RefreshGrant,
    Repo,
    Token,
    User,
    checked_epoch,
    describe,
    parse_iso,
)
from fakes.github.webhooks import DELIVERY_TIMEOUT, DeliveryLog, Dispatcher, check_timeout, redeliver, send_webhook

_APP_IDS = itertools.count(int(time.time()) % 1_000_000 * 10 + 100_000)


class GitHubStore:
    """The fake's state under one re-entrant ``lock``, with the seeding methods and shared lookups.

    ``public_base_url`` (e.g. the in-cluster Service URL) is where URL fields point; when None they follow the request's
    ``Host``. ``token_ttl`` is the installation-token lifetime in seconds (GitHub: 3600); a short one lets a spec see a
    client refresh. ``clock`` returns epoch seconds; :meth:`advance_clock` moves the fake's time forward.
    ``oauth_login`` is the user who approves OAuth device codes (at once) in :mod:`fakes.github.oauth`.
    ``delivery_timeout`` is the seconds a delivery to a hook may take (GitHub: 10).
    """

    def __init__(
        self,
        *,
        public_base_url: str | None = None,
        token_ttl: float = INSTALLATION_TOKEN_TTL,
        clock: Callable[[], float] = time.time,
        delivery_timeout: float = DELIVERY_TIMEOUT,
        oauth_login: str = "octocat",
    ) -> None:
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
        self.issue_types: dict[tuple[str, str], IssueType] = {}
        self.rate_limiter = RateLimiter(self.now())

    # -- clock and ids --------------------------------------------------------------------------------------------

    def now(self) -> float:
        """The fake's time in epoch seconds (real time plus any :meth:`advance_clock`)."""
        return self._clock() + self._offset

    def advance_clock(self, seconds: float) -> None:
        """Move the fake's clock by ``seconds`` (expires tokens and JWTs without sleeping; negative moves it back).

        Raises ``ValueError`` naming the input, and changes nothing, when ``seconds`` is not a finite number or would
        put the fake's time before 1970 or past year 9999 (such a clock would break every later request).
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

    def add_user(
        self,
        login: str,
        *,
        token: str | None = None,
        type: str = "User",
        scopes: tuple[str, ...] | list[str] = ("repo", "user"),
    ) -> User:
        """A user (or organization) account; ``token`` makes it a credential the fake accepts (no expiry), an OAuth
        token with ``scopes`` (``X-OAuth-Scopes``; ``GET /user`` shows private fields only with ``user``)."""
        with self.lock:
            found = self.users.get(login.lower())
            if found is None:
                found = self.users[login.lower()] = User(
                    login=login, id=self.new_id(), type=type, created_at=self.now()
                )
            if token:
                self.tokens[token] = Token(value=token, expires_at=None, user=found, scopes=tuple(scopes))
            return found

    def add_repo(
        self,
        full_name: str,
        *,
        private: bool = False,
        description: str | None = None,
        default_branch: str = "main",
        collaborators: tuple[str, ...] | list[str] = (),
        files: dict[str, str | bytes] | None = None,
    ) -> Repo:
        """A repository ``owner/name``; a private one answers 404 to anyone but its owner, collaborators and covering
        installations. ``files`` (path -> content) is the default branch. Raises ``ValueError`` if it exists."""
        owner_login, name = _split_full_name(full_name)
        with self.lock:
            if full_name.lower() in self.repos:
                raise ValueError(f"repository {full_name} already exists in the fake")
            owner = self.add_user(owner_login)
            repo = Repo(
                id=self.new_id(),
                owner=owner,
                name=name,
                created_at=self.now(),
                private=private,
                description=description,
                default_branch=default_branch,
                collaborators=set(collaborators),
            )
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
            return self.label_in(self.repo(full_name), name, color=color, description=description)

    def label_in(self, repo: Repo, name: str, *, color: str = "ededed", description: str | None = None) -> Label:
        """The label ``name`` of ``repo``, created when it does not exist yet (as GitHub does when labelling)."""
        existing = repo.labels.get(name.lower())
        if existing is not None:
            return existing
        lab = repo.labels[name.lower()] = Label(id=self.new_id(), name=name, color=color, description=description)
        return lab

    def add_issue(
        self,
        full_name: str,
        title: str,
        *,
        body: str | None = None,
        user: str | None = None,
        labels: tuple[str, ...] | list[str] = (),
        created_at: float | str | None = None,
        updated_at: float | str | None = None,
        state: str = "open",
        type: str | None = None,
        parent: int | None = None,
        blocked_by: tuple[int, ...] | list[int] = (),
        number: int | None = None,
    ) -> Issue:
        """An issue with the next number, or ``number`` (unused and positive: specs that never reuse an issue number
        pick their own); times are epoch seconds or ISO strings (default: now).

        ``type`` is the name of the owner's issue type (created on first use, see :meth:`add_issue_type`); issue
        types are an organization feature, so the owner must be one (``add_user(owner, type="Organization")``
        before ``add_repo``). ``parent`` makes it a sub-issue of that issue number; ``blocked_by`` lists the issue
        numbers blocking it. Raises ``KeyError`` for a ``parent`` or blocker that does not exist, ``ValueError`` for
        a taken or non-positive ``number`` or a ``type`` on a repository a user owns.
        """
        with self.lock:
            repo = self.repo(full_name)
            if type and repo.owner.type != "Organization":
                raise ValueError(
                    f"issue type {type!r} on {full_name}: issue types belong to organizations, and "
                    f"{repo.owner.login} is a {repo.owner.type}; seed add_user({repo.owner.login!r}, "
                    f'type="Organization") before add_repo'
                )
            if number is not None and (number < 1 or number in repo.issues):
                raise ValueError(
                    f"issue number {number} is {'taken' if number >= 1 else 'not positive'} in {full_name}"
                )
            for other in [*([parent] if parent is not None else []), *blocked_by]:
                if other not in repo.issues:
                    raise KeyError(f"no issue #{other} in {repo.full_name} to relate issue {title!r} to")
            author = self.add_user(user or repo.owner.login)
            created = _when(created_at, self.now(), "created_at")
            iss = Issue(
                id=self.new_id(),
                number=number or repo.next_number,
                title=title,
                body=body,
                user=author,
                created_at=created,
                updated_at=_when(updated_at, created, "updated_at"),
                state=state,
                closed_at=created if state == "closed" else None,
                parent=parent,
                blocked_by=list(blocked_by),
            )
            iss.labels = [self.label_in(repo, name) for name in labels]
            iss.type = self.add_issue_type(repo.owner.login, type) if type else None
            repo.issues[iss.number] = iss
            repo.next_number = max(repo.next_number, iss.number + 1)
            return iss

    def add_issue_type(
        self, owner: str, name: str, *, description: str | None = None, color: str = "gray"
    ) -> IssueType:
        """An issue type of ``owner`` (names match case-insensitively); returns the existing one if any."""
        with self.lock:
            key = (owner.lower(), name.lower())
            found = self.issue_types.get(key)
            if found is None:
                found = self.issue_types[key] = IssueType(
                    id=self.new_id(), name=name, created_at=self.now(), description=description, color=color
                )
            return found

    def pin_comment(self, full_name: str, comment_id: int) -> None:
        """Pin a comment on its issue (``pinned_comment``); raises ``KeyError`` naming an unknown comment."""
        with self.lock:
            repo = self.repo(full_name)
            c = self.comments.get(comment_id)
            if c is None or c.repo is not repo:
                raise KeyError(f"no comment {comment_id} in {repo.full_name} to pin")
            repo.issues[c.issue_number].pinned_comment = c

    def add_pull(
        self,
        full_name: str,
        title: str,
        *,
        head: str = "feature",
        base: str | None = None,
        body: str | None = None,
        user: str | None = None,
        draft: bool = False,
        mergeable: bool = True,
    ) -> Issue:
        """A pull request (an issue with head and base branches, sharing the issue number sequence).

        Like GitHub, the first ``GET`` of the pull request after it is created (or after :meth:`touch_pull`) answers
        ``mergeable`` and ``rebaseable`` null while the merge is "computed"; later reads answer ``mergeable``
        (False: ``mergeable_state`` ``dirty``, a conflict).
        """
        with self.lock:
            iss = self.add_issue(full_name, title, body=body, user=user)
            repo = self.repo(full_name)
            base_ref = base or repo.default_branch

            def sha(ref: str) -> str:
                return hashlib.sha1(f"{full_name}:{ref}:{iss.number}".encode()).hexdigest()

            iss.pull = PullInfo(
                head_ref=head,
                base_ref=base_ref,
                head_sha=sha(head),
                base_sha=sha(base_ref),
                merge_commit_sha=sha(f"merge:{head}:{base_ref}"),
                draft=draft,
                mergeable=mergeable,
            )
            iss.pull_id = self.new_id()
            return iss

    def touch_pull(self, full_name: str, number: int, *, mergeable: bool | None = None) -> None:
        """A change to pull request ``number`` (as a push would make): GitHub computes its mergeability again, so
        the next read answers null; ``mergeable`` sets what it then concludes. ``KeyError`` if there is no such pull."""
        with self.lock:
            iss = self.repo(full_name).issues.get(number)
            if iss is None or iss.pull is None:
                raise KeyError(f"no pull request #{number} in {full_name}")
            iss.pull.computed = False
            iss.pull.merge_commit_sha = hashlib.sha1(f"{iss.pull.merge_commit_sha}:again".encode()).hexdigest()
            if mergeable is not None:
                iss.pull.mergeable = mergeable
            iss.updated_at = self.now()

    def add_comment(
        self, full_name: str, number: int, body: str, *, user: str | None = None, created_at: float | str | None = None
    ) -> Comment:
        """Seed a comment (no webhook: seeding is not an API call)."""
        with self.lock:
            repo = self.repo(full_name)
            iss = repo.issues.get(number)
            if iss is None:
                raise KeyError(f"no issue #{number} in {repo.full_name}")
            author = self.add_user(user or repo.owner.login)
            return self.create_comment(repo, iss, body, author, None, _when(created_at, self.now(), "created_at"))

    def add_app(self, slug: str = "fake-app", *, name: str | None = None, owner: str = "octocat") -> App:
        """A GitHub App with a freshly generated RSA key pair (``app.private_key_pem`` goes to the app under test)."""
        private, public = generate_key_pair()
        with self.lock:
            # Process-wide unique, like real App ids: githubkit caches JWTs per App id across clients for 8 minutes,
            # so two fakes reusing an id would see a stale JWT signed with the other fake's key.
            app_id = next(_APP_IDS)
            app = App(
                id=app_id,
                slug=slug,
                name=name or slug,
                client_id=f"Iv23li{app_id:014d}",
                owner=self.add_user(owner),
                public_key_pem=public,
                private_key_pem=private,
                created_at=self.now(),
            )
            self.apps[app.id] = app
            return app

    def add_installation(self, app_id: int, account: str, *, repositories: list[str] | None = None) -> Installation:
        """Install an App on an account (all its repositories, or the listed full names)."""
        with self.lock:
            if app_id not in self.apps:
                raise KeyError(f"no App {app_id} seeded in the fake GitHub")
            inst = Installation(
                id=self.new_id(),
                app=self.apps[app_id],
                account=self.add_user(account),
                created_at=self.now(),
                repositories=repositories,
            )
            self.installations[inst.id] = inst
            return inst

    def add_oauth_code(self, login: str) -> str:
        """A web-flow ``code`` as if ``login`` approved the app in a browser; exchange it at
        ``POST /login/oauth/access_token`` within 10 minutes of fake time (GitHub's code lifetime)."""
        with self.lock:
            self.add_user(login)
            code = secrets.token_hex(10)
            self.oauth.codes[code] = (login, self.now() + OAUTH_CODE_TTL)
            return code

    def add_refresh_token(self, login: str, value: str, *, client_id: str = "", lifetime: float = 15811200.0) -> None:
        """A refresh token ``value`` for ``login`` as if issued by the web flow (so refreshing it needs
        ``client_secret``), valid ``lifetime`` seconds of fake time; ``client_id`` empty: accepted from any client.
        Re-adding a value replaces it (a spec re-seeds the same token before each test)."""
        with self.lock:
            self.add_user(login)
            self.oauth.refresh[value] = RefreshGrant(
                value=value,
                client_id=client_id,
                login=login,
                expires_at=self.now() + lifetime,
                access_token="",
                from_device_flow=False,
            )

    def add_hook(
        self,
        url: str,
        *,
        secret: str | None,
        events: list[str] | None = None,
        content_type: str = "json",
        repo: str | None = None,
    ) -> Hook:
        """Subscribe ``url`` to deliveries caused by API calls (``issue_comment`` created, ``issues`` labeled)."""
        if content_type not in ("json", "form"):
            raise ValueError(f"hook content_type must be 'json' or 'form', not {content_type!r}")
        with self.lock:
            hook = Hook(
                id=self.new_id(),
                url=url,
                secret=secret,
                events=list(events or ["issues", "issue_comment"]),
                content_type=content_type,
                repo=repo,
            )
            self.hooks.append(hook)
            return hook

    def set_rate_limit_remaining(self, remaining: int | None) -> None:
        """Force ``x-ratelimit-remaining`` (0 makes every API call a primary rate-limit 403); None restores counting."""
        with self.lock:
            self.rate_limiter.override = remaining

    # -- webhooks -------------------------------------------------------------------------------------------------

    def base_url(self, request: FakeRequest | None = None) -> str:
        """Where URL fields point: the public base URL, else the request's own, else ``http://fake-github``."""
        if self.public_base_url:
            return self.public_base_url
        return (request.base_url if request is not None else "http://fake-github").rstrip("/")

    def emit(self, event: str, payload: dict[str, Any], *, repo: Repo) -> None:
        """Queue a delivery of ``payload`` to every hook subscribed to ``event`` on ``repo`` (sent in the
        background)."""
        with self.lock:
            hooks = [
                h
                for h in self.hooks
                if event in h.events and (h.repo is None or h.repo.lower() == repo.full_name.lower())
            ]
        for hook in hooks:
            self._dispatcher.submit(functools.partial(self._deliver, hook, event, payload))

    def _deliver(self, hook: Hook, event: str, payload: dict[str, Any]) -> None:
        # check=False: a failed delivery is recorded in ``deliveries``, as GitHub records it; nobody waits to be told.
        send_webhook(
            hook.url,
            event,
            payload,
            secret=hook.secret,
            hook_id=hook.id,
            content_type=hook.content_type,
            timeout=self.delivery_timeout,
            log=self.deliveries,
            check=False,
        )

    def redeliver_later(self, delivery_id: str) -> None:
        """Queue a manual redelivery of a recorded delivery (same GUID, same bytes); ``KeyError`` if unknown."""
        if self.deliveries.by_id(delivery_id) is None:
            raise KeyError(f"no recorded delivery {delivery_id!r} to redeliver")

        def resend() -> None:
            redeliver(delivery_id, timeout=self.delivery_timeout, log=self.deliveries, check=False)

        self._dispatcher.submit(resend)

    def drain_deliveries(self, timeout: float = DELIVERY_TIMEOUT + 2.0) -> bool:
        """Wait up to ``timeout`` seconds for queued deliveries to be attempted; True when none is left."""
        return self._dispatcher.drain(timeout)

    def reset(self) -> None:
        """Forget all state, tokens, hooks and deliveries (queued deliveries are dropped)."""
        self._dispatcher.clear()
        with self.lock:
            self._init_state()
        self.deliveries.clear()

    def close(self, timeout: float = DELIVERY_TIMEOUT + 2.0) -> None:
        """Stop the background webhook worker (bounded by ``timeout`` seconds)."""
        self._dispatcher.close(timeout)

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

    def installation_for(self, repo: Repo, app: App | None = None) -> Installation | None:
        """The first installation (of ``app``, or of any App) that covers ``repo``."""
        return next((i for i in self.installations.values() if (app is None or i.app is app) and i.covers(repo)), None)

    def user_or_bot(self, login: str) -> User | None:
        """A seeded user, or an App's bot account (``slug[bot]``), by login (case-insensitive)."""
        found = self.users.get(login.lower())
        if found is not None:
            return found
        return next((a.bot for a in self.apps.values() if a.bot.login.lower() == login.lower()), None)

    def create_comment(self, repo: Repo, iss: Issue, body: str, author: User, via: App | None, when: float) -> Comment:
        c = Comment(
            id=self.new_id(),
            repo=repo,
            issue_number=iss.number,
            body=body,
            user=author,
            created_at=when,
            updated_at=when,
            via_app=via,
        )
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
