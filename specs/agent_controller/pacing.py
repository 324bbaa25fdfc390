"""Pacing the stub agent: patch only its ``STUB_*`` entries by name, and put ``spec.env`` back exactly.

The stub agent reads its pacing from the Agent resource's ``spec.env`` at every launch, so a patch applies to the
next AgentRun. Upstream's helper replaced ``spec.env`` wholesale, which removed the chart's
``AGENT_REPLY_ACK_TIMEOUT_MS`` (the 90 s reply hold) and never restored it (failure mode 44 in
specs/cluster/README.md); leftover pacing then slowed or broke later specs (failure mode 26 in
specs/cluster/README.md). Here:

- :func:`paced_env` computes the new list: entries named in the pacing are replaced in place (or appended), every
  other entry is kept as it was, in order;
- :func:`pace_stub_agent` is a context manager: it snapshots ``spec.env``, applies the pacing with a JSON patch whose
  ``test`` operation refuses to overwrite a concurrent change, and on exit (every path) restores the snapshot exactly
  (the key removed if there was none), then checks it reads back equal.

Values are milliseconds as strings, as the stub reads them: ``narrate_for=60.0`` becomes ``STUB_NARRATE_FOR_MS=60000``.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from typing import Any

from harness.kube import Kube
from specs.agent_controller.errors import PacingNotRestored as PacingNotRestored

AGENT_RESOURCE = "agents.core.controller-agent.dev"
STUB_AGENT = "stub-agent"
KNOBS = {
    "narrate_for": "STUB_NARRATE_FOR_MS",
    "narrate_every": "STUB_NARRATE_EVERY_MS",
    "silent_for": "STUB_SILENT_FOR_MS",
    "reply_ack_retry": "AGENT_REPLY_ACK_RETRY_MS",
}


def pacing_entries(**seconds: float | None) -> dict[str, str]:
    """``{"STUB_NARRATE_FOR_MS": "60000", ...}`` for the knobs given (``None`` leaves one out).

    Raises ``ValueError`` for an unknown knob or a value that is not finite seconds >= 0.
    """
    entries: dict[str, str] = {}
    for knob, value in seconds.items():
        if knob not in KNOBS:
            raise ValueError(f"unknown pacing knob {knob!r}; known: {', '.join(KNOBS)}")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{knob} must be finite seconds >= 0, got {value!r}")
        entries[KNOBS[knob]] = str(int(round(value * 1000)))
    return entries


def paced_env(env: list[dict[str, Any]] | None, entries: dict[str, str]) -> list[dict[str, Any]]:
    """``env`` with each named entry's value replaced in place (appended when absent); nothing else changes."""
    out = [dict(e) for e in (env or [])]
    names = [e.get("name") for e in out]
    for name, value in entries.items():
        replacement = {"name": name, "value": value}
        if name in names:
            index = len(names) - 1 - names[::-1].index(name)  # the last one wins in a container's env
            out[index] = replacement
        else:
            out.append(replacement)
            names.append(name)
    return out


def read_env(kube: Kube, agent: str = STUB_AGENT) -> list[dict[str, Any]] | None:
    """The Agent's ``spec.env`` as stored (``None`` when it has no ``env`` key)."""
    spec = kube.kubectl_json("get", AGENT_RESOURCE, agent).get("spec") or {}
    return spec.get("env")


def _patch(kube: Kube, agent: str, operations: list[dict[str, Any]]) -> None:
    kube.kubectl("patch", AGENT_RESOURCE, agent, "--type=json", "-p", json.dumps(operations))


@contextlib.contextmanager
def pace_stub_agent(
    kube: Kube,
    *,
    agent: str = STUB_AGENT,
    narrate_for: float | None = None,
    narrate_every: float | None = None,
    silent_for: float | None = None,
    reply_ack_retry: float | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """Pace the stub agent for the ``with`` block (seconds); yields the paced ``spec.env``.

    Raises ``ValueError`` for bad values, ``KubectlError`` when the patch is refused (also when ``spec.env``
    changed between the read and the patch: the JSON patch's ``test`` fails), and :class:`PacingNotRestored` at
    exit when the env does not read back exactly as before.
    """
    entries = pacing_entries(
        narrate_for=narrate_for, narrate_every=narrate_every, silent_for=silent_for, reply_ack_retry=reply_ack_retry
    )
    before = read_env(kube, agent)
    paced = paced_env(before, entries)
    if before is None:
        _patch(kube, agent, [{"op": "add", "path": "/spec/env", "value": paced}])
    else:
        _patch(
            kube,
            agent,
            [
                {"op": "test", "path": "/spec/env", "value": before},
                {"op": "replace", "path": "/spec/env", "value": paced},
            ],
        )
    try:
        yield paced
    finally:
        restore_env(kube, before, agent=agent)


def restore_env(kube: Kube, before: list[dict[str, Any]] | None, *, agent: str = STUB_AGENT) -> None:
    """Put ``spec.env`` back to ``before`` exactly (removed when ``None``) and check it reads back equal."""
    if before is None:
        if read_env(kube, agent) is not None:
            _patch(kube, agent, [{"op": "remove", "path": "/spec/env"}])
    else:
        _patch(kube, agent, [{"op": "replace", "path": "/spec/env", "value": before}])
    after = read_env(kube, agent)
    if after != before:
        raise PacingNotRestored(
            f"Agent {agent} spec.env after restoring the pacing is {after!r}, not what it was before: {before!r}"
        )
