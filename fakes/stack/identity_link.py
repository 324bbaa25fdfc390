"""The integration gateway's internal identity-link API: the GitHub login and token linked to a subject.

Bearer ``GATEWAY_IDENTITY_LINK_TOKEN`` (e2e: ``e2e-identity-link-token``; anything else is 401). Used by the
orchestrator's repository read gate and driven directly by the identity-keying spec for the one behaviour no turn
reaches: refreshing a link.

- ``GET /identity-link/github/identity?subject=S`` -> 200 ``{"subject", "githubLogin"}``, or 404 when ``S`` has no
  link. An expired link still answers 200: a token ageing out does not unprove which account someone controls.
- ``GET /identity-link/github/token?subject=S`` -> 200 ``{"subject", "githubLogin", "token", "expiresAt"}`` for a
  link whose token is still valid. An expired one that holds a refresh token (not itself expired) is refreshed
  first: ``POST /login/oauth/access_token`` on GitHub with ``client_id``, ``client_secret`` (GitHub requires it
  for an App's refresh grant and answers HTTP 200 ``{"error": "invalid_client"}`` without it),
  ``grant_type=refresh_token`` and the refresh token; the new token, the rotated refresh token and both expiries
  are stored (same record, same subject). 404 when there is no link, or it expired and cannot be refreshed; the
  link itself is kept either way.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx
from aiohttp import web

from fakes.stack import config, credentials
from fakes.stack.http import json_error
from fakes.stack.network import Unreachable

if TYPE_CHECKING:
    from fakes.stack.network import ClusterClient
    from fakes.stack.node import PodContext

DEFAULT_CLIENT_ID = "Iv1.e2e0000000000000"


class IdentityLinkApi:
    def __init__(self, ctx: PodContext, http: ClusterClient) -> None:
        env = ctx.env
        self.ctx = ctx
        self.http = http
        self.bearer = env.get("GATEWAY_IDENTITY_LINK_TOKEN", "")
        self.key = env.get("IDENTITY_LINK_ENCRYPTION_KEY", "")
        self.github = env.get("GITHUB_BASE_URL", env.get("GITHUB_API_URL", "http://fake-github")).rstrip("/")
        self.client_id = env.get("GITHUB_APP_CLIENT_ID", DEFAULT_CLIENT_ID)
        self.client_secret = env.get("GITHUB_APP_CLIENT_SECRET", "")

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/identity-link/github/identity", self._identity)
        app.router.add_get("/identity-link/github/token", self._token)

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("authorization", "")
        return bool(self.bearer) and header == f"Bearer {self.bearer}"

    async def _identity(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return json_error(401, "unrecognized bearer token")
        subject = request.query.get("subject", "")
        link = await self._link(subject)
        if link is None:
            return json_error(404, "no GitHub link for this subject")
        return web.json_response({"subject": subject, "githubLogin": link["githubLogin"]})

    async def _token(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return json_error(401, "unrecognized bearer token")
        subject = request.query.get("subject", "")
        link = await self._link(subject)
        if link is None:
            return json_error(404, "no GitHub link for this subject")
        now = datetime.now(UTC)
        expires = credentials.parse_js_iso(link.get("expiresAt"))
        if expires is None or expires <= now:
            link = await self._refresh(subject, link, now)
            if link is None:
                return json_error(404, "the GitHub link expired and could not be refreshed: link the account again")
        return web.json_response(
            {
                "subject": subject,
                "githubLogin": link["githubLogin"],
                "token": link["token"],
                "expiresAt": link["expiresAt"],
            }
        )

    async def _link(self, subject: str) -> dict[str, str] | None:
        if not subject:
            return None
        return await credentials.github_link(self.ctx.api, subject, self.key)

    async def _refresh(self, subject: str, link: dict[str, str], now: datetime) -> dict[str, str] | None:
        """The link after a refresh grant, stored; ``None`` when it has no usable refresh token or GitHub refuses."""
        refresh_expires = credentials.parse_js_iso(link.get("refreshExpiresAt"))
        if not link.get("refreshToken") or (refresh_expires is not None and refresh_expires <= now):
            return None
        form = {"client_id": self.client_id, "grant_type": "refresh_token", "refresh_token": link["refreshToken"]}
        if "refresh-without-client-secret" not in self.ctx.bugs:
            form["client_secret"] = self.client_secret
        try:
            answer = await self.http.request(
                "POST", f"{self.github}/login/oauth/access_token", data=form, headers={"accept": "application/json"}
            )
            grant: Any = answer.json() if answer.status_code == 200 else None
        except (Unreachable, httpx.HTTPError, ValueError) as exc:
            self.ctx.log(f"identity-link: refreshing {subject}'s GitHub link failed: {exc}")
            return None
        if not isinstance(grant, dict) or not grant.get("access_token"):
            error = grant.get("error") if isinstance(grant, dict) else f"HTTP {answer.status_code}"
            self.ctx.log(f"identity-link: GitHub refused to refresh {subject}'s link: {error}")
            return None
        key = credentials.key_bytes(self.key)
        if key is None:
            return None
        fields = {
            "githubLogin": link["githubLogin"],
            "expiresAt": credentials.js_iso(now + timedelta(seconds=int(grant.get("expires_in", 28800)))),
            "token": credentials.seal_field(str(grant["access_token"]), key),
        }
        if grant.get("refresh_token"):
            fields["refreshToken"] = credentials.seal_field(str(grant["refresh_token"]), key)
            lifetime = int(grant.get("refresh_token_expires_in", 15811200))
            fields["refreshExpiresAt"] = credentials.js_iso(now + timedelta(seconds=lifetime))
        await credentials.write(self.ctx.api, subject, config.GITHUB_LINK_PREFIX, fields)
        self.ctx.log(f"identity-link: refreshed {subject}'s GitHub link")
        return await credentials.github_link(self.ctx.api, subject, self.key)
