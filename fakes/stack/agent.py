"""The stub agent: the agent runtime's real protocol with no model behind it (the Job container of every run).

Pacing comes from the environment, i.e. the Agent's ``spec.env`` at launch (the harness patches only the
``STUB_*`` entries; failure mode 44 in specs/cluster/README.md):

- ``STUB_SILENT_FOR_MS`` (default 0): say nothing at all for this long first;
- ``STUB_NARRATE_FOR_MS`` (default 0) and ``STUB_NARRATE_EVERY_MS`` (default ``stub_cadence``, 2 s; 0 means the
  default): a progress message every so often for this long (each resets the orchestrator's idle window);
- then the reply, re-offered every ``AGENT_REPLY_ACK_RETRY_MS`` (default ``reply_reoffer``, 10 s) until the
  orchestrator acknowledges it, for at most ``AGENT_REPLY_ACK_TIMEOUT_MS`` (90 s in e2e; ``reply_hold_unset``, 10
  min, when the variable is missing). Acknowledged: exit 0. Never acknowledged: exit 1 (the run fails).

Knobs are clamped to ``stub_clamp`` (10 min); junk gives the default. The defaults and the clamp are the twin's
timing profile (:mod:`fakes.stack.profile`, at its time scale). The reply starts ``stub-agent-reply``, echoes the
goal (cut at 200 characters) and names which of ``AGENT_ACTOR_LOGIN``, ``CLAUDE_CODE_OAUTH_TOKEN``,
``CLAUDE_LOGIN_CREDENTIALS_JSON`` and ``GITHUB_TOKEN`` it was given. A NATS client that gives up reconnecting ends
the agent with exit 1 (the agent side of a NATS bounce).
"""

from __future__ import annotations

import asyncio
import time

from fakes.stack import config
from fakes.stack.nats import NatsClient, NatsClosed
from fakes.stack.node import PodContext


def knob(env: dict[str, str], name: str, default: float, *, clamp: float) -> float:
    """``env[name]`` milliseconds as seconds, at most ``clamp`` seconds; missing, junk or negative gives ``default``."""
    try:
        value = float(env[name]) / 1000.0
    except (KeyError, ValueError):
        return default
    if value != value or value < 0:
        return default
    return min(value, clamp)


class StubAgent:
    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        env = ctx.env
        self.run = env.get("AGENT_RUN_NAME", ctx.name)
        timing = ctx.timing
        clamp = timing.seconds("stub_clamp")
        cadence, reoffer = timing.seconds("stub_cadence"), timing.seconds("reply_reoffer")
        self.silent = knob(env, "STUB_SILENT_FOR_MS", 0.0, clamp=clamp)
        self.narrate = knob(env, "STUB_NARRATE_FOR_MS", 0.0, clamp=clamp)
        self.every = knob(env, "STUB_NARRATE_EVERY_MS", cadence, clamp=clamp) or cadence
        self.retry = knob(env, "AGENT_REPLY_ACK_RETRY_MS", reoffer, clamp=clamp) or reoffer
        self.hold = knob(env, "AGENT_REPLY_ACK_TIMEOUT_MS", timing.seconds("reply_hold_unset"), clamp=clamp)
        self.exit_code: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.acked = asyncio.Event()
        self.nats = NatsClient(
            ctx.node, env.get("NATS_URL", "nats://nats:4222"), name=self.run, on_closed=self._nats_closed
        )
        self.main: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.main = asyncio.ensure_future(self._live())

    async def stop(self, grace: float) -> None:
        if self.main is not None:
            self.main.cancel()
        await self.nats.close()
        self._exit(143, "terminated")

    def _exit(self, code: int, why: str) -> None:
        if not self.exit_code.done():
            self.ctx.log(f"stub-agent: exit {code}: {why}")
            self.exit_code.set_result(code)

    def _nats_closed(self, reason: str) -> None:
        if self.main is not None:
            self.main.cancel()
        self._exit(1, reason)

    async def _live(self) -> None:
        try:
            await self.nats.connect()
            self.nats.subscribe(f"agent.{self.run}.ack", lambda *_: self.acked.set())
            if self.silent:
                await asyncio.sleep(self.silent)
            started = time.monotonic()
            sent = 0
            while time.monotonic() - started < self.narrate:
                sent += 1
                self.nats.publish(f"agent.{self.run}.progress", {"n": sent, "text": f"working ({sent})"})
                await asyncio.sleep(min(self.every, max(0.0, self.narrate - (time.monotonic() - started))) or 0.001)
            await self._reply()
        except NatsClosed as exc:
            self._exit(1, str(exc))

    async def _reply(self) -> None:
        text = self.reply_text()
        deadline = time.monotonic() + self.hold
        offer = 0
        # The broken version (reply-reoffer-stalls): one offer, then only a wait for the whole hold.
        retry = self.hold if "reply-reoffer-stalls" in self.ctx.bugs else self.retry
        while time.monotonic() < deadline:
            offer += 1
            self.nats.publish(f"agent.{self.run}.reply", {"text": text, "offer": offer})
            try:
                await asyncio.wait_for(self.acked.wait(), timeout=min(retry, deadline - time.monotonic()))
                self._exit(0, f"reply acknowledged after {offer} offer(s)")
                return
            except TimeoutError:
                continue
        self._exit(1, f"reply never acknowledged within {self.hold * 1000:.0f}ms ({offer} offers)")

    def reply_text(self) -> str:
        goal = self.ctx.env.get("AGENT_GOAL", "")[:200]
        given = [name for name in config.STUB_REPORTED_ENV if self.ctx.env.get(name)]
        return f"{config.STUB_REPLY_PREFIX}: {goal}\n\nenvironment given: {', '.join(given) or 'none'}"
