"""The integration gateway's twin: signed GitHub webhooks in, a relayed turn, a comment and a label removal out.

``POST /webhooks/github`` checks ``X-Hub-Signature-256`` (HMAC-SHA256 of the raw body with
``GITHUB_WEBHOOK_SECRET``, SHA-256 only, constant-time) before parsing; a mismatch is 401. Otherwise it answers 202
at once, also for events it ignores, and works in the background:

- only ``issues``/``labeled`` with a label an IntegrationRoute names (:mod:`fakes.stack.routes`: ``ai-triage`` ->
  ``stub-agent``, ``ai-review`` -> ``stub-swe-agent``) starts a turn, for the route's agent with the route's
  rendered ``promptTemplate`` as its goal and the event's repository; the bot (``e2e-bot``), any
  ``Bot`` sender and senders outside the allowlist are dropped silently: no error, no AgentRun; a delivery id seen
  before (a redelivery: same ``X-GitHub-Delivery``) is ignored, also after a restart (the ids are on the outbox's
  volume claim; the twin's reading, unverified: specs/cluster/README.md §9);
- the session is ``github:<owner>/<repo>#<n>``, the subject ``github:<lower-cased login>``; the turn goes to the
  orchestrator (``POST /invoke`` with the bearer ``e2e-gateway-token`` and a signed sender assertion), then
  ``GET /invoke/<id>`` every ``POLL_INTERVAL_MS`` for up to ``POLL_TIMEOUT_MS`` (2 s and 90 s at scale 1);
- the answer is posted on the issue: ``<!-- agent-controller:reply -->`` and the reply, or ``Something went wrong
  processing this: <error>`` (the orchestrator's error; the poll budget running out; the orchestrator no longer
  knowing the invocation because it restarted);
- then the label that triggered the turn is deleted (a 404 counts as done).

The internal identity-link API (:mod:`fakes.stack.identity_link`) is served on the same port.

The outbox: every accepted turn is written to the gateway's volume claim before the 202 and updated at each step
(invocation id and poll deadline, comment posted, label removed), so a gateway restart loses nothing: at start-up
a sweep resumes every unfinished turn where it stopped. GitHub calls send ``accept: application/vnd.github+json``
and ``x-github-api-version: 2022-11-28`` with the bearer ``GITHUB_TOKEN``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import quote

import httpx
from aiohttp import web

from fakes.stack import config
from fakes.stack.cluster_api import ApiError
from fakes.stack.http import Listener, healthy, json_error
from fakes.stack.identity_link import IdentityLinkApi
from fakes.stack.network import Unreachable
from fakes.stack.node import PodContext
from fakes.stack.orchestrator import sender_assertion
from fakes.stack.routes import issue_label_route

OUTBOX_CLAIM = "integration-gateway-outbox"
GITHUB_RETRIES = 5
SEEN_LIMIT = 10_000


class Gateway:
    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        env = ctx.env
        self.secret = env.get("GITHUB_WEBHOOK_SECRET", "")
        self.label = env.get("GITHUB_TRIGGER_LABEL", config.TRIGGER_LABEL)
        self.bot = env.get("GITHUB_BOT_LOGIN", config.BOT_LOGIN)
        self.allow = {s.strip() for s in env.get("GITHUB_SENDER_ALLOWLIST", "").split(",") if s.strip()}
        self.interval = ctx.env_ms("POLL_INTERVAL_MS", ctx.timing.seconds("poll_interval"))
        self.budget = ctx.env_ms("POLL_TIMEOUT_MS", ctx.timing.seconds("poll_budget"))
        self.github = env.get("GITHUB_API_URL", "http://fake-github").rstrip("/")
        self.orchestrator = env.get("ORCHESTRATOR_URL", "http://agent-orchestrator-invoke:8081").rstrip("/")
        self.token = env.get("GITHUB_TOKEN", "")
        self.outbox: dict[str, dict[str, Any]] = ctx.volume(OUTBOX_CLAIM).setdefault("turns", {})
        self.seen: dict[str, float] = ctx.volume(OUTBOX_CLAIM).setdefault("seen", {})
        self.http = ctx.client(timeout=10.0)
        self.tasks: set[asyncio.Task[None]] = set()
        app = web.Application()
        app.router.add_get("/healthz", healthy)
        app.router.add_post("/webhooks/github", self._webhook)
        IdentityLinkApi(ctx, self.http).add_routes(app)
        self.listener = Listener(app)

    async def start(self) -> None:
        self.ctx.map_port(config.GATEWAY_PORT, await self.listener.start())
        pending = list(self.outbox.values())
        if pending:
            self.ctx.log(f"gateway: start-up sweep resumes {len(pending)} unfinished turn(s)")
        for turn in pending:
            self._spawn(turn, swept=True)

    async def stop(self, grace: float) -> None:
        await self.listener.stop()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.http.aclose()

    def _spawn(self, turn: dict[str, Any], *, swept: bool = False) -> None:
        task = asyncio.ensure_future(self._relay(turn, swept))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # --- the webhook ------------------------------------------------------------------------------------------

    async def _webhook(self, request: web.Request) -> web.Response:
        raw = await request.read()
        if not self._signed(raw, request.headers.get("x-hub-signature-256", "")):
            return json_error(401, "signature does not match the webhook secret")
        try:
            payload = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return json_error(400, "body is not JSON")
        delivery = request.headers.get("x-github-delivery", "")
        event = request.headers.get("x-github-event", "")
        try:
            turn = await self._turn_for(event, payload, delivery) if isinstance(payload, dict) else None
        except (ApiError, httpx.HTTPError) as exc:  # the routes cannot be read: GitHub redelivers on a 5xx
            self.ctx.log(f"gateway: reading IntegrationRoutes failed: {exc}")
            return json_error(503, f"cannot read IntegrationRoutes: {exc}")
        if turn is not None:
            self.outbox[turn["id"]] = turn  # durable before the 202: a restart right now loses nothing
            self._spawn(turn)
        return web.json_response({"accepted": True}, status=202)

    def _signed(self, raw: bytes, header: str) -> bool:
        if not self.secret or not header.startswith("sha256=") or not header.isascii():
            return False
        expected = "sha256=" + hmac.new(self.secret.encode(), raw, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, header)

    async def _turn_for(self, event: str, payload: dict[str, Any], delivery: str) -> dict[str, Any] | None:
        if event != "issues" or payload.get("action") != "labeled":
            return None
        label = str((payload.get("label") or {}).get("name", ""))
        route = await issue_label_route(self.ctx.api, label)
        if route is None:
            return None
        sender = payload.get("sender") or {}
        login = str(sender.get("login", ""))
        if self._dropped(sender, login):
            self.ctx.log(f"gateway: dropped {delivery or 'a delivery'} from {login or 'nobody'} (not allowed)")
            return None
        if delivery and delivery in self.seen and "redelivery-runs-twice" not in self.ctx.bugs:
            self.ctx.log(f"gateway: delivery {delivery} seen before (a redelivery): ignored")
            return None
        repo = payload.get("repository") or {}
        issue = payload.get("issue") or {}
        owner = str((repo.get("owner") or {}).get("login", ""))
        name = str(repo.get("name", ""))
        number = issue.get("number")
        if not owner or not name or not isinstance(number, int):
            return None
        if delivery:
            self.seen[delivery] = time.time()
            if len(self.seen) > SEEN_LIMIT:
                for old in sorted(self.seen, key=self.seen.__getitem__)[: len(self.seen) - SEEN_LIMIT]:
                    del self.seen[old]
        return {
            "id": delivery or f"turn-{time.time_ns()}",
            "owner": owner,
            "repo": name,
            "number": number,
            "session": f"github:{owner}/{name}#{number}",
            "subject": f"github:{login.lower()}",
            "login": login,
            "label": label,
            "agent": route.agent,
            "repository": f"{owner}/{name}",
            "input": route.render(
                {
                    "repository": f"{owner}/{name}",
                    "owner": owner,
                    "name": name,
                    "number": str(number),
                    "title": str(issue.get("title", "")),
                    "body": str(issue.get("body") or ""),
                }
            ),
            "step": "relay",
            "invocation": None,
            "deadline": None,
            "answer": None,
        }

    def _dropped(self, sender: dict[str, Any], login: str) -> bool:
        """The bot itself, any ``Bot`` sender and logins outside the allowlist start nothing (a reply loop and a
        stranger's label otherwise cost a turn each)."""
        if "bot-events-not-dropped" in self.ctx.bugs:  # the broken version: no sender filter at all
            return False
        return sender.get("type") == "Bot" or login == self.bot or login not in self.allow

    # --- the relay --------------------------------------------------------------------------------------------

    async def _relay(self, turn: dict[str, Any], swept: bool) -> None:
        try:
            if swept and turn["step"] == "done":  # only kept while duplicate-reply-after-restart was on
                if "duplicate-reply-after-restart" not in self.ctx.bugs:  # switched off since: the fixed version
                    self.outbox.pop(turn["id"], None)  # never kept it, so it posts nothing again
                    return
                turn["step"] = "comment"  # the broken version: the sweep posts the reply it holds again
            if turn["step"] == "relay":
                turn["answer"] = await self._ask(turn)
                turn["step"] = "comment"
            if turn["step"] == "comment":
                await self._github(
                    "POST",
                    f"/repos/{turn['owner']}/{turn['repo']}/issues/{turn['number']}/comments",
                    {"body": turn["answer"]},
                )
                turn["step"] = "label"
                if "unstubbed-github-call" in self.ctx.bugs:
                    await self._github(
                        "POST",
                        f"/repos/{turn['owner']}/{turn['repo']}/issues/{turn['number']}/assignees",
                        {"assignees": [turn["login"]]},
                        tolerate=(501,),
                    )
            if turn["step"] == "label":
                if swept and "label-kept-after-restart" in self.ctx.bugs:
                    self.ctx.log(f"gateway: swept turn {turn['id']} done (label left in place)")
                else:
                    await self._github(
                        "DELETE",
                        f"/repos/{turn['owner']}/{turn['repo']}/issues/{turn['number']}"
                        f"/labels/{quote(turn.get('label', self.label), safe='')}",
                        None,
                        tolerate=(404,),
                    )
            if "duplicate-reply-after-restart" in self.ctx.bugs:
                turn["step"] = "done"  # the broken version: an answered turn stays in the outbox, its reply held
            else:
                self.outbox.pop(turn["id"], None)
            self.ctx.log(f"gateway: turn {turn['id']} for {turn['session']} finished")
        except asyncio.CancelledError:
            raise  # the outbox keeps the turn for the next gateway's sweep
        except Exception as exc:  # any failure: keep the turn in the outbox; say why
            self.ctx.log(f"gateway: turn {turn['id']} stopped at {turn['step']}: {type(exc).__name__}: {exc}")

    async def _ask(self, turn: dict[str, Any]) -> str:
        """The comment body for the turn: the reply, or the error (never raises for the orchestrator's failures)."""
        if turn["invocation"] is None:
            turn["deadline"] = time.time() + self.budget
            try:
                turn["invocation"] = await self._submit(turn)
            except (Unreachable, httpx.HTTPError, ValueError) as exc:
                return f"{config.ERROR_PREFIX} the orchestrator did not accept the turn: {exc}"
        while time.time() < turn["deadline"]:
            await asyncio.sleep(self.interval)
            try:
                answer = await self.http.request(
                    "GET", f"{self.orchestrator}/invoke/{turn['invocation']}", headers=self._orchestrator_headers(turn)
                )
            except (Unreachable, httpx.HTTPError):
                continue  # a restarting orchestrator: poll again
            if answer.status_code == 404:
                return (
                    f"{config.ERROR_PREFIX} the orchestrator no longer knows invocation {turn['invocation']} "
                    "(it restarted while the turn was in flight); add the label again to collect the reply"
                )
            if answer.status_code != 200:
                continue
            body = answer.json()
            if body.get("status") == "succeeded":
                return f"{config.REPLY_MARKER}\n{(body.get('result') or {}).get('text', '')}"
            if body.get("status") == "failed":
                return f"{config.ERROR_PREFIX} {body.get('error')}"
        return (
            f"{config.ERROR_PREFIX} no answer from the orchestrator within {self.budget * 1000:.0f}ms "
            f"(invocation {turn['invocation']} still pending)"
        )

    async def _submit(self, turn: dict[str, Any]) -> str:
        last: Exception | None = None
        while time.time() < turn["deadline"]:
            try:
                answer = await self.http.request(
                    "POST",
                    f"{self.orchestrator}/invoke",
                    headers=self._orchestrator_headers(turn),
                    json={
                        "session": turn["session"],
                        "input": turn["input"],
                        "agent": turn.get("agent"),
                        "repository": turn.get("repository"),
                    },
                )
                if answer.status_code == 202:
                    return str(answer.json()["id"])
                last = ValueError(f"POST /invoke answered {answer.status_code}: {answer.text[:200]}")
            except (Unreachable, httpx.HTTPError) as exc:
                last = exc
            await asyncio.sleep(self.interval)
        raise ValueError(f"no orchestrator accepted it within {self.budget * 1000:.0f}ms: {last}")

    def _orchestrator_headers(self, turn: dict[str, Any]) -> dict[str, str]:
        secret = self.ctx.env.get("GATEWAY_SENDER_ASSERTION_SECRET", "")
        return {
            "authorization": f"Bearer {self.ctx.env.get('GATEWAY_ORCHESTRATOR_TOKEN', '')}",
            "x-agent-sender": turn["subject"],
            "x-agent-sender-assertion": sender_assertion(secret, turn["subject"]),
        }

    async def _github(
        self, method: str, path: str, body: dict[str, Any] | None, *, tolerate: tuple[int, ...] = ()
    ) -> None:
        """One GitHub call, retried on 5xx and refused connections (bounded); raises when it never succeeds."""
        headers = {
            "authorization": f"Bearer {self.token}",
            "accept": "application/vnd.github+json",
            "x-github-api-version": "2022-11-28",
        }
        last = ""
        for attempt in range(GITHUB_RETRIES):
            try:
                answer = await self.http.request(method, f"{self.github}{path}", headers=headers, json=body)
                if answer.status_code < 300 or answer.status_code in tolerate:
                    return
                last = f"{method} {path} answered {answer.status_code}: {answer.text[:200]}"
                if answer.status_code < 500:
                    break
            except (Unreachable, httpx.HTTPError) as exc:
                last = f"{method} {path}: {type(exc).__name__}: {exc}"
            await asyncio.sleep(min(2.0 * (attempt + 1), 10.0))
        raise RuntimeError(last)
