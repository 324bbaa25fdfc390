"""The cluster specs' pacing: every narration, silence, parked read, JWT lifetime, negative window and wait interval
a spec uses, as a formula over the stack's timing profile (:class:`specs.agent_controller.timing.Profile`).

A spec never copies a number from upstream: it asks this module, with the session's ``profile`` fixture (the
values deployed on the target: a cluster's own, or the twin's divided by its time scale). So a spec paces the stack
as the stack is actually set up, at K=1 (the stack's real cadence) as at the twin's default scale, and an expected
message (``went silent for <idle window in ms>ms``) is the one the deployed stack prints.

Each formula keeps upstream's value at scale 1 where upstream had one (README §6), and its docstring says what the
multiple is for. Where a window must hold work the time scale does not shrink (a chat request through a
port-forward and a pre-flight on a loaded machine, a JWT's whole-second expiry), the formula has a floor
(:data:`PROMPT_FLOOR`, :data:`JWT_FLOOR`) and says so: the spec stays meaningful at any scale, only less faster.

:data:`RELATIONS` names what the specs rely on between these values (``factor * smaller + headroom <= larger``,
each headroom a formula too, so it scales): checked once, against the deployed profile, before the first cluster
spec.

Failure-path budgets (how long to wait for something that should happen at once or soon: an AgentRun, a comment,
a rollout) are not here: they are generous named literals in :mod:`specs.cluster.stack`.
"""

from __future__ import annotations

from collections.abc import Callable

from specs.agent_controller.timing import Profile, Quantity, Relation, committed_profile, value

AT_SCALE_1 = committed_profile(1.0)
"""The committed profile at time scale 1: the largest value of every timing, for what is fixed at import (a
pytest-timeout marker), so the marker fits the slowest target the specs run against with the committed values."""

# --- floors: work the time scale does not shrink ----------------------------------------------------------------

PROMPT_FLOOR = 5.0
"""Seconds a chat client reads at least before leaving a turn parked: the link prompt "streams at once", but at once
is a pre-flight (credential Secrets read through the API server) and a stream through ``kubectl port-forward`` on a
loaded 2-core machine, which no time scale shortens."""
JWT_FLOOR = 6.0
"""Seconds a JWT that must expire during a parked turn is valid at least: ``exp`` counts whole seconds (up to 1 s is
lost to the floor of ``now + expires_in``), and the turn must reach its first pre-flight with the JWT still valid,
through a port-forward on a loaded machine."""


# --- the pacing of each spec -------------------------------------------------------------------------------------


def wait_interval(p: Profile) -> float:
    """Seconds between a spec's looks at the stack (a wait's attempts, a negative window's checks): the gateway's
    own poll interval (upstream's 2 s ``wait_for`` interval), so a spec looks as often as the stack moves."""
    return p.poll_interval


def trigger_spacing(p: Profile) -> float:
    """Seconds upstream leaves between one trigger and the next (about 20 s): the gateway's resume wait, inside
    which a second trigger of a conversation may be taken as the resume of the first."""
    return p.resume_wait


def nothing_more(p: Profile) -> float:
    """Seconds a spec watches for something that must not come after a turn ended (a second comment, another
    AgentRun): half the trigger spacing, so no other spec's trigger lands in the window, yet several gateway polls
    long, so a duplicate the gateway started would have shown."""
    return trigger_spacing(p) / 2


def narration(p: Profile) -> float:
    """Seconds the stub narrates in the narrating spec (upstream's 60 s): twice the idle window, so only the
    narration keeps the run alive past it, and short enough to end well inside the gateway's poll budget."""
    return 2 * p.idle_window


def narration_cadence(p: Profile) -> float:
    """Seconds between the narrating stub's messages (upstream's 5 s): six per idle window, each resetting it."""
    return p.idle_window / 6


def silence(p: Profile) -> float:
    """Seconds the stub stays silent in the silent-agent specs (upstream's 60 s): twice the idle window, so the
    orchestrator's idle window, not the end of the silence, ends the turn."""
    return 2 * p.idle_window


def went_silent(p: Profile) -> str:
    """The orchestrator's words for a silent agent: ``went silent for <idle window in ms>ms``."""
    return f"went silent for {round(p.idle_window * 1000)}ms"


def reply_hold_ms(p: Profile) -> str:
    """The stub Agent's ``AGENT_REPLY_ACK_TIMEOUT_MS`` as its ``spec.env`` stores it (milliseconds, a string)."""
    return str(round(p.reply_hold * 1000))


def roll_narration(p: Profile) -> float:
    """Seconds the stub narrates while a spec rolls a service (upstream's 20 s): the orchestrator's shutdown drain
    and two readiness periods, so the run is live across the whole roll (the old pod has drained and gone, the new
    one is ready) and its reply is produced after it, to be held; yet well inside the poll budget."""
    return p.shutdown_drain + 2 * p.readiness_period


def roll_cadence(p: Profile) -> float:
    """Seconds between the stub's messages while a service rolls (upstream's 2 s): the stub's own default cadence."""
    return p.stub_cadence


def long_narration(p: Profile) -> float:
    """Seconds the stub narrates across a gateway roll in the label-durability spec (upstream's 120 s): the poll
    budget and one idle window more, so the turn ends with the gateway's poll-timeout comment, not the reply."""
    return p.poll_budget + p.idle_window


def bounce_narration(p: Profile) -> float:
    """Seconds the stub narrates across a NATS bounce (upstream's 50 s): twice the bounce (the old pod's lame duck
    and the new pod's start), so the bounce lands inside it."""
    return 2 * (p.nats_lame_duck + p.nats_restart)


def retrigger_comment(p: Profile) -> float:
    """Seconds a re-triggered turn's comment may take: the gateway's poll budget and one re-offer interval more,
    so the wait ends on the gateway's own answer (the collected reply, or its poll-timeout comment), never before."""
    return p.poll_budget + p.reply_reoffer


def jwt_lifetime(p: Profile) -> float:
    """Seconds a parked turn's JWT stays valid (upstream's 15 s): four resumes, at least :data:`JWT_FLOOR` (whole
    seconds; the turn must arrive with it valid), so resumes run both before and after it expires."""
    return max(4 * p.resume_every, JWT_FLOOR)


def parked_hold(p: Profile) -> float:
    """Seconds the client holds a parked turn whose JWT expires (upstream's 75 s): the JWT's lifetime and fifteen
    resumes more, so a resume that wrongly falls back to the shared subject happens inside the hold."""
    return jwt_lifetime(p) + 15 * p.resume_every


def park_watch(p: Profile) -> float:
    """Seconds a parked chat turn is read while nothing may launch (upstream's 90 s): twenty resumes of it."""
    return 20 * p.resume_every


def owner_park(p: Profile) -> float:
    """Seconds the owner's turn is read before the client leaves it parked (upstream's 10 s): two keep-alives, at
    least :data:`PROMPT_FLOOR` (its prompt streams at once, but through work no scale shortens)."""
    return max(2 * p.chat_keepalive, PROMPT_FLOOR)


def parked_read(p: Profile) -> float:
    """Seconds the client reads a parked turn before its own deadline ends the read (upstream's 20 s): four
    keep-alives, so a held stream shows them; at least :data:`PROMPT_FLOOR`."""
    return max(4 * p.chat_keepalive, PROMPT_FLOOR)


def jwt_valid(p: Profile) -> float:
    """Seconds a JWT that must stay valid is minted for: as long as a parked turn is kept, so it outlives any read."""
    return p.park_hold


def nothing_launched(p: Profile) -> float:
    """Seconds nothing may launch after a refused or parked chat turn (upstream's 20 s): five resumes, so a resume
    that wrongly launches does so inside the window; no longer than the trigger spacing."""
    return 5 * p.resume_every


def keying_window(p: Profile) -> float:
    """Seconds at most that a webhook control waits for nothing to launch (upstream's 60 s; the gateway's comment
    ends it earlier): three trigger spacings, past the resume wait the gateway may hold a parked turn for."""
    return 3 * trigger_spacing(p)


# --- what the specs rely on between values ------------------------------------------------------------------------


def pacing(what: str, formula: Callable[[Profile], float], how: str, *names: str) -> Quantity:
    """A spec's pacing as a :class:`Quantity`: its origin says how it is made and where each value came from."""

    def origin(p: Profile) -> str:
        return f"{how}; " + "; ".join(f"{name} from {p.source(name)}" for name in names)

    return Quantity(what, formula, origin)


POLL_BUDGET = value("poll_budget", "the gateway's poll budget")
IDLE_WINDOW = value("idle_window", "the orchestrator's idle window")
SHUTDOWN_DRAIN = value("shutdown_drain", "the orchestrator's shutdown drain")
POD_GRACE = value("pod_grace", "the orchestrator's pod grace")
REPLY_HOLD = value("reply_hold", "the agent's reply hold")
REPLY_REOFFER = value("reply_reoffer", "the agent's reply re-offer interval")
REATTACH_BOUND = value("reattach_bound", "a re-attached wait's bound")
RESUME_EVERY = value("resume_every", "a parked chat turn's resume interval")
CHAT_KEEPALIVE = value("chat_keepalive", "a chat stream's keep-alive interval")
POLL_INTERVAL = value("poll_interval", "the gateway's poll interval")
RESUME_WAIT = value("resume_wait", "the gateway's resume wait")
STUB_CLAMP = value("stub_clamp", "the stub agent's pacing clamp")
PARK_HOLD = value("park_hold", "a parked chat turn's hold")

NARRATION = pacing("narration", narration, "2 x idle window", "idle_window")
NARRATION_CADENCE = pacing("the narration's cadence", narration_cadence, "idle window / 6", "idle_window")
ROLL_CADENCE = pacing("the narration's cadence during a roll", roll_cadence, "the stub's cadence", "stub_cadence")
SILENCE = pacing("silence", silence, "2 x idle window", "idle_window")
ROLL_NARRATION = pacing(
    "narration during a roll",
    roll_narration,
    "shutdown drain + 2 x readiness period",
    "shutdown_drain",
    "readiness_period",
)
LONG_NARRATION = pacing(
    "narration across a gateway roll", long_narration, "poll budget + idle window", "poll_budget", "idle_window"
)
BOUNCE_NARRATION = pacing(
    "narration across a NATS bounce",
    bounce_narration,
    "2 x (lame duck + restart)",
    "nats_lame_duck",
    "nats_restart",
)
JWT_LIFETIME = pacing(
    "the parked turn's JWT lifetime", jwt_lifetime, "4 x resume interval, at least 6 s", "resume_every"
)
PARKED_HOLD = pacing("the parked turn's hold", parked_hold, "JWT lifetime + 15 x resume interval", "resume_every")
PARKED_READ = pacing("a parked read", parked_read, "4 x keep-alive, at least 5 s", "chat_keepalive")
OWNER_PARK = pacing("the owner's park", owner_park, "2 x keep-alive, at least 5 s", "chat_keepalive")
PARK_WATCH = pacing("a parked chat watch", park_watch, "20 x resume interval", "resume_every")
NOTHING_MORE = pacing("a nothing-more window", nothing_more, "resume wait / 2", "resume_wait")
NOTHING_LAUNCHED = pacing("a nothing-launched window", nothing_launched, "5 x resume interval", "resume_every")
KEYING_WINDOW = pacing("the keying controls' window", keying_window, "3 x resume wait", "resume_wait")
TRIGGER_SPACING = pacing("the spacing between triggers", trigger_spacing, "the resume wait", "resume_wait")

RELATIONS: tuple[Relation, ...] = (
    Relation(
        "the narration ends well inside the poll budget (the launch, up to an idle window, comes first)",
        NARRATION,
        POLL_BUDGET,
        headroom=lambda p: p.idle_window,
    ),
    Relation("the silence is at least twice the idle window", IDLE_WINDOW, SILENCE, factor=2),
    Relation(
        "the idle window fails a silent run well inside the poll budget (the silence, not the poll, ends the turn)",
        IDLE_WINDOW,
        POLL_BUDGET,
        headroom=lambda p: p.idle_window,
    ),
    Relation("the narration's cadence resets the idle window several times", NARRATION_CADENCE, IDLE_WINDOW, 3),
    Relation("a roll's narration cadence resets the idle window several times", ROLL_CADENCE, IDLE_WINDOW, 3),
    Relation(
        "a narration during a roll outlasts the shutdown drain and the new pod's first readiness probe",
        SHUTDOWN_DRAIN,
        ROLL_NARRATION,
        headroom=lambda p: p.readiness_period,
    ),
    Relation(
        "a narration during a roll, its launch and one re-offer end inside the poll budget (the reply is posted)",
        ROLL_NARRATION,
        POLL_BUDGET,
        headroom=lambda p: p.idle_window + p.reply_reoffer,
    ),
    Relation(
        "the narration across a gateway roll outlasts the poll budget (the turn ends with the poll's timeout)",
        POLL_BUDGET,
        LONG_NARRATION,
        headroom=lambda p: p.poll_interval,
    ),
    Relation(
        "a narration across a NATS bounce ends inside the poll budget",
        BOUNCE_NARRATION,
        POLL_BUDGET,
        headroom=lambda p: p.idle_window,
    ),
    Relation("every stub pacing fits the stub's clamp", LONG_NARRATION, STUB_CLAMP),
    Relation("the held reply is re-offered several times within the hold", REPLY_REOFFER, REPLY_HOLD, 3),
    Relation("a re-attached wait sees at least two re-offers", REPLY_REOFFER, REATTACH_BOUND, 2),
    Relation("the JWT outlives several resumes", RESUME_EVERY, JWT_LIFETIME, 3),
    Relation(
        "the parked turn is held for many resumes past its JWT's expiry",
        JWT_LIFETIME,
        PARKED_HOLD,
        headroom=lambda p: 10 * p.resume_every,
    ),
    Relation("a parked read spans several keep-alives", CHAT_KEEPALIVE, PARKED_READ, 3),
    Relation("the owner's park spans a keep-alive", CHAT_KEEPALIVE, OWNER_PARK),
    Relation("a parked chat watch fits the park hold", PARK_WATCH, PARK_HOLD),
    Relation("a nothing-more window is shorter than the spacing between triggers", NOTHING_MORE, TRIGGER_SPACING),
    Relation("a nothing-more window spans several gateway polls", POLL_INTERVAL, NOTHING_MORE, 4),
    Relation(
        "a nothing-launched window is no longer than the spacing between triggers", NOTHING_LAUNCHED, TRIGGER_SPACING
    ),
    Relation("a nothing-launched window spans several resumes", RESUME_EVERY, NOTHING_LAUNCHED, 4),
    Relation(
        "the keying controls' window outlasts the resume wait the gateway may hold a parked turn for",
        RESUME_WAIT,
        KEYING_WINDOW,
        headroom=lambda p: p.resume_wait,
    ),
    # a rollout during a turn must never fail the live run (failure mode 30): the kubelet kills after the grace
    Relation("a stopping orchestrator drains before the kubelet kills it", SHUTDOWN_DRAIN, POD_GRACE),
)
"""What the cluster specs rely on between profile values, each with the headroom its spec needs (README §6)."""
