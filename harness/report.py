"""The run's report: one self-contained HTML page on a shared time axis.

Each spec is a row (its set-up, call and teardown coloured by outcome); under it, each of its waits (every attempt
a segment: ready, not yet, failed, hung, stopped), each rollout's pods (pending, scheduled, image pull failing,
started, ready, deleted; each container start a tick, a crash loop a red strip with its restart count) and each
port-forward's life (started, ready, exited; a death the harness did not ask for is marked). Failed specs and specs
with waits, rollouts or forwards are open; failed ones link to their evidence folder. Hovering a segment shows its
details (SVG ``<title>``). Under pytest-xdist each spec's row names its worker (``[gw1]``). No script, no external
file: the page opens from a CI artifact as it is.

Data flow: the plugin appends one JSON line per spec (:func:`spec_entry`) to ``<run>/.timeline/<process>.jsonl`` as
each spec ends (pytest-xdist workers each to their own file); :func:`write` reads them all at the end of the session
and writes ``<run>/report.html``. Elements carry ``data-*`` attributes (``data-spec``, ``data-kind``,
``data-outcome``) so a spec can check the page's structure.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import Any

from harness import artifacts
from harness.rollout import Explanation
from harness.timeline import SpecRecord
from harness.waiting import plural

MAX_ATTEMPTS = 400
RULER_TICKS = 5
"""Intervals on the time axis: six labels of about 60 px each fit a track of 500 px (the track at a 1400-px window
is about 800 px) without touching, the end labels included."""
MAX_FAILURE_CHARS = 2000
"""A failure's message on the page is clipped here; the evidence folder holds all of it."""
COLOURS = {
    "passed": "#3c9a5f",
    "failed": "#d64545",
    "error": "#a23b72",
    "skipped": "#b8b8b8",
    "ok": "#3c9a5f",
    "not-yet": "#9fb3c8",
    "hung": "#f0a202",
    "cut": "#c7b9a0",
    "stopped": "#7b61c4",
    "interrupted": "#555",
    "timeout": "#d64545",
    "pending": "#d9d9d9",
    "scheduled": "#9fb3c8",
    "pull-failed": "#e8833a",
    "started": "#f2c94c",
    "container-start": "#7a5c00",
    "container-exit": "#d64545",
    "crash-loop": "#d64545",
    "ready": "#3c9a5f",
    "deleted": "#777",
    "forward": "#5b8def",
    "forward-ready": "#2f6fd6",
}


# --- the per-spec record --------------------------------------------------------------------------------------------


def spec_entry(
    nodeid: str,
    phases: dict[str, tuple[float, float, str]],
    evidence: str | None,
    record: SpecRecord,
    forwards: list[Any],
    explanations: list[Explanation],
    *,
    failure: str | None = None,
    worker: str | None = None,
) -> dict[str, Any]:
    """One spec as the report needs it (JSON-ready). ``phases``: when -> (start, stop, outcome), epoch seconds;
    ``failure``: the failure's message (shown on the page, clipped to :data:`MAX_FAILURE_CHARS`); ``worker``: the
    pytest-xdist worker that ran it (``gw0``, ``gw1``...), None in a run of one process."""
    now = time.time()
    start = min((p[0] for p in phases.values()), default=now)
    end = max((p[1] for p in phases.values()), default=now)
    rollouts = [_rollout(r.ref, r.started, r.ended, r.outcome, r.explanation) for r in record.rollouts]
    explained = {r.ref for r in record.rollouts if r.explanation is not None}
    rollouts += [
        _rollout(f"{e.ref} (when the spec failed)", None, end, "ok" if e.healthy else "failed", e)
        for e in explanations
        if e.ref not in explained
    ]
    return {
        "nodeid": nodeid,
        "worker": worker,
        "outcome": _outcome(phases),
        "start": start,
        "end": end,
        "evidence": evidence,
        "failure": failure[:MAX_FAILURE_CHARS] if failure else None,
        "phases": {when: list(p) for when, p in phases.items()},
        "waits": [_wait(w) for w in record.waits],
        "rollouts": rollouts,
        "forwards": [f for f in (_forward(fwd, start, end) for fwd in forwards) if f is not None],
    }


def _outcome(phases: dict[str, tuple[float, float, str]]) -> str:
    outcomes = {when: p[2] for when, p in phases.items()}
    if outcomes.get("setup") == "failed" or outcomes.get("teardown") == "failed":
        return "error"
    if "failed" in outcomes.values():
        return "failed"
    if "skipped" in outcomes.values():
        return "skipped"
    return "passed"


def _wait(summary: Any) -> dict[str, Any]:
    attempts = [[a.start, a.duration, a.outcome, a.error] for a in summary.attempts]
    elided = max(0, len(attempts) - MAX_ATTEMPTS)
    if elided:
        attempts = attempts[: MAX_ATTEMPTS // 2] + attempts[-MAX_ATTEMPTS // 2 :]
    return {
        "what": summary.describe,
        "start": summary.started_at,
        "elapsed": summary.elapsed,
        "budget": summary.budget,
        "outcome": summary.outcome,
        "attempts": attempts,
        "elided": elided,
    }


def _rollout(
    ref: str, started: float | None, ended: float, outcome: str, explanation: Explanation | None
) -> dict[str, Any]:
    pods = []
    for pod in explanation.pods if explanation else []:
        points = {what: at.timestamp() for at, what in pod.lifecycle()}
        new = explanation is not None and explanation.new_revision is not None and pod.owner == explanation.new_revision
        containers = [
            {
                "name": c.name,
                "starts": [t.timestamp() for t in pod.container_starts(c)],
                "restarts": c.restarts,
                "exit": [c.last_finished.timestamp(), f"{c.last_reason or '?'} exit {c.last_exit_code}"]
                if c.last_finished
                else None,
                "crash_looping": c.crash_looping,
            }
            for c in pod.containers
        ]
        pods.append({"name": pod.name, "points": points, "state": pod.summary(), "new": new, "containers": containers})
    return {
        "ref": ref,
        "start": started,
        "end": ended,
        "outcome": outcome,
        "pods": pods,
        "headline": explanation.headline if explanation else None,
    }


def _forward(fwd: Any, spec_start: float, spec_end: float) -> dict[str, Any] | None:
    """A port-forward's life in epoch seconds (its stamps are ``time.monotonic()``); ``None`` if it did not
    overlap the spec."""
    started = getattr(fwd, "started_at", None)
    if started is None:
        return None
    to_wall = time.time() - time.monotonic()
    exit_ = getattr(fwd, "exit", None)
    start = started + to_wall
    end = exit_.at + to_wall if exit_ is not None else None
    if start > spec_end or (end is not None and end < spec_start):
        return None
    ready = getattr(fwd, "ready_at", None)
    return {
        "target": f"{getattr(fwd, 'target', '?')} :{getattr(fwd, 'remote_port', '?')}",
        "start": start,
        "ready": ready + to_wall if ready else None,
        "end": end,
        "how": exit_.how() if exit_ is not None else "still running when the spec ended",
        "seen_until": spec_end,
        "died": exit_ is not None and not exit_.stopped_by_harness,
        "stderr": fwd.stderr_tail(5) if hasattr(fwd, "stderr_tail") else "",
    }


# --- the page ----------------------------------------------------------------------------------------------------


def load(folder: Path) -> list[dict[str, Any]]:
    """Every spec record of the run in ``folder`` (all processes), ordered by start."""
    specs: list[dict[str, Any]] = []
    for part in sorted((folder / ".timeline").glob("*.jsonl")):
        for line in part.read_text(errors="replace").splitlines():
            try:
                specs.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a killed process
    return sorted(specs, key=lambda s: s.get("start") or 0)


def write(folder: Path, run_id: str) -> Path:
    """Write ``folder/report.html`` from the run's spec records; returns its path."""
    page = folder / "report.html"
    artifacts.write_text(page, render(load(folder), run_id, folder))
    return page


def render(specs: list[dict[str, Any]], run_id: str, folder: Path) -> str:
    """The whole page for ``specs`` (see :func:`spec_entry`)."""
    t0, t1 = _span(specs)
    axis = _Axis(t0, t1)
    counts: dict[str, int] = {}
    for spec in specs:
        counts[spec["outcome"]] = counts.get(spec["outcome"], 0) + 1
    tally = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no specs"
    body = [
        f'<header><h1>stack-harness run {_e(run_id)}</h1><p class="meta">{_e(tally)}; '
        f"{_clock(t0)} to {_clock(t1)} UTC ({t1 - t0:.1f}s)</p>{_legend()}</header>",
        f'<main data-run="{_e(run_id)}" data-start="{t0:.3f}" data-end="{t1:.3f}">',
        axis.ruler(),
    ]
    body += [_spec_block(spec, axis, folder) for spec in specs]
    body.append("</main>")
    return _PAGE.format(title=_e(f"stack-harness {run_id}"), style=_STYLE, body="\n".join(body))


def _span(specs: list[dict[str, Any]]) -> tuple[float, float]:
    """The run's span: its specs and their waits. Pods may be older than the run (a deployment that was there
    before it); their bars start at the left edge."""
    stamps: list[float] = []
    for spec in specs:
        stamps += [spec["start"], spec["end"]]
        for wait in spec.get("waits", []):
            stamps += [wait["start"], wait["start"] + wait["elapsed"]]
    if not stamps:
        now = time.time()
        return now, now + 1.0
    t0, t1 = min(stamps), max(stamps)
    return t0, max(t1, t0 + 1.0)


class _Axis:
    """Epoch seconds to a percentage of the row width, the same for every row."""

    def __init__(self, t0: float, t1: float) -> None:
        self.t0, self.t1 = t0, t1

    def x(self, t: float) -> float:
        return max(0.0, min(100.0, (t - self.t0) / (self.t1 - self.t0) * 100.0))

    def bar(
        self, start: float, end: float, colour: str, title: str, kind: str, outcome: str, y: int = 2, height: int = 12
    ) -> str:
        left = self.x(start)
        width = max(0.08, self.x(end) - left)
        return (
            f'<rect x="{left:.3f}" y="{y}" width="{width:.3f}" height="{height}" fill="{colour}" '
            f'data-kind="{_e(kind)}" data-outcome="{_e(outcome)}"><title>{_e(title)}</title></rect>'
        )

    def mark(self, t: float, colour: str, title: str, kind: str) -> str:
        left = self.x(t)
        return (
            f'<rect x="{max(0.0, left - 0.15):.3f}" y="0" width="0.3" height="16" fill="{colour}" '
            f'data-kind="{_e(kind)}"><title>{_e(title)}</title></rect>'
        )

    def ruler(self) -> str:
        ticks = []
        for i in range(RULER_TICKS + 1):  # few enough that no two labels touch on a track of 500 px or more
            t = self.t0 + (self.t1 - self.t0) * i / RULER_TICKS
            left = i * 100 / RULER_TICKS
            ticks.append(f'<span class="tick" style="left:{left:g}%">{_clock(t)}<br>+{t - self.t0:.1f}s</span>')
        return (
            f'<div class="row axis"><div class="label">time (UTC)</div>'
            f'<div class="track ruler">{"".join(ticks)}</div></div>'
        )


def _svg(content: list[str]) -> str:
    return f'<svg class="lane" viewBox="0 0 100 16" preserveAspectRatio="none">{"".join(content)}</svg>'


def _row(label: str, svg: str, kind: str, extra: str = "") -> str:
    return (
        f'<div class="row {kind}" data-kind="{kind}"><div class="label" title="{_e(label)}">{_e(label)}{extra}'
        f'</div><div class="track">{svg}</div></div>'
    )


def _spec_block(spec: dict[str, Any], axis: _Axis, folder: Path) -> str:
    outcome = spec["outcome"]
    bars = [
        axis.bar(p[0], p[1], COLOURS.get(p[2], "#999"), f"{when}: {p[2]} ({p[1] - p[0]:.2f}s)", "phase", p[2])
        for when, p in spec.get("phases", {}).items()
    ]
    link = ""
    if spec.get("evidence"):
        relative = _relative(Path(spec["evidence"]), folder)
        link = f' <a class="evidence" href="{_e(relative)}/INDEX.txt">evidence</a>'
    worker = f' <span class="worker">[{_e(spec["worker"])}]</span>' if spec.get("worker") else ""
    head = _row(spec["nodeid"], _svg(bars), "spec", worker + link)
    rows = [f'<pre class="failure">{_e(spec["failure"])}</pre>'] if spec.get("failure") else []
    rows += [_wait_row(w, axis) for w in spec.get("waits", [])]
    for rollout in spec.get("rollouts", []):
        rows += _rollout_rows(rollout, axis)
    rows += [_forward_row(f, axis) for f in spec.get("forwards", [])]
    opened = " open" if outcome in ("failed", "error") or rows else ""
    inner = "\n".join(rows) if rows else '<div class="empty">no waits, rollouts or port-forwards</div>'
    return (
        f'<details class="spec {outcome}" data-spec="{_e(spec["nodeid"])}" data-outcome="{outcome}"{opened}>'
        f"<summary>{head}</summary>{inner}</details>"
    )


def _wait_row(wait: dict[str, Any], axis: _Axis) -> str:
    start = wait["start"]
    parts = [
        axis.bar(
            start,
            start + wait["elapsed"],
            "#eef2f6",
            f"budget {wait['budget']:.1f}s",
            "wait-span",
            wait["outcome"],
            y=4,
            height=8,
        )
    ]
    for offset, duration, outcome, error in wait["attempts"]:
        title = f"attempt at t+{offset:.2f}s: {outcome} after {duration:.2f}s" + (f": {error}" if error else "")
        parts.append(
            axis.bar(start + offset, start + offset + duration, COLOURS.get(outcome, "#999"), title, "attempt", outcome)
        )
    made = plural(len(wait["attempts"]) + wait.get("elided", 0), "attempt")  # elided attempts were made too
    label = f"wait: {wait['what']} ({wait['outcome']}, {wait['elapsed']:.1f}s, {made})"
    return _row(label, _svg(parts), "wait")


def _rollout_rows(rollout: dict[str, Any], axis: _Axis) -> list[str]:
    label = f"rollout: {rollout['ref']} ({rollout['outcome']})"
    head = []
    if rollout.get("start"):
        head.append(
            axis.bar(
                rollout["start"],
                rollout["end"],
                COLOURS["forward"] if rollout["outcome"] == "ok" else COLOURS["failed"],
                rollout.get("headline") or label,
                "rollout",
                rollout["outcome"],
            )
        )
    rows = [_row(label, _svg(head), "rollout", f' <span class="headline">{_e(rollout.get("headline") or "")}</span>')]
    order = ["created", "scheduled", "pull-failed", "started", "ready", "deleted"]
    for pod in rollout.get("pods", []):
        points = sorted(
            ((t, what) for what, t in pod["points"].items() if what in order),
            key=lambda point: (point[0], order.index(point[1])),
        )  # one second may hold several steps
        parts = []
        for i, (t, what) in enumerate(points):
            until = points[i + 1][0] if i + 1 < len(points) else rollout["end"]
            phase = {"created": "pending"}.get(what, what)
            if what == "deleted":
                parts.append(axis.mark(t, COLOURS["deleted"], f"deletion requested {_clock(t)}", "pod-deleted"))
                continue
            parts.append(
                axis.bar(t, max(until, t), COLOURS[phase], f"{pod['name']} {what} at {_clock(t)}", "pod-phase", phase)
            )
        parts += _container_marks(pod, rollout["end"], axis)
        revision = "new" if pod.get("new") else "old"
        rows.append(_row(f"  pod {pod['name']} ({revision}): {pod['state']}", _svg(parts), "pod"))
    return rows


def _container_marks(pod: dict[str, Any], end: float, axis: _Axis) -> list[str]:
    """Every known start of each container (a dark tick), its last exit (a red tick), and for a crash-looping one a
    red strip under the pod's bar from its first start, titled with the restart count."""
    parts: list[str] = []
    for c in pod.get("containers", []):
        total = c["restarts"] + 1
        for i, t in enumerate(c["starts"]):
            which = f"start {i + 1} known of {total}" if total > 1 else "started"
            parts.append(
                axis.mark(t, COLOURS["container-start"], f"{c['name']} {which} at {_clock(t)}", "container-start")
            )
        if c.get("exit"):
            at, how = c["exit"]
            parts.append(axis.mark(at, COLOURS["container-exit"], f"{c['name']} exited {how}", "container-exit"))
        if c.get("crash_looping") and c["starts"]:
            title = f"{c['name']} crash-loops: {c['restarts']} restarts (each start the API still holds is a tick)"
            parts.append(axis.bar(c["starts"][0], end, COLOURS["crash-loop"], title, "crash-loop", "crash-loop", 12, 4))
    return parts


def _forward_row(fwd: dict[str, Any], axis: _Axis) -> str:
    end = fwd["end"] or fwd.get("seen_until") or axis.t1  # a live forward is drawn as far as the spec saw it
    parts = [
        axis.bar(
            fwd["start"],
            end,
            COLOURS["forward"],
            f"{fwd['target']}: {fwd['how']}",
            "forward",
            "died" if fwd["died"] else "ok",
            y=4,
            height=8,
        )
    ]
    if fwd.get("ready"):
        parts.append(
            axis.mark(fwd["ready"], COLOURS["forward-ready"], f"ready at {_clock(fwd['ready'])}", "forward-ready")
        )
    if fwd["died"]:
        parts.append(axis.mark(end, COLOURS["failed"], f"died: {fwd['how']} {fwd.get('stderr') or ''}", "forward-died"))
    return _row(f"port-forward {fwd['target']}: {fwd['how']}", _svg(parts), "forward")


def _legend() -> str:
    keys = [
        ("passed", "spec or phase passed"),
        ("failed", "failed"),
        ("error", "error (set-up/teardown)"),
        ("ok", "attempt ready"),
        ("not-yet", "not yet"),
        ("hung", "hung"),
        ("cut", "cut by the deadline"),
        ("stopped", "stopped"),
        ("pending", "pod pending"),
        ("scheduled", "scheduled"),
        ("pull-failed", "image pull failing"),
        ("started", "started, not ready"),
        ("container-start", "container start"),
        ("crash-loop", "crash loop, restarts"),
        ("ready", "ready"),
        ("forward", "port-forward"),
    ]
    return (
        '<p class="legend">'
        + "".join(f'<span><i style="background:{COLOURS[k]}"></i>{_e(text)}</span>' for k, text in keys)
        + "</p>"
    )


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.resolve().relative_to(folder.resolve()))
    except ValueError:
        return path.as_uri() if path.is_absolute() else str(path)


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 10)}"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{style}</style></head>
<body>
{body}
</body></html>
"""

_STYLE = """
body { font: 13px/1.35 system-ui, sans-serif; margin: 0 16px 32px; color: #222; background: #fff; }
header h1 { font-size: 18px; margin: 14px 0 2px; }
.meta { margin: 0 0 6px; color: #555; }
.legend span { margin-right: 12px; white-space: nowrap; }
.legend i { display: inline-block; width: 11px; height: 11px; margin-right: 4px; vertical-align: -1px; }
.row { display: grid; grid-template-columns: minmax(320px, 40%) 1fr; align-items: center; min-height: 18px; }
.label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; padding-right: 8px; }
.track { position: relative; height: 16px; background: repeating-linear-gradient(90deg, #f4f4f4 0 1px,
  transparent 1px 10%); }
.lane { display: block; width: 100%; height: 16px; }
.axis { position: sticky; top: 0; background: #fff; z-index: 2; border-bottom: 1px solid #ccc; min-height: 34px; }
.ruler { height: 32px; background: none; }
.tick { position: absolute; top: 2px; transform: translateX(-50%); font-size: 10px; color: #666;
  text-align: center; white-space: nowrap; }
.tick:first-child { transform: none; } .tick:last-child { transform: translateX(-100%); }
details.spec { border-bottom: 1px solid #eee; }
details.spec > summary { list-style: none; cursor: pointer; }
details.spec > summary::-webkit-details-marker { display: none; }
details.failed > summary .label, details.error > summary .label { color: #b00020; font-weight: 600; }
.wait .label, .rollout .label, .forward .label, .empty { padding-left: 18px; color: #444; }
.pod .label { padding-left: 30px; color: #555; font-size: 12px; }
.headline { color: #b00020; }
.evidence { font-weight: normal; margin-left: 4px; }
.worker { font-weight: normal; color: #666; margin-left: 4px; font-size: 12px; }
.failure { margin: 2px 0 6px 18px; padding: 4px 8px; background: #fff4f4; border-left: 3px solid #d64545;
  white-space: pre-wrap; font-size: 12px; max-height: 14em; overflow: auto; }
.empty { color: #999; font-size: 12px; padding: 2px 0 4px 18px; }
"""
