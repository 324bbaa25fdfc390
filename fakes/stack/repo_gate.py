"""The repository read gate: an agent that works in a GitHub repository reads as the person who asked, and does not
launch at all into a repository that person cannot read.

Applies to agents declaring the ``github`` identity provider (``stub-swe-agent``, ``claude-code-swe-agent``), after
the identity gate (:mod:`fakes.stack.identity`) found the caller's principal and Claude credentials:

- a webhook turn names its repository in the event (the gateway passes it as ``repository``); the sender was
  checked by the gateway, and no user token is involved (a webhook's subject must never hand a run a user's
  GitHub token): the run gets ``AGENT_TARGET_REPOSITORY`` and no ``GITHUB_TOKEN``, and nothing asks for a GitHub
  link;
- a chat turn names it in the request: ``owner/name``, or a bare name (``the e2e-repo repository``) taken against
  the deployment's default owner (``DEFAULT_GITHUB_OWNER``) *(twin's reading: upstream extracts it with a model; the
  twin matches those two forms)*. No repository named: ``Which GitHub repository ...``. Otherwise the caller's own
  GitHub token (from the gateway's identity-link API, which refreshes an expired link when it can) reads
  ``GET /repos/<owner>/<name>``: 200 launches with ``AGENT_TARGET_REPOSITORY`` and ``GITHUB_TOKEN``; 404 or 403 (how
  GitHub answers a token that cannot see a private repository) refuses with ``I can't see `<owner>/<name>` ...``;
  no usable token parks with ``link your GitHub account``;
- a turn with neither (no per-user identity, no event): refused, since there is nobody to read as.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx

from fakes.stack import config
from fakes.stack.identity import Caller, Launch, Park, Refuse, github_link_prompt
from fakes.stack.network import Unreachable

if TYPE_CHECKING:
    from fakes.stack.network import ClusterClient
    from fakes.stack.node import PodContext

_NAME = r"[A-Za-z0-9._-]+"
EXPLICIT = re.compile(rf"(?<![\w./:-])([A-Za-z0-9][A-Za-z0-9-]*)/({_NAME})")
BARE = re.compile(rf"\bthe\s+({_NAME})\s+(?:repository|repo)\b|\b(?:repository|repo)\s+({_NAME})", re.IGNORECASE)
GITHUB_HEADERS = {"accept": "application/vnd.github+json", "x-github-api-version": "2022-11-28"}


def target_repository(text: str, default_owner: str) -> str | None:
    """The ``owner/name`` a request names (explicitly, or a bare name against ``default_owner``), else ``None``."""
    found = EXPLICIT.search(text)
    if found:
        return f"{found.group(1)}/{found.group(2).rstrip('.')}"
    bare = BARE.search(text)
    name = (bare.group(1) or bare.group(2)).rstrip(".") if bare else ""
    return f"{default_owner}/{name}" if name and default_owner else None


class RepoGate:
    """Reads GitHub (``GITHUB_API_URL``) as the caller, with the token the gateway's identity-link API
    (``IDENTITY_LINK_GATEWAY_URL``, bearer ``IDENTITY_LINK_GATEWAY_TOKEN``) gives for the caller's subject."""

    def __init__(self, ctx: PodContext, http: ClusterClient) -> None:
        env = ctx.env
        self.ctx = ctx
        self.http = http
        self.github = env.get("GITHUB_API_URL", f"http://{config.FAKE_GITHUB}").rstrip("/")
        self.gateway = env.get("IDENTITY_LINK_GATEWAY_URL", f"http://{config.GATEWAY}:{config.GATEWAY_PORT}").rstrip(
            "/"
        )
        self.link_token = env.get("IDENTITY_LINK_GATEWAY_TOKEN", "")
        self.default_owner = env.get("DEFAULT_GITHUB_OWNER", "")

    async def decide(
        self, caller: Caller, agent: str, text: str, session: str, repository: str | None
    ) -> Launch | Park | Refuse:
        """The repository part of the verdict: a :class:`Launch` carrying only the extra ``secret_env`` and
        ``spec`` fields (its ``subject`` is unused), or the :class:`Park` / :class:`Refuse` that stops the turn."""
        if repository:
            return Launch("", ("AGENT_TARGET_REPOSITORY",), {"targetRepository": repository})
        if not caller.chat_user:
            return Refuse(
                f"{agent} works in a GitHub repository as the person who asked, and this turn carries no "
                "per-user identity to read one as, so I did not start it."
            )
        target = target_repository(text, self.default_owner)
        if target is None:
            return Refuse(
                f"Which GitHub repository should {agent} work in? Name it as owner/name and ask again; "
                "nothing was started."
            )
        token = await self._user_token(caller.subject)
        if token is None:
            return Park(github_link_prompt(agent, session), ("github",))
        status = await self._read_status(target, token)
        if status == 200:
            return Launch(
                "",
                ("AGENT_TARGET_REPOSITORY", "GITHUB_TOKEN"),
                {"targetRepository": target, "githubLinkSubject": caller.subject},
            )
        if status in (403, 404):
            return Refuse(
                f"I can't see `{target}` with your GitHub account, so I did not start {agent}. Check the "
                "name, or ask someone who can read it to run this."
            )
        return Refuse(
            f"I could not check whether you can read `{target}`: GitHub answered {status}. Nothing was started."
        )

    async def _user_token(self, subject: str) -> str | None:
        """The caller's GitHub token from the gateway, or ``None`` when the gateway says the link is dead (404).
        Raises ``RuntimeError`` when the gateway cannot be asked."""
        url = f"{self.gateway}/identity-link/github/token?subject={quote(subject, safe='')}"
        try:
            answer = await self.http.request("GET", url, headers={"authorization": f"Bearer {self.link_token}"})
        except (Unreachable, httpx.HTTPError) as exc:
            raise RuntimeError(f"the gateway's identity-link API is unreachable: {exc}") from None
        if answer.status_code == 404:
            return None
        if answer.status_code != 200:
            raise RuntimeError(f"the gateway's identity-link API answered {answer.status_code}: {answer.text[:200]}")
        token = answer.json().get("token")
        return token if isinstance(token, str) and token else None

    async def _read_status(self, repo: str, token: str) -> int:
        try:
            answer = await self.http.request(
                "GET", f"{self.github}/repos/{repo}", headers={**GITHUB_HEADERS, "authorization": f"Bearer {token}"}
            )
        except (Unreachable, httpx.HTTPError) as exc:
            raise RuntimeError(f"GitHub is unreachable for the read check of {repo}: {exc}") from None
        return answer.status_code
