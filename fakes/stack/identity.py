"""The orchestrator's identity gate: which subject a turn runs as, whose credentials it may use, when it parks.

Callers (specs/cluster/README.md §5 and §8), resolved once when a request arrives:

- ``POST /invoke`` from the gateway (bearer ``e2e-gateway-token``) with a verified sender assertion: the sender's
  ``github:<lower-cased login>``, a per-user caller. Without a verified assertion: the bearer's own subject
  (``client-integration-gateway``, shared by everyone who holds that bearer).
- ``POST /v1/chat/completions``: the ``x-openwebui-user-jwt`` header, HS256 with ``AGENT_OPENWEBUI_USER_JWT_SECRET``,
  checked as the product's ``jose`` verifier does (whole-second clock, ``exp <= now`` expired, ``nbf > now`` not yet
  valid, id from the first of ``id``, ``sub``, ``email``): ``openwebui:<id>``, per-user. No header: the bearer's
  subject. A header that does not verify resolves *no* identity: the turn is refused with ``could not resolve
  caller identity`` and never runs as the shared subject (failure mode 40).

The pre-flight (:meth:`Gate.preflight`) for the agent a turn goes to, in order:

1. The principal. ``github:<login>`` is its own; ``openwebui:<id>`` maps to ``github:<login>`` through its GitHub
   link (an expired link still names its login: an access token ageing out does not unprove which account someone
   controls); a chat user with no link parks with ``link your GitHub account``; the shared subject is its own.
2. Claude credentials for every Claude provider the Agent declares (``claude``: the setup-token record,
   ``CLAUDE_CODE_OAUTH_TOKEN``; ``claude-remote``: the login record, ``CLAUDE_LOGIN_CREDENTIALS_JSON``), read at the
   principal. A chat user's record still under ``openwebui:<id>`` is moved to the principal (adopted, never
   copied); nobody else's record is ever used or touched. Anything still missing parks the turn with one prompt
   naming every missing account at once (``link your accounts``, ``2 accounts``, ``Claude``, ``Claude Remote
   Control``).
3. Agents that declare ``github`` work in a repository: :mod:`fakes.stack.repo_gate`.

A verdict is :class:`Launch` (the AgentRun's ``subject``, ``secretEnv`` and extra ``spec`` fields), :class:`Park`
(the prompt; the turn waits for the user) or :class:`Refuse` (the answer; nothing starts).

Parked chat turns (:meth:`Gate.hold`): the turn stays open and is resumed every ``resume_every`` seconds (the twin's
timing profile; the product re-submits about every 4 s) with the caller resolved on arrival, never by re-reading the JWT
(which Open WebUI mints with a short expiry), until it launches or the hold ends. The parked request is written to the
session (``sess:<session>`` field ``pending``) and only its owner can resume it (:meth:`Gate.resumable`): another caller
in the same conversation gets their own turn, not the owner's.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import jwt

from fakes.stack import config, credentials

if TYPE_CHECKING:
    from fakes.stack.cluster_api import ClusterApi
    from fakes.stack.node import PodContext
    from fakes.stack.redis import RedisClient

JWT_HEADER = "x-openwebui-user-jwt"
JWT_SECRET_ENV = "AGENT_OPENWEBUI_USER_JWT_SECRET"
OPENWEBUI_PREFIX = "openwebui:"
GITHUB_PREFIX = "github:"
CLAUDE_PROVIDERS: dict[str, tuple[str, str, str]] = {
    # provider: (record prefix, env var, what the user is asked to link)
    "claude": (config.CLAUDE_SECRET_PREFIXES[0], "CLAUDE_CODE_OAUTH_TOKEN", "Claude"),
    "claude-remote": (config.CLAUDE_SECRET_PREFIXES[1], "CLAUDE_LOGIN_CREDENTIALS_JSON", "Claude Remote Control"),
}
NO_IDENTITY = "could not resolve caller identity"
LINK_BASE = "https://agent-controller.example/identity-link"


@dataclass(frozen=True)
class Caller:
    """Who sent a request. ``subject``: ``github:<login>``, ``openwebui:<id>`` or the bearer's own subject;
    ``bearer``: the bearer token's static subject; ``per_user``: resolved from a per-user credential (a verified
    sender assertion or user JWT); ``refused``: why no identity could be resolved (the turn must not run);
    ``jwt``: the raw user JWT as it arrived (kept only for the ``jwt-expiry-fallback`` bug switch)."""

    subject: str
    bearer: str
    per_user: bool
    refused: str | None = None
    jwt: str | None = field(default=None, repr=False)

    @property
    def chat_user(self) -> bool:
        return self.per_user and self.subject.startswith(OPENWEBUI_PREFIX)


@dataclass(frozen=True)
class Launch:
    """Start the agent as ``subject`` with ``secret_env`` requested; ``spec`` adds fields to the AgentRun's spec."""

    subject: str
    secret_env: tuple[str, ...]
    spec: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Park:
    """The turn waits for the user: ``text`` is the prompt they see; ``missing`` names what they must link."""

    text: str
    missing: tuple[str, ...]


@dataclass(frozen=True)
class Refuse:
    """Nothing starts; ``text`` is the answer."""

    text: str


Verdict = Launch | Park | Refuse


@dataclass(frozen=True)
class Pending:
    """A parked request on a session: its owner's subject, the agent and the request text."""

    owner: str
    agent: str
    text: str

    def to_json(self) -> dict[str, str]:
        return {"owner": self.owner, "agent": self.agent, "text": self.text}


# --- callers -------------------------------------------------------------------------------------------------------


def resolve_user_jwt(token: str, secret: str, now: float | None = None) -> str | None:
    """The Open WebUI user id a forwarded JWT names, or ``None`` when it does not verify (see the module docstring)."""
    if not token or not secret:
        return None
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            options={
                "verify_exp": False,
                "verify_nbf": False,
                "verify_iat": False,
                "verify_aud": False,
                "verify_iss": False,
                "verify_sub": False,
            },
        )
    except jwt.InvalidTokenError:
        return None
    second = math.floor(time.time() if now is None else now)
    for claim in ("exp", "nbf"):
        value = claims.get(claim)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if (claim == "exp" and value <= second) or (claim == "nbf" and value > second):
            return None
    user = next((claims[name] for name in ("id", "sub", "email") if claims.get(name) is not None), None)
    return user if isinstance(user, str) and user else None


def chat_caller(
    headers: Mapping[str, str], bearer_subject: str, jwt_secret: str, *, now: float | None = None
) -> Caller:
    """The caller of a chat request that authenticated as ``bearer_subject`` (see the module docstring)."""
    token = headers.get(JWT_HEADER)
    if token is None:
        return Caller(bearer_subject, bearer_subject, per_user=False)
    user = resolve_user_jwt(token, jwt_secret, now)
    if user is None:
        return Caller(
            "",
            bearer_subject,
            per_user=False,
            jwt=token,
            refused=f"{NO_IDENTITY}: the forwarded Open WebUI user token did not verify (expired, not yet "
            "valid, signed with another secret, or naming no user)",
        )
    return Caller(f"{OPENWEBUI_PREFIX}{user}", bearer_subject, per_user=True, jwt=token)


def invoke_caller(bearer_subject: str, asserted_sender: str | None) -> Caller:
    """The caller of ``POST /invoke``: the verified asserted sender, else the bearer's subject."""
    if asserted_sender:
        return Caller(asserted_sender, bearer_subject, per_user=True)
    return Caller(bearer_subject, bearer_subject, per_user=False)


# --- prompts -------------------------------------------------------------------------------------------------------


def github_link_prompt(agent: str, session: str) -> str:
    return (
        f"Before I can run {agent} for you, please link your GitHub account: open "
        f"{LINK_BASE}/github/start?session={session} and sign in with GitHub. I'll carry on with your request "
        "as soon as the link is done."
    )


def accounts_prompt(agent: str, session: str, names: list[str]) -> str:
    count = f"{len(names)} account{'s' if len(names) != 1 else ''}"
    listed = " and ".join(names)
    return (
        f"To run {agent} for you I need you to link your accounts first. This needs {count}: {listed}. "
        f"Link {'them' if len(names) != 1 else 'it'} here: {LINK_BASE}/claude/start?session={session} "
        "(one page covers every account listed). Then ask again."
    )


# --- the gate ------------------------------------------------------------------------------------------------------


class RepoGate(Protocol):
    """The repository part of a verdict (:class:`fakes.stack.repo_gate.RepoGate`, which imports this module's verdict
    types, so this module names only the call it makes)."""

    async def decide(
        self, caller: Caller, agent: str, text: str, session: str, repository: str | None
    ) -> Launch | Park | Refuse: ...


class Gate:
    """The pre-flight of one orchestrator instance: reads and moves credential Secrets through the API,
    keeps parked requests on the session in Redis, and asks ``repo_gate`` about repositories."""

    def __init__(self, ctx: PodContext, redis: RedisClient, repo_gate: RepoGate) -> None:
        self.ctx = ctx
        self.api = ctx.api
        self.ns = ctx.namespace
        self.key = ctx.env.get("IDENTITY_LINK_ENCRYPTION_KEY", "")
        self.jwt_secret = ctx.env.get(JWT_SECRET_ENV, "")
        self.redis = redis
        self.repo_gate = repo_gate

    # --- the pre-flight --------------------------------------------------------------------------------------------

    async def preflight(
        self, caller: Caller, agent_name: str, text: str, session: str, *, repository: str | None = None
    ) -> Verdict:
        """The verdict for running ``agent_name`` on ``text`` for ``caller``. ``repository`` (``owner/name``) is
        the repository an event came from (webhook turns); chat turns name theirs in ``text``."""
        if caller.refused:
            return Refuse(f"I {caller.refused}, so I did not run anything. Reload the chat and try again.")
        agent = await self.api.get(config.AGENTS, agent_name)
        if agent is None:
            return Refuse(f"agent {agent_name} is not in the catalog (is the community-components release deployed?)")
        providers = [str(p) for p in (agent.get("spec") or {}).get("identityProviders") or []]
        principal = await self._principal(caller)
        if principal is None:
            return Park(github_link_prompt(agent_name, session), ("github",))
        missing = await self._claude(caller, principal, providers)
        if missing:
            return Park(accounts_prompt(agent_name, session, [CLAUDE_PROVIDERS[p][2] for p in missing]), tuple(missing))
        env = [CLAUDE_PROVIDERS[p][1] for p in providers if p in CLAUDE_PROVIDERS]
        if principal.startswith(GITHUB_PREFIX):
            env.insert(0, "AGENT_ACTOR_LOGIN")
        spec: dict[str, str] = {}
        if "github" in providers:
            decision = await self.repo_gate.decide(caller, agent_name, text, session, repository)
            if not isinstance(decision, Launch):
                return decision
            env += decision.secret_env
            spec.update(decision.spec)
        return Launch(principal, tuple(env), spec)

    async def _principal(self, caller: Caller) -> str | None:
        if not caller.chat_user:
            return caller.subject
        link = await credentials.github_link(self.api, caller.subject, self.key)
        return f"{GITHUB_PREFIX}{link['githubLogin'].lower()}" if link else None

    async def _claude(self, caller: Caller, principal: str, providers: list[str]) -> list[str]:
        """The Claude providers still missing at ``principal`` after adopting the chat user's own records."""
        keyed_by = caller.subject if "chat-subject-keying" in self.ctx.bugs and caller.chat_user else principal
        missing = []
        for provider in providers:
            if provider not in CLAUDE_PROVIDERS:
                continue
            prefix = CLAUDE_PROVIDERS[provider][0]
            if await self._readable(keyed_by, prefix):
                continue
            if caller.chat_user and keyed_by == principal:
                outcome = await credentials.move(self.api, prefix, caller.subject, principal)
                if outcome == "moved":
                    self.ctx.log(f"identity: adopted {prefix} of {caller.subject} at {principal}")
                if await self._readable(principal, prefix):
                    continue
            missing.append(provider)
        return missing

    async def _readable(self, subject: str, prefix: str) -> bool:
        return await credentials.lookup(self.api, subject, self.key, prefix) is not None

    # --- parked chat turns -----------------------------------------------------------------------------------------

    def park(self, session: str, caller: Caller, agent: str, text: str) -> None:
        """Record ``caller``'s parked request on the session (best effort: no Redis, no resume after a new turn)."""
        self._session_update(
            session, lambda state: state.__setitem__("pending", Pending(caller.subject, agent, text).to_json())
        )

    def resumable(self, session: str, caller: Caller) -> Pending | None:
        """The parked request on ``session`` that ``caller`` may resume: only its owner's (with the
        ``parked-turn-hijack`` bug switch on, anyone's)."""
        pending = self._session(session).get("pending")
        if not isinstance(pending, dict):
            return None
        found = Pending(str(pending.get("owner", "")), str(pending.get("agent", "")), str(pending.get("text", "")))
        if found.owner == caller.subject or "parked-turn-hijack" in self.ctx.bugs:
            return found
        return None

    def resumed(self, session: str) -> None:
        """Forget the session's parked request (it launched)."""
        self._session_update(session, lambda state: state.pop("pending", None))

    async def hold(
        self,
        caller: Caller,
        agent: str,
        text: str,
        session: str,
        *,
        alive: Callable[[], Awaitable[bool]],
        hold: float | None = None,
        interval: float | None = None,
    ) -> Verdict | None:
        """Hold a parked chat turn open: every ``interval`` seconds run the pre-flight again as the caller resolved
        on arrival, until it no longer parks (the verdict) or ``hold`` seconds pass (``None``). ``alive()`` is awaited
        before each resume (the facade's keep-alive write); ``False`` means the client went away: stop. Both default
        to the twin's timing profile (``resume_every``; ``park_hold``: a GitHub device code lives 15 minutes)."""
        hold = self.ctx.timing.seconds("park_hold") if hold is None else hold
        interval = self.ctx.timing.seconds("resume_every") if interval is None else interval
        self.park(session, caller, agent, text)
        deadline = time.monotonic() + hold
        while time.monotonic() + interval < deadline:
            await asyncio.sleep(interval)
            if not await alive():
                return None
            verdict = await self.preflight(self._resume_caller(caller), agent, text, session)
            if not isinstance(verdict, Park):
                if isinstance(verdict, Launch):
                    self.resumed(session)
                return verdict
        return None

    def _resume_caller(self, caller: Caller) -> Caller:
        """The caller a resume runs as: the one resolved on arrival. With the ``jwt-expiry-fallback`` bug switch,
        the old behaviour: the JWT is verified again and, once it expired, the resume runs as the bearer's subject."""
        if "jwt-expiry-fallback" not in self.ctx.bugs or caller.jwt is None:
            return caller
        if resolve_user_jwt(caller.jwt, self.jwt_secret) is None:
            return Caller(caller.bearer, caller.bearer, per_user=False)
        return caller

    def _session(self, session: str) -> dict[str, Any]:
        try:
            raw = self.redis.get(f"sess:{session}")
        except ConnectionError:
            return {}
        try:
            state = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            return {}
        return state if isinstance(state, dict) else {}

    def _session_update(self, session: str, change: Callable[[dict[str, Any]], object]) -> None:
        state = self._session(session)
        change(state)
        try:
            self.redis.set(f"sess:{session}", json.dumps(state))
        except ConnectionError as exc:
            self.ctx.log(f"identity: could not record the parked request of {session}: {exc}")


async def run_secret_values(api: ClusterApi, key_text: str, spec: Mapping[str, Any]) -> dict[str, str]:
    """What the core-controller puts in a run's ``<run>-identity`` Secret, from the AgentRun's ``spec``: the Claude
    variables of ``spec.subject``, ``AGENT_ACTOR_LOGIN`` from a ``github:`` subject, ``AGENT_TARGET_REPOSITORY``
    from ``spec.targetRepository`` and ``GITHUB_TOKEN`` from the GitHub link of ``spec.githubLinkSubject``."""
    subject = str(spec.get("subject", ""))
    values = await credentials.claude(api, subject, key_text)
    if subject.startswith(GITHUB_PREFIX):
        values["AGENT_ACTOR_LOGIN"] = subject.removeprefix(GITHUB_PREFIX)
    if spec.get("targetRepository"):
        values["AGENT_TARGET_REPOSITORY"] = str(spec["targetRepository"])
    if spec.get("githubLinkSubject"):
        link = await credentials.github_link(api, str(spec["githubLinkSubject"]), key_text)
        if link and link.get("token"):
            values["GITHUB_TOKEN"] = link["token"]
    return values
