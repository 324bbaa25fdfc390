"""The fake GitHub REST API as a :class:`fakes.core.FakeApp`: the store plus one dispatcher, framework-free.

Served: get repository, list issues, get issue, list/create/get/update issue comments, add and remove issue labels,
reactions on issues and comments, get pull request, repository contents (file or directory), an App's installation
access token and a repository's installation, the authenticated user, a collaborator's permission
(:mod:`fakes.github.routes`), and the OAuth device / code / refresh endpoints (:mod:`fakes.github.oauth`). Everything
else answers 501 naming the method and path, and the journal records it, so "no unstubbed endpoint was called" cannot
pass vacuously.

:meth:`FakeGitHub.handle` is the one place a request becomes an answer: it finds the route, authenticates the caller,
spends the rate limit, runs the handler and turns a raised :class:`~fakes.github.errors.GitHubError` into GitHub's
error body.
"""

from __future__ import annotations

from http import HTTPStatus

from fakes.core import FakeRequest, FakeResponse
from fakes.github import errors, oauth, routes
from fakes.github.auth import UNDECODABLE, split_authorization, verify_app_jwt
from fakes.github.ratelimit import Quota
from fakes.github.seed_api import ADMIN_PREFIX, handle_admin
from fakes.github.store import GitHubStore
from fakes.github.wire import DOCS, AuthKind, Call, RouteTable

HEALTH_PATH = "/healthz"  # not a GitHub route; outside /_fake/ so the machinery treats it as the health route
OAUTH_PREFIX = "/login/"  # fakes.github.oauth's routes: on GitHub they live on github.com, not the API host

ROUTES: RouteTable[GitHubStore] = RouteTable(routes.table, oauth.table)


class FakeGitHub(GitHubStore):
    """The fake GitHub: the :class:`~fakes.github.store.GitHubStore` (state, seeding, deliveries) plus GitHub's wire
    behaviour in :meth:`handle`. Constructor options are the store's."""

    name = "github"
    unrecorded_paths = frozenset({HEALTH_PATH})

    def _init_state(self) -> None:
        super()._init_state()
        self._request_seq = 0

    def admin(self, request: FakeRequest) -> FakeResponse | None:
        """The machinery's admin hook: ``/_fake/github/...`` seeding routes (:mod:`fakes.github.seed_api`)."""
        if not request.path.startswith(ADMIN_PREFIX):
            return None
        return handle_admin(self, request)

    def error_response(self, status: int) -> FakeResponse:
        """What an injected ``status`` fault sends: GitHub's error body for that status (``status`` as a string)."""
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Error"
        return errors.error(status, reason).response()

    def handle(self, request: FakeRequest) -> FakeResponse:
        if request.path == HEALTH_PATH:
            return FakeResponse.json(200, {"status": "ok"})
        if request.path.startswith(ADMIN_PREFIX):  # reached only when a caller bypasses the machinery
            return self.admin(request) or errors.not_served(request.method, request.path).response()
        with self.lock:
            # OAuth endpoints live on github.com on GitHub: outside the REST API's quota and its headers.
            quota = None if request.path.startswith(OAUTH_PREFIX) else self.rate_limiter.spend(
                split_authorization(request.headers.get("authorization")), self.now())
            try:
                response = self._dispatch(request, quota)
            except errors.GitHubError as refusal:
                response = refusal.response()
            response.headers.extend(quota.headers() if quota is not None else [])
            response.headers.append(("x-github-media-type", "github.v3; format=json"))
            self._request_seq += 1
            response.headers.append(("x-github-request-id", f"FAKE:{self._request_seq:08X}"))
            return response

    def _dispatch(self, request: FakeRequest, quota: Quota | None) -> FakeResponse:
        method = request.method.upper()
        path = (request.raw_path or request.path).split("?", 1)[0]
        found = ROUTES.match(method, path)
        if found is None:
            raise errors.not_served(method, request.path)
        route, params = found
        call = Call(request=request, base=self.base_url(request), params=params)
        self._authenticate(call, route.auth)
        if quota is not None and quota.exhausted:
            raise errors.error(403, f"API rate limit exceeded for {self._identity(call)}.", DOCS["rate_limit"])
        return route.handler(self, call)

    def _authenticate(self, call: Call, auth: AuthKind) -> None:
        """Set ``call.token`` or ``call.app``; raises GitHub's 401 for a credential it does not accept."""
        if auth == "none":
            return
        credential = split_authorization(call.request.headers.get("authorization"))
        if auth == "jwt":
            verdict = verify_app_jwt(credential or "", list(self.apps.values()), self.now())
            if verdict.app is None:
                raise errors.error(401, verdict.message or UNDECODABLE)
            call.app = verdict.app
            return
        if credential is None:
            return
        token = self.tokens.get(credential)
        if token is None or (token.expires_at is not None and token.expires_at <= self.now()):
            raise errors.bad_credentials()
        call.token = token

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
