"""The stack's timing profile (``profile.toml`` beside this module): what each value is, where a cluster keeps it,
and how the twin runs it at a time scale.

``load()`` reads the committed file into :class:`Entry` rows. ``Entry.scaled(k)`` is the value the twin runs with at
``--time-scale k``: the committed seconds divided by ``k``, never below the entry's floor, and rounded up to whole
seconds where the object stores whole seconds (``unit = "s"``: Kubernetes' ``terminationGracePeriodSeconds`` and
probe periods are integers). Counts are never scaled.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROFILE = Path(__file__).with_name("profile.toml")


class ProfileError(ValueError):
    """The committed profile is malformed: the message names the entry and the key."""


@dataclass(frozen=True)
class Entry:
    """One profile value. ``seconds`` for timings (``count`` for counts); ``object``/``field`` name where a cluster
    keeps a deployed value and ``unit`` how it stores it (``ms`` or ``s``); a rhythm compiled into the product has
    neither."""

    name: str
    about: str
    seconds: float | None = None
    count: int | None = None
    unit: str = ""
    floor: float = 0.0
    object: str | None = None
    field: str | None = None

    @property
    def deployed(self) -> bool:
        return self.object is not None

    def scaled(self, k: float) -> float:
        """Seconds at time scale ``k`` (>= 1): ``seconds / k``, at least ``floor``, whole seconds for ``unit "s"``.

        Raises :class:`ProfileError` for a count (counts are not timings) or ``k < 1``."""
        if self.seconds is None:
            raise ProfileError(f"profile entry {self.name!r} is a count, not a timing")
        if k < 1:
            raise ProfileError(f"time scale {k} is below 1: the twin only runs faster than the stack, never slower")
        value = max(self.floor, self.seconds / k) if k != 1 else self.seconds
        return float(math.ceil(value)) if self.unit == "s" else value

    def stored(self, seconds: float) -> str:
        """``seconds`` as the object stores it: milliseconds for ``unit "ms"``, whole seconds for ``"s"``."""
        if self.unit == "ms":
            return str(round(seconds * 1000))
        return str(math.ceil(seconds))


TIME_SCALE_ANNOTATION = "twin.stack-harness.dev/time-scale"
"""The twin's namespace carries its time scale here, so a reader can divide the rhythms no manifest shows."""
_PLACEHOLDER = re.compile(r"\{\{\s*profile\.(\w+)\s*\}\}")


@dataclass(frozen=True)
class Effective:
    """The timings of one twin: each entry at time scale ``scale`` (>= 1), deployed values in ``overrides``
    (seconds) as given. Build it with :func:`effective`, which checks both."""

    scale: float = 1.0
    overrides: Mapping[str, float] = field(default_factory=dict)
    entries: Mapping[str, Entry] = field(default_factory=lambda: load())

    def entry(self, name: str) -> Entry:
        try:
            return self.entries[name]
        except KeyError:
            raise ProfileError(f"no profile entry {name!r} in {PROFILE.name}") from None

    def seconds(self, name: str) -> float:
        """The seconds the twin runs ``name`` with. Raises :class:`ProfileError` for an unknown name or a count."""
        entry = self.entry(name)
        return self.overrides[name] if name in self.overrides else entry.scaled(self.scale)

    def count(self, name: str) -> int:
        """A count entry (never scaled). Raises :class:`ProfileError` for an unknown name or a timing."""
        entry = self.entry(name)
        if entry.count is None:
            raise ProfileError(f"profile entry {name!r} is a timing, not a count")
        return entry.count

    def stored(self, name: str) -> str:
        """The deployed value ``name`` as its object stores it (milliseconds or whole seconds, a string)."""
        return self.entry(name).stored(self.seconds(name))

    def as_json(self) -> dict[str, float | int]:
        """Every value by name: seconds for timings, counts as they are."""
        return {
            name: entry.count if entry.count is not None else self.seconds(name) for name, entry in self.entries.items()
        }

    def render(self, text: str) -> str:
        """``text`` (a manifest) with each ``{{profile.<name>}}`` replaced by the deployed value as stored, and
        ``{{profile.time_scale}}`` by the scale. Raises :class:`ProfileError` naming a placeholder that names no
        deployed value."""

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name == "time_scale":
                return f"{self.scale:g}"
            if name not in self.entries or not self.entries[name].deployed:
                raise ProfileError(f"manifest placeholder {match.group(0)} names no deployed value of {PROFILE.name}")
            return self.stored(name)

        return _PLACEHOLDER.sub(one, text)


def effective(scale: float = 1.0, overrides: Mapping[str, float] | None = None, path: Path = PROFILE) -> Effective:
    """The twin's timings at ``scale`` with ``overrides`` (deployed values in seconds, as deployed).

    Raises :class:`ProfileError` for a scale below 1 (or not finite), an override naming no deployed value, or an
    override that is not a positive number of seconds."""
    if not (math.isfinite(scale) and scale >= 1):
        raise ProfileError(f"time scale {scale:g} must be a number >= 1 (1: the stack's own cadence)")
    entries = load(path)
    deployed = sorted(name for name, entry in entries.items() if entry.deployed)
    for name, seconds in (overrides or {}).items():
        if name not in deployed:
            raise ProfileError(f"{name!r} is not a deployed value of {path.name}; one of: {', '.join(deployed)}")
        if not (math.isfinite(seconds) and seconds > 0):
            raise ProfileError(f"{name}={seconds:g}: give a positive number of seconds")
    return Effective(scale=scale, overrides=dict(overrides or {}), entries=entries)


def load(path: Path = PROFILE) -> dict[str, Entry]:
    """Every entry of the committed profile, by name. Raises :class:`ProfileError` naming a malformed entry."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries: dict[str, Entry] = {}
    for section in ("deployed", "rhythms"):
        for name, row in (data.get(section) or {}).items():
            entries[name] = _entry(path, section, name, row)
    return entries


def _entry(path: Path, section: str, name: str, row: dict[str, object]) -> Entry:
    where = f"{path.name} [{section}.{name}]"
    seconds, count = row.get("seconds"), row.get("count")
    if (seconds is None) == (count is None):
        raise ProfileError(f"{where}: give exactly one of seconds or count")
    if seconds is not None and not isinstance(seconds, (int, float)):
        raise ProfileError(f"{where}: seconds must be a number, got {seconds!r}")
    if count is not None and not isinstance(count, int):
        raise ProfileError(f"{where}: count must be an integer, got {count!r}")
    if section == "deployed" and not (row.get("object") and row.get("field")):
        raise ProfileError(f"{where}: a deployed value names its object and field")
    unit = str(row.get("unit", ""))
    if unit not in ("ms", "s", "") or (section == "deployed") != bool(unit):
        raise ProfileError(f"{where}: a deployed value has unit ms or s, a rhythm none; got {unit!r}")
    return Entry(
        name=name,
        about=str(row.get("about", "")),
        seconds=float(seconds) if seconds is not None else None,
        count=count,
        unit=unit,
        floor=float(row.get("floor", 0.0)),  # type: ignore[arg-type]
        object=str(row["object"]) if row.get("object") else None,
        field=str(row["field"]) if row.get("field") else None,
    )
