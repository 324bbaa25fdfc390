"""What the running spec did that a person may need after it failed: its waits, rollouts and the objects it touched.

The harness's own functions note things here as they happen (``wait_for`` each wait, ``Kube.rollout_status`` and
the rollout probes each rollout and workload); the diagnostics plugin :func:`take`\\s the record at the end of each
spec for its evidence folder and the run's HTML report. Outside pytest nobody takes it, so each list is bounded.
Thread-safe: a wait may run in a worker thread.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

# The modules that note things here (kube, rollout, waiting) import this one, so it imports none of them, not even
# for types: it only stores their objects and hands them back.
Kube = Any  # harness.kube.Kube
Explanation = Any  # harness.rollout.Explanation
WaitSummary = Any  # harness.waiting.WaitSummary

_LIMIT = 500  # entries of each kind kept between two takes


@dataclass
class RolloutRecord:
    """One rollout wait: ``ref``, ``namespace``, ``started``/``ended`` (epoch seconds; ``started`` may be
    ``None`` when unknown), ``outcome`` (``ok`` or ``failed``), and the :class:`~harness.rollout.Explanation`
    when it failed."""

    ref: str
    namespace: str
    started: float | None
    ended: float
    outcome: str
    explanation: Explanation | None = None


@dataclass
class SpecRecord:
    """Everything noted since the last :func:`take`."""

    waits: list[WaitSummary] = field(default_factory=list)
    rollouts: list[RolloutRecord] = field(default_factory=list)
    touched: list[tuple[Kube, str]] = field(default_factory=list)
    forwards: list[Any] = field(default_factory=list)  # harness.PortForward, however it was opened


_lock = threading.Lock()
_waits: deque[WaitSummary] = deque(maxlen=_LIMIT)
_rollouts: deque[RolloutRecord] = deque(maxlen=_LIMIT)
_touched: deque[tuple[Any, str]] = deque(maxlen=_LIMIT)
_forwards: deque[Any] = deque(maxlen=_LIMIT)


def note_wait(summary: WaitSummary) -> None:
    """A wait began (its summary fills in as it runs; an interrupted wait stays ``interrupted``)."""
    with _lock:
        _waits.append(summary)


def note_rollout(
    ref: str, namespace: str, started: float | None, outcome: str, explanation: Explanation | None = None
) -> None:
    """A rollout wait ended (``Kube.rollout_status`` or a rollout probe's wait)."""
    with _lock:
        _rollouts.append(RolloutRecord(ref, namespace, started, time.time(), outcome, explanation))


def note_touched(kube: Kube, ref: str) -> None:
    """The spec acted on ``ref`` (``deployment/web``) through ``kube``: its evidence describes it on failure."""
    with _lock:
        if not any(k is kube and r == ref for k, r in _touched):
            _touched.append((kube, ref))


def note_forward(forward: Any) -> None:
    """A port-forward became ready (``port_forward()`` used directly, or through a pool): evidence and the report
    show it."""
    with _lock:
        if all(f is not forward for f in _forwards):
            _forwards.append(forward)


def take() -> SpecRecord:
    """Return and clear everything noted so far."""
    with _lock:
        record = SpecRecord(list(_waits), list(_rollouts), list(_touched), list(_forwards))
        _waits.clear()
        _rollouts.clear()
        _touched.clear()
        _forwards.clear()
    return record


def peek() -> SpecRecord:
    """Everything noted so far, without clearing it."""
    with _lock:
        return SpecRecord(list(_waits), list(_rollouts), list(_touched), list(_forwards))
