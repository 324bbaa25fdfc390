"""The agent orchestrator's twin: accept-then-poll invocations, the credential pre-flight, AgentRuns, the agent
protocol's idle window, and what a restart loses.

HTTP (port 8081, Service ``agent-orchestrator-invoke``):

- ``POST /invoke`` (bearer ``e2e-gateway-token`` -> subject ``client-integration-gateway``; else 401) with
  ``{"session", "input", "agent"?}`` and the gateway's sender assertion headers; answers 202 ``{"id", "status":
  "pending"}``. ``GET /invoke/<id>`` -> ``{"id", "status": "pending"|"succeeded"|"failed", "result"?: {"text"},
  "error"?, "parked", "pendingToolCalls": []}``, 404 for an id it does not hold. Invocation records live in this
  process's memory only: after a restart every earlier id is a 404 (failure mode 33 in specs/cluster/README.md).
  The body may also be ``{"request", "session_id"?, "tools"?, "tool_choice"?}``; a turn with caller tools is
  planned (:mod:`fakes.stack.planner`) instead of going to an agent, and its record then carries the calls the
  client must run as ``pendingToolCalls`` (``[{"id", "name", "arguments"}]``) and no ``result``; a tool definition
  the API would refuse is a 400 and never an invocation. Only chat resumes a turn: ``/invoke`` has no message
  array to carry a ``role: "tool"`` result, so a ``messages`` field in its body is not read and the request is a
  new turn planned from its ``request`` alone *(twin's reading: whether upstream refuses such a body or ignores the
  field is not part of the material; see specs/cluster/README.md)*. The bug switch ``invoke-resumes`` lifts that
  history into the planned turn instead.
- ``POST /v1/chat/completions``: the OpenAI-compatible chat facade (:mod:`fakes.stack.chat`).
- ``GET /healthz``: 200 once warm (NATS connected, Qdrant collections set up, the Skills indexed).

A turn: the planner picks the route's agent (deterministic here; upstream asks a model); the pre-flight is the identity
gate (:mod:`fakes.stack.identity`: the caller's principal, their Claude credentials, the repository read gate) and parks
the turn with a link prompt, refuses it, or launches as the principal; a session that still has a live AgentRun (Redis
``sess:<session>``) is re-attached to instead of launching another; otherwise an AgentRun is created. Then the agent's
NATS messages are awaited: each one resets the idle window (``AGENT_IDLE_TIMEOUT_SECONDS``, 30 s at scale 1, counted
from the launch: failure mode 28); the reply is acknowledged and becomes the result; silence past the window fails the
turn with ``agent <name> went silent for <window>ms after N progress message(s)``. A re-attached turn waits at most
``reattach_bound`` (45 s at scale 1) between messages.

Stopping (pod deleted or rolled): the orchestrator stops consuming agent messages at once, so a reply the agent is
holding stays unacknowledged for whoever re-attaches; open requests finish; every record is gone.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
from typing import Any

import httpx
from aiohttp import web

from fakes.stack import config, identity
from fakes.stack.caller_tools import BadTools, CallerToolStore, cluster_qdrant, parse_tools
from fakes.stack.chat import ChatFacade
from fakes.stack.cluster_api import ApiError
from fakes.stack.http import Listener, json_error
from fakes.stack.invocation import Invocation
from fakes.stack.model import ModelClient
from fakes.stack.nats import NatsClient
from fakes.stack.network import Unreachable
from fakes.stack.node import PodContext
from fakes.stack.planner import TOOLS, Planner
from fakes.stack.redis import RedisClient, RedisUnavailable
from fakes.stack.repo_gate import RepoGate
from fakes.stack.skills import SkillIndex

EMBEDDING_SIZE = 1536
COLLECTIONS = ("tools", "skills", "agents", "caller_tools")
ACTIVE = (None, "", "Pending", "Running")
TOOLS_LIST_TIMEOUT = 10.0
"""Seconds the first list of catalog Tools may take (a failure is retried with the rest of the warm-up)."""


class TurnFailed(Exception):
    """The turn's error text, as the gateway will quote it."""


def sender_assertion(secret: str, sender: str) -> str:
    """What the gateway sends in ``x-agent-sender-assertion``: hex HMAC-SHA256 of the sender subject."""
    return hmac.new(secret.encode(), sender.encode(), hashlib.sha256).hexdigest()


class Orchestrator:
    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        env = ctx.env
        pairs = env.get("STATIC_IDENTITIES", "").split(",")
        self.identities = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
        self.idle = float(env.get("AGENT_IDLE_TIMEOUT_SECONDS", ctx.timing.seconds("idle_window")))
        self.assertion_secret = env.get("AGENT_SENDER_ASSERTION_SECRET", "")
        self.invocations: dict[str, Invocation] = {}
        self.nats = NatsClient(ctx.node, env.get("NATS_URL", "nats://nats:4222"), name=ctx.name, forever=True)
        self.redis = RedisClient(ctx.node, env.get("REDIS_URL", "redis://agent-orchestrator-redis:6379"))
        self.http = ctx.client()
        self.gate = identity.Gate(ctx, self.redis, RepoGate(ctx, self.http))
        self.draining = False
        self._tools_wiring(env)
        app = web.Application()
        app.router.add_get("/healthz", self._health)
        app.router.add_post("/invoke", self._invoke)
        app.router.add_post("/v1/chat/completions", ChatFacade(self).handle)
        app.router.add_get("/invoke/{id}", self._status)
        self.listener = Listener(app)

    # --- lifecycle --------------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.nats.connect()
        await self._warm_up()
        self.ctx.map_port(config.ORCHESTRATOR_PORT, await self.listener.start())
        self.ctx.log("orchestrator: warm, serving on 8081")

    def _tools_wiring(self, env: dict[str, str]) -> None:
        """The model client, the Skill index, the caller-tool store and the planner (see their modules)."""
        qdrant = cluster_qdrant(self.http, env.get("QDRANT_URL", f"http://{config.QDRANT}:{config.QDRANT_PORT}"))
        self.model = ModelClient(
            self.http,
            base_url=env.get("OPENAI_BASE_URL", "") or "http://fake-openai/v1",
            api_key=env.get("OPENAI_API_KEY", ""),
            chat_model=env.get("PLANNER_MODEL", "gpt-4o-mini"),
            embedding_model=env.get("EMBEDDING_MODEL", "text-embedding-3-small"),
        )
        self.tools = self.ctx.api.informer(TOOLS)
        self.skills = SkillIndex(
            self.ctx.api,
            qdrant,
            self.model,
            self.ctx.log,
            retry=self.ctx.timing.seconds("skill_index_retry"),
        )
        store = CallerToolStore(qdrant, self.model.embed)
        self.planner = Planner(
            catalog=lambda name: self.tools.get(name, self.ctx.namespace),
            model=self.model,
            skills=self.skills,
            caller_tools=store,
            http=self.http,
            top_k=int(env.get("CALLER_TOOL_TOP_K", "3")),
            bugs=self.ctx.bugs,
            log=self.ctx.log,
        )

    async def stop(self, grace: float) -> None:
        self.draining = True
        await self.skills.stop()
        await self.tools.stop()
        self.nats.unsubscribe_all()  # a held reply stays unacknowledged for the next orchestrator
        if "rollout-fails-run-transiently" in self.ctx.bugs:
            await self._fail_awaited_runs()
        for invocation in self.invocations.values():
            if invocation.task is not None:
                invocation.task.cancel()
        await self.listener.stop()
        await self.nats.close()
        await self.http.aclose()
        self.invocations.clear()

    async def _fail_awaited_runs(self) -> None:
        """The broken version (rollout-fails-run-transiently): a stopping orchestrator marks every run it was
        waiting on ``Failed`` (that version's controller then re-derives ``Running`` from the still-running Job, so
        only a watch sees it)."""

        def failed(obj: dict[str, Any]) -> bool:
            obj.setdefault("status", {}).update(phase="Failed", message="orchestrator shutting down")
            return True

        for invocation in self.invocations.values():
            if invocation.run and invocation.task is not None and not invocation.task.done():
                try:
                    await self.ctx.api.mutate(config.AGENTRUNS, invocation.run, failed, sub="status")
                except (ApiError, httpx.HTTPError) as exc:
                    self.ctx.log(f"orchestrator: could not mark {invocation.run} Failed: {exc}")

    async def _warm_up(self) -> None:
        """Qdrant collections and the catalog indexed, retried until Qdrant answers (the pod is not Ready before)."""
        base = self.ctx.env.get("QDRANT_URL", f"http://{config.QDRANT}:{config.QDRANT_PORT}")
        while True:
            try:
                for name in COLLECTIONS:
                    answer = await self.http.request(
                        "PUT",
                        f"{base}/collections/{name}",
                        json={"vectors": {"size": EMBEDDING_SIZE, "distance": "Cosine"}},
                    )
                    if answer.status_code not in (200, 409):
                        raise Unreachable(f"qdrant answered {answer.status_code} creating {name}")
                await self.tools.start(TOOLS_LIST_TIMEOUT)
                await self._index_catalog(base)
                await self.skills.start()
                return
            except (Unreachable, OSError, Exception) as exc:
                self.ctx.log(f"orchestrator: qdrant startup check failed, retrying: {exc}")
                await asyncio.sleep(1.0)

    async def _index_catalog(self, base: str) -> None:
        for kind, collection in (("tools", "tools"), ("agents", "agents")):  # skills: fakes.stack.skills
            items = await self.ctx.api.list(f"{kind}.{config.GROUP}")
            points = [
                {
                    "id": index + 1,
                    "vector": embed(
                        item["metadata"]["name"] + " " + str((item.get("spec") or {}).get("description", ""))
                    ),
                    "payload": {"name": item["metadata"]["name"]},
                }
                for index, item in enumerate(items)
            ]
            if points:
                await self.http.request(
                    "PUT", f"{base}/collections/{collection}/points?wait=true", json={"points": points}
                )

    # --- HTTP -------------------------------------------------------------------------------------------------

    async def _health(self, _: web.Request) -> web.Response:
        return web.json_response({"ok": not self.draining}, status=503 if self.draining else 200)

    def _caller(self, request: web.Request) -> str | None:
        header = request.headers.get("authorization", "")
        token = header[7:] if header.lower().startswith("bearer ") else ""
        return self.identities.get(token)

    async def _invoke(self, request: web.Request) -> web.Response:
        caller = self._caller(request)
        if caller is None:
            return json_error(401, "unrecognized bearer token")
        if self.draining:
            return json_error(503, "shutting down")
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return json_error(400, "body is not JSON")
        if isinstance(body, dict) and "input" not in body and isinstance(body.get("request"), str):
            session = body.get("session_id") or f"invoke:{secrets.token_hex(8)}"
            body = {**body, "input": body["request"], "session": session}
        if not isinstance(body, dict) or not all(isinstance(body.get(k), str) for k in ("session", "input")):
            return json_error(400, "need a JSON object with string fields session and input (or request)")
        try:
            tools = parse_tools(body.get("tools"))
        except BadTools as exc:
            return json_error(400, str(exc))
        sender = request.headers.get("x-agent-sender", "")
        signed = request.headers.get("x-agent-sender-assertion", "")
        asserted = (
            bool(sender)
            and bool(self.assertion_secret)
            and hmac.compare_digest(signed, sender_assertion(self.assertion_secret, sender))
        )
        invocation = Invocation(
            secrets.token_hex(8),
            body["session"],
            sender if asserted else caller,
            caller,
            body["input"],
            str(body.get("agent") or config.STUB_AGENT),
            identity=identity.invoke_caller(caller, sender if asserted else None),
            repository=str(body["repository"]) if body.get("repository") else None,
            tools=tools,
            tool_choice=body.get("tool_choice"),
            history=_history(body.get("messages")),
        )
        self.invocations[invocation.id] = invocation
        invocation.task = asyncio.ensure_future(self._turn(invocation))
        return web.json_response({"id": invocation.id, "status": "pending"}, status=202)

    async def _status(self, request: web.Request) -> web.Response:
        if self._caller(request) is None:
            return json_error(401, "unrecognized bearer token")
        invocation = self.invocations.get(request.match_info["id"])
        if invocation is None:
            return json_error(404, f"unknown invocation {request.match_info['id']}")
        return web.json_response(invocation.answer())

    # --- the turn ---------------------------------------------------------------------------------------------

    async def _turn(self, inv: Invocation) -> None:
        try:
            inv.text = await (self._planned_turn(inv) if inv.tools else self._run_turn(inv))
            inv.status = "succeeded"
        except TurnFailed as exc:
            inv.error = (
                f"agent {inv.agent} produced no reply within {config.LEGACY_NO_REPLY_MS}ms"
                if "legacy-no-reply-relabel" in self.ctx.bugs
                else str(exc)
            )
            inv.status = "failed"
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            inv.error = f"internal error in the orchestrator: {type(exc).__name__}: {exc}"
            inv.status = "failed"
        self.ctx.log(f"invocation {inv.id} {inv.status}: {inv.error or ''}")

    async def _planned_turn(self, inv: Invocation) -> str:
        """A turn with caller tools, always a new one: only chat resumes (see the module docstring)."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": inv.goal}]
        if inv.history and "invoke-resumes" in self.ctx.bugs:
            messages = inv.history  # the bug: the body's conversation, ending in a tool result, resumes the turn
        elif inv.history:
            self.ctx.log(
                f"invocation {inv.id}: its body's messages ({len(inv.history)}) are not read: /invoke has no message "
                "array, only chat resumes a turn"
            )
        plan = await self.planner.run(messages, inv.tools, inv.tool_choice)
        inv.pending = plan.tool_calls
        self.ctx.log(
            f"invocation {inv.id}: skill={plan.skill} advertised={plan.advertised} dropped={plan.dropped} "
            f"executed={plan.executed} pending={[c.name for c in plan.tool_calls]}"
        )
        return plan.text

    async def _run_turn(self, inv: Invocation) -> str:
        agent = await self.ctx.api.get(config.AGENTS, inv.agent)
        if agent is None:
            raise TurnFailed(f"agent {inv.agent} is not in the catalog (is the community-components release deployed?)")
        caller = inv.identity or identity.invoke_caller(inv.caller, inv.subject if inv.subject != inv.caller else None)
        if "subject-keying" in self.ctx.bugs:  # the shipped bug: every turn keyed by the gateway's own subject
            caller = identity.invoke_caller(caller.bearer, None)
        verdict = await self.gate.preflight(caller, inv.agent, inv.goal, inv.session, repository=inv.repository)
        if isinstance(verdict, identity.Park):
            inv.parked = True
            return verdict.text
        if isinstance(verdict, identity.Refuse):
            return verdict.text
        try:
            run = await self._live_run(inv.session)
            reattached = run is not None
            if run is None:
                run = await self._launch(inv, verdict)
        except RedisUnavailable as exc:
            raise TurnFailed(f"session store unavailable: {exc}") from None
        inv.run = run
        return await self._await_reply(inv, run, reattached)

    async def _live_run(self, session: str) -> str | None:
        raw = self.redis.get(f"sess:{session}")
        if not raw:
            return None
        run = json.loads(raw).get("run")
        obj = await self.ctx.api.get(config.AGENTRUNS, run) if run else None
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return None
        return run if (obj.get("status") or {}).get("phase") in ACTIVE else None

    async def _launch(self, inv: Invocation, launch: identity.Launch) -> str:
        name = f"{inv.agent}-{secrets.token_hex(4)}"
        run = {
            "apiVersion": f"{config.GROUP}/{config.VERSION}",
            "kind": "AgentRun",
            "metadata": {"name": name, "namespace": self.ctx.namespace},
            "spec": {
                "agentRef": inv.agent,
                "goal": inv.goal,
                "session": inv.session,
                "subject": launch.subject,
                "secretEnv": list(launch.secret_env),
                **launch.spec,
            },
        }
        try:
            await self.ctx.api.create(config.AGENTRUNS, run)
        except (ApiError, httpx.HTTPError) as exc:
            raise TurnFailed(f"could not create the AgentRun: {exc}") from None
        self.redis.set(f"sess:{inv.session}", json.dumps({"run": name, "invocation": inv.id}))
        self.ctx.log(f"launched AgentRun {name} for {inv.session}")
        return name

    async def _await_reply(self, inv: Invocation, run: str, reattached: bool) -> str:
        inbox: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        subjects = [f"agent.{run}.progress", f"agent.{run}.reply", f"agent.{run}.failed"]
        unsubscribe = [self.nats.subscribe(s, lambda subj, msg: inbox.put_nowait((subj, msg))) for s in subjects]
        window = self.ctx.timing.seconds("reattach_bound") if reattached else self.idle
        progress = 0
        try:
            while True:
                try:
                    subject, message = await asyncio.wait_for(inbox.get(), timeout=window)
                except TimeoutError:
                    raise TurnFailed(
                        f"agent {inv.agent} went silent for {window * 1000:.0f}ms after {progress} "
                        f"progress message(s) (AgentRun {run})"
                    ) from None
                if subject.endswith(".progress"):
                    progress += 1
                elif subject.endswith(".reply"):
                    self.nats.publish(f"agent.{run}.ack", {"offer": message.get("offer")})
                    return str(message.get("text", ""))
                else:
                    raise TurnFailed(
                        f"agent {inv.agent} failed: {message.get('error', 'no reason given')} (AgentRun {run})"
                    )
        finally:
            for undo in unsubscribe:
                undo()


def _history(raw: Any) -> list[dict[str, Any]]:
    """The message objects of a body's ``messages`` (anything else: none)."""
    return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []


def embed(text: str) -> list[float]:
    """A deterministic 1536-dimension character-hash embedding (the catalog only has to be indexed, not searched)."""
    vector = [0.0] * EMBEDDING_SIZE
    for index, char in enumerate(text):
        vector[(ord(char) * 31 + index) % EMBEDDING_SIZE] += 1.0
    return vector if any(vector) else [1.0] + [0.0] * (EMBEDDING_SIZE - 1)
