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

import time
from http import HTTPStatus

from fakes.core import FakeRequest, FakeResponse
from fakes.github import conditional, errors, oauth, routes
from fakes.github.auth import UNDECODABLE, split_authorization, verify_app_jwt
from fakes.github.seed_api import ADMIN_PREFIX, handle_admin
from fakes.github.store import GitHubStore
from fakes.github.wire import (
    DOCS,
    RAW_PREFIX,
    AuthKind,
    Call,
    Route,
    RouteTable,
    decode_unreserved,
    without_empty_segments,
)

HEALTH_PATH = "/healthz"  # not a GitHub route; outside /_fake/ so the machinery treats it as the health route
OAUTH_PREFIX = "/login/"  # fakes.github.oauth's routes: on GitHub they live on github.com, not the API host

ROUTES: RouteTable[GitHubStore] = RouteTable(routes.table, oauth.table)
JSON = "application/json"
#: The REST API versions GitHub serves, newest first; without ``X-GitHub-Api-Version`` it selects 2022-11-28.
API_VERSIONS = ("2026-03-10", "2022-11-28")
DEFAULT_API_VERSION = "2022-11-28"


def _api_version(request: FakeRequest) -> str:
    """The version this request selects (``X-GitHub-Api-Version``, else the default); GitHub's 400 for another one."""
    asked = request.headers.get("x-github-api-version")
    if asked is None:
        return DEFAULT_API_VERSION
    if asked in API_VERSIONS:
        return asked
    newest, *older = API_VERSIONS
    supported = f'"{newest}" (most recent) and ' + ", ".join(f'"{v}"' for v in older)
    raise errors.error(
        400,
        "Bad Request",
        errors=f'The version you specified in the "X-GitHub-API-Version" request '
        f'header, "{asked}", is not a supported version. The following versions are currently '
        f"supported: {supported}.",
    )


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
        answer = errors.error(status, reason).response()
        answer.headers = [(k, f"{v}; charset=utf-8" if v == JSON else v) for k, v in answer.headers]
        return answer

    def handle(self, request: FakeRequest) -> FakeResponse:
        if request.path == HEALTH_PATH:
            return FakeResponse.json(200, {"status": "ok"})
        if request.path.startswith(ADMIN_PREFIX):  # reached only when a caller bypasses the machinery
            return self.admin(request) or errors.not_served(request.method, request.path).response()
        with self.lock:
            return self._serve(request)

    def _serve(self, request: FakeRequest) -> FakeResponse:
        """Route, authenticate, check the API version and the rate limit, run the handler, then add the headers GitHub
        sends (rate limit, caching, token and version headers) or turn the answer into a 304."""
        method = request.method.upper()
        raw_path = decode_unreserved((request.raw_path or request.path).split("?", 1)[0])
        found = ROUTES.match(method, raw_path)
        route, params = found if found is not None else (None, {})
        call = Call(request=request, base=self.base_url(request), path=raw_path, params=params)
        credential = split_authorization(request.headers.get("authorization"))
        # OAuth endpoints and downloads live on other hosts and App-JWT calls are not counted: none carries
        # x-ratelimit-*.
        api_host = not request.path.startswith((OAUTH_PREFIX, RAW_PREFIX))
        counted = api_host and (route is None or route.auth == "token")
        quota = self.rate_limiter.quota(credential, self.now(), extra=1) if counted else None
        version: str | None = None
        try:
            if route is None:
                raise self._unrouted(method, raw_path, request.path)
            self._authenticate(call, route.auth)
            if route.auth != "none":
                version = _api_version(request)
            if quota is not None and quota.exhausted:
                raise errors.error(403, f"API rate limit exceeded for {self._identity(call)}.", DOCS["rate_limit"])
            response = route.handler(self, call)
        except errors.GitHubError as refusal:
            response = refusal.response()
        if api_host and 200 <= response.status < 300:  # GitHub sends the caching headers on writes too
            conditional.add_cache_headers(request, response)
            if method == "GET" and conditional.not_modified(request, response):
                response = conditional.as_304(response)
        if quota is not None:  # a 304 does not count against the rate limit
            spent = response.status != 304
            quota = (
                self.rate_limiter.spend(credential, self.now())
                if spent
                else self.rate_limiter.quota(credential, self.now())
            )
            response.headers.extend(quota.headers())
        return self._stamp(call, route, version, response)

    def _unrouted(self, method: str, raw_path: str, shown: str) -> errors.GitHubError:
        """GitHub's 404 for a served route spelt with a trailing slash or an empty segment (its docs: "adding a
        trailing slash to the endpoint will result in a 404 Not Found"); 501 for a route the fake does not serve."""
        canonical = without_empty_segments(raw_path)
        if canonical != raw_path and ROUTES.match(method, canonical) is not None:
            return errors.not_found()
        return errors.not_served(method, shown)

    def _stamp(
        self, call: Call, route: Route[GitHubStore] | None, version: str | None, response: FakeResponse
    ) -> FakeResponse:
        """The headers GitHub sends on every answer: JSON with its charset, the media type and request id, the
        selected API version, and what the token may do and until when."""
        response.headers = [
            (k, f"{JSON}; charset=utf-8" if k.lower() == "content-type" and v == JSON else v)
            for k, v in response.headers
        ]
        token = call.token
        if token is not None and route is not None:
            if token.scopes is not None:
                response.headers.append(("x-oauth-scopes", ", ".join(token.scopes)))
                response.headers.append(("x-accepted-oauth-scopes", route.scopes))
            if token.client_id is not None:
                response.headers.append(("x-oauth-client-id", token.client_id))
            if token.app_token and route.permissions:
                response.headers.append(("x-accepted-github-permissions", route.permissions))
            if token.expires_at is not None:
                when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(token.expires_at))
                response.headers.append(("github-authentication-token-expiration", when))
        if version is not None:
            response.headers.append(("x-github-api-version-selected", version))
        response.headers.append(("x-github-media-type", "github.v3; format=json"))
        self._request_seq += 1
        response.headers.append(("x-github-request-id", f"FAKE:{self._request_seq:08X}"))
        return response

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
