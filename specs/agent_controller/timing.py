"""The stack's timing profile as the cluster specs use it: every value in seconds, with where it came from.

A :class:`Profile` holds each value of ``fakes/stack/profile.toml`` (the committed profile: what each value is and
where a cluster keeps it). :func:`committed_profile` is the file's own values (at a time scale); the cluster specs
read the deployed target's instead (:func:`read_profile`), the twin's and a cluster's alike, so every budget, pacing,
negative window and expected message is a formula over what is actually deployed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from fakes.stack.profile import PROFILE, TIME_SCALE_ANNOTATION, Entry, load
from harness.errors import KubectlError
from harness.kube import Kube
from specs.agent_controller.errors import ProfileUnreadable


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
    reply_hold_unset: float
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
    run_retention: float
    skill_index_retry: float
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


# --- the deployed profile: read from the target's objects ------------------------------------------------------

RESOURCES = {
    "ConfigMap": "configmap",
    "Deployment": "deployment.apps",
    "Agent": "agents.core.controller-agent.dev",
}
"""kubectl's resource for each kind the committed profile names (``object = "<Kind> <name>"``)."""
_STEP = re.compile(r"^(\w+)(?:\[(\d+)\])?$")


def read_profile(kube: Kube) -> Profile:
    """The profile the target runs: each deployed value read from its object and field (one ``kubectl get`` of
    every object and the namespace), each rhythm the committed one divided by the namespace's time scale (the
    annotation ``twin.stack-harness.dev/time-scale`` the twin sets; absent: 1, a real cluster at its own cadence).

    ``sources[name]`` names where each value came from (``ConfigMap agent-orchestrator-config,
    AGENT_IDLE_TIMEOUT_SECONDS``). Raises :class:`~specs.agent_controller.errors.ProfileUnreadable` naming the
    object, the field and why (object missing, key missing, not a number) when a value cannot be read, or when
    kubectl cannot get the objects (the message carries kubectl's)."""
    entries = load()
    deployed = {name: e for name, e in entries.items() if e.deployed and name in Profile.names()}
    namespace = f"Namespace {kube.namespace}"
    objects = _get_objects(kube, [namespace, *sorted({str(e.object) for e in deployed.values()})])
    scale = _scale(objects.get(namespace), namespace)
    values: dict[str, float | int] = {}
    sources: dict[str, str] = {}
    for name in Profile.names():
        entry = entries[name]
        if name in deployed:
            values[name] = _deployed_value(entry, objects.get(str(entry.object)))
            sources[name] = f"{entry.object}, {entry.field}"
        elif entry.count is not None:
            values[name], sources[name] = entry.count, f"committed profile {PROFILE.name} [{name}]"
        else:
            values[name] = entry.scaled(scale)
            scaled_by = f" ({namespace}, annotation {TIME_SCALE_ANNOTATION})" if scale != 1 else ""
            sources[name] = _committed_source(name, scale) + scaled_by
    return Profile(**values, scale=scale, sources=sources)  # type: ignore[arg-type]


def _get_objects(kube: Kube, objects: list[str]) -> dict[str, dict[str, Any]]:
    """``{"<Kind> <name>": object}`` for those that exist (one kubectl call; a missing one is simply absent)."""
    names = []
    for obj in objects:
        kind, _, name = obj.partition(" ")
        resource = "namespace" if kind == "Namespace" else RESOURCES.get(kind)
        if resource is None or not name:
            raise ProfileUnreadable(
                obj, "(the object)", f"the committed profile names a kind the specs cannot read: {kind}"
            )
        names.append(f"{resource}/{name}")
    try:
        answer = kube.kubectl_json("get", *names, "--ignore-not-found")
    except KubectlError as exc:
        raise ProfileUnreadable(", ".join(objects), "(the objects)", f"kubectl get failed: {exc}") from None
    items = (answer or {}).get("items", [answer] if answer and "kind" in answer and answer["kind"] != "List" else [])
    found = {}
    for item in items:
        found[f"{item.get('kind')} {(item.get('metadata') or {}).get('name')}"] = item
    return found


def _scale(namespace: dict[str, Any] | None, where: str) -> float:
    if namespace is None:
        raise ProfileUnreadable(where, f"annotation {TIME_SCALE_ANNOTATION}", "the namespace does not exist")
    raw = ((namespace.get("metadata") or {}).get("annotations") or {}).get(TIME_SCALE_ANNOTATION)
    if raw is None:
        return 1.0  # a real cluster: its own cadence
    try:
        scale = float(raw)
    except ValueError:
        scale = math.nan
    if not (math.isfinite(scale) and scale >= 1):
        raise ProfileUnreadable(where, f"annotation {TIME_SCALE_ANNOTATION}", f"{raw!r} is not a number >= 1")
    return scale


def _deployed_value(entry: Entry, obj: dict[str, Any] | None) -> float:
    where, what = str(entry.object), str(entry.field)
    if obj is None:
        raise ProfileUnreadable(where, what, "the object does not exist")
    raw = _field(obj, where, what)
    try:
        number = float(raw)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number >= 0):
        raise ProfileUnreadable(where, what, f"{raw!r} is not a number of {_UNITS[entry.unit]}")
    return number / 1000.0 if entry.unit == "ms" else number


_UNITS = {"ms": "milliseconds", "s": "seconds"}


def _field(obj: dict[str, Any], where: str, what: str) -> Any:
    """The raw value of ``what`` in ``obj``: a ConfigMap's data key; ``path NAME`` (an env list's entry NAME); or a
    dotted path with ``[index]`` steps."""
    if obj.get("kind") == "ConfigMap":
        data = obj.get("data") or {}
        if what not in data:
            raise ProfileUnreadable(
                where, what, f"no such key (the ConfigMap has: {', '.join(sorted(data)) or 'none'})"
            )
        return data[what]
    path, _, entry_name = what.partition(" ")
    value: Any = obj
    walked: list[str] = []
    for step in path.split("."):
        match = _STEP.match(step)
        if match is None:
            raise ProfileUnreadable(where, what, f"the committed profile's path step {step!r} is not readable")
        key, index = match.group(1), match.group(2)
        value = value.get(key) if isinstance(value, dict) else None
        if index is not None:
            value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
        if value is None:
            raise ProfileUnreadable(where, what, f"{'.'.join(walked) or 'the object'} has no {step}")
        walked.append(step)
    if not entry_name:
        return value
    entries = (
        [e for e in value if isinstance(e, dict) and e.get("name") == entry_name] if isinstance(value, list) else []
    )
    if not entries:
        raise ProfileUnreadable(where, what, f"no entry named {entry_name} in {path}")
    return entries[-1].get("value")  # duplicates are legal in a container's env: the last one wins


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
        from (each by its short name), and the relation last, e.g. ``narration 60s does not fit the gateway's poll
        budget 45s with 30s headroom (narration: 2 x idle window; idle_window from ConfigMap agent-orchestrator-config,
        AGENT_IDLE_TIMEOUT_SECONDS; poll budget: ConfigMap agent-controller-integration-gateway-config,
        POLL_TIMEOUT_MS) [the narration ends well inside the poll budget ...]``.

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
    """``90.0`` -> ``"90s"``, ``12.857`` -> ``"12.86s"``, ``3600000.0`` -> ``"3600000s"`` (never an exponent)."""
    return f"{value:.2f}".rstrip("0").rstrip(".") + "s"


def _label(name: str) -> str:
    """``"the gateway's poll budget"`` -> ``"poll budget"``, ``"a parked read"`` -> ``"parked read"``: the short
    name a line's sources go by."""
    return re.sub(r"^(?:(?:the|an?)\s+)?(?:(?:[^\s']+\s+){0,3}?[^\s']+'s\s+)?", "", name)


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
