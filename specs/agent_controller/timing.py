"""The stack's timing profile as the cluster specs use it: every value in seconds, with where it came from.

A :class:`Profile` holds each value of ``fakes/stack/profile.toml`` (the committed profile: what each value is and
where a cluster keeps it). :func:`committed_profile` is the file's own values (at a time scale); the cluster specs
read the deployed target's instead (``read_profile``), the twin's and a cluster's alike, so every budget, pacing,
negative window and expected message is a formula over what is actually deployed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields

from fakes.stack.profile import PROFILE, load


@dataclass(frozen=True)
class Profile:
    """Seconds (floats) unless the name says count; ``sources[name]`` says where each value was read."""

    poll_interval: float
    poll_budget: float
    resume_wait: float
    idle_window: float
    shutdown_drain: float
    reply_hold: float
    pod_grace: float
    readiness_period: float
    reply_reoffer: float
    stub_cadence: float
    stub_clamp: float
    resume_every: float
    park_hold: float
    chat_keepalive: float
    heartbeat: float
    reattach_bound: float
    nats_reconnect_wait: float
    nats_reconnects: int
    nats_lame_duck: float
    nats_restart: float
    retention_sweep: float
    scale: float = 1.0
    """The twin's time scale (1 on a cluster): every timing above is the stack's own divided by it, or a floor."""
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def source(self, name: str) -> str:
        """Where ``name`` was read (an object and field, or the committed profile)."""
        return self.sources.get(name, f"committed profile {PROFILE.name}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name not in ("scale", "sources"))


def committed_profile(scale: float = 1.0) -> Profile:
    """The committed profile's values at time scale ``scale`` (what a twin started with ``--time-scale`` runs)."""
    entries = load()
    values: dict[str, float | int] = {}
    for name in Profile.names():
        entry = entries[name]
        values[name] = entry.count if entry.count is not None else entry.scaled(scale)
    sources = {name: _committed_source(name, scale) for name in values}
    return Profile(**values, scale=scale, sources=sources)  # type: ignore[arg-type]


def _committed_source(name: str, scale: float) -> str:
    scaled = f", divided by time scale {scale:g}" if scale != 1 else ""
    return f"committed profile {PROFILE.name} [{name}]{scaled}"


# --- relations between values: what a spec relies on, checked once against what is deployed ----------------------


@dataclass(frozen=True)
class Quantity:
    """A named number of seconds computed from a profile: a deployed value, a rhythm, or a spec's pacing formula.

    ``formula(profile)`` gives the seconds; ``origin(profile)`` says where they came from (a profile value's source,
    or how a pacing formula is made of profile values)."""

    name: str
    formula: Callable[[Profile], float]
    origin: Callable[[Profile], str]

    def seconds(self, profile: Profile) -> float:
        return float(self.formula(profile))


def value(name: str, what: str) -> Quantity:
    """The profile value ``name``, called ``what`` in messages (e.g. ``"the gateway's poll budget"``)."""
    return Quantity(what, lambda p: float(getattr(p, name)), lambda p: p.source(name))


@dataclass(frozen=True)
class Relation:
    """``factor * smaller + headroom <= larger``: something a spec relies on (e.g. narration ends well inside the
    poll budget). ``headroom(profile)`` is seconds at the profile's scale."""

    what: str
    smaller: Quantity
    larger: Quantity
    factor: float = 1.0
    headroom: Callable[[Profile], float] = lambda p: 0.0

    def violation(self, profile: Profile) -> str | None:
        """``None`` when it holds, else one line naming both values (seconds), the headroom, where each value came
        from, and the relation, e.g. ``narration 60s does not fit the gateway's poll budget 45s with 30s headroom
        (narration: 2 x idle window, ConfigMap agent-orchestrator-config, AGENT_IDLE_TIMEOUT_SECONDS; poll budget:
        ConfigMap agent-controller-integration-gateway-config, POLL_TIMEOUT_MS) [narration ends well inside ...]``.

        A formula that cannot be computed (a value missing from the profile) propagates its exception."""
        smaller, larger, headroom = self.smaller.seconds(profile), self.larger.seconds(profile), self.headroom(profile)
        if self.factor * smaller + headroom <= larger + _ROUNDING:
            return None
        times = f"{self.factor:g} x " if self.factor != 1 else ""
        room = f" with {_seconds(headroom)} headroom" if headroom else ""
        origins = "; ".join(f"{_label(q.name)}: {q.origin(profile)}" for q in (self.smaller, self.larger))
        return (
            f"{times}{self.smaller.name} {_seconds(smaller)} does not fit {self.larger.name} {_seconds(larger)}{room}"
            f" ({origins}) [{self.what}]"
        )


_ROUNDING = 1e-6
"""Seconds of float rounding a relation forgives (a profile divided by a time scale is not always exact)."""


def _seconds(value: float) -> str:
    return f"{round(value, 2):g}s"


def _label(name: str) -> str:
    """``"the gateway's poll budget"`` -> ``"poll budget"``: the short name a line's sources go by."""
    return re.sub(r"^(the\s+)?\S+'s\s+", "", name).removeprefix("the ")


def check_headroom(profile: Profile, relations: Iterable[Relation]) -> list[str]:
    """One line per relation ``profile`` violates (:meth:`Relation.violation`), in the order given; ``[]`` when all
    hold. A relation whose formula cannot be computed gives a line naming it and why, instead of ending the check."""
    lines: list[str] = []
    for relation in relations:
        try:
            line = relation.violation(profile)
        except (ArithmeticError, AttributeError, KeyError, TypeError, ValueError) as exc:
            line = f"cannot check [{relation.what}] against the profile: {type(exc).__name__}: {exc}"
        if line is not None:
            lines.append(line)
    return lines
