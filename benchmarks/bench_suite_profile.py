"""Where the cluster-free suite's time goes: each spec's wall time, put in one category by what it started, and the
slowest specs. Nothing is asserted.

Run: ``python benchmarks/bench_suite_profile.py [--workers N] [--records FILE] [-- pytest selection ...]`` (the
``--`` lets the selection carry options such as ``-m "not cluster"``). ``make bench`` profiles
``specs/guard`` only (quick); ``make bench LONG=1`` profiles what ``make test`` runs (several minutes).

The script runs pytest with this module loaded as a plugin (``-p bench_suite_profile``). In every worker, the
plugin wraps ``subprocess.Popen`` and pytester's in-process runs and records, per spec, the children it started and
how long each lived. A spec's category is the most expensive thing it started, in this order:

- ``inner pytest (subprocess)``: a child ``python -m pytest`` (pytester's subprocess runs, the plugin's guard specs);
- ``inner pytest (in-process)``: ``pytester.runpytest_inprocess`` / ``inline_run``;
- ``kubectl port-forward``, ``kubectl rollout`` and ``kubectl (other verbs)``: real kubectl children;
- ``other subprocess``: any other child (``python -m fakes...``, a shell);
- ``pure Python``: no child at all (the fakes in-process or on a socket, the harness's own logic).

Printed: per category, the specs, their summed wall time, the share of the total, and the summed lifetime of the
children of that kind (across all specs); then the 30 slowest specs with their category; then the whole run's wall
time and the CPU time of the pytest processes and their children (``resource.getrusage``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT_ENV = "SUITE_PROFILE_DIR"
CATEGORIES = (
    "inner pytest (subprocess)",
    "inner pytest (in-process)",
    "kubectl port-forward",
    "kubectl rollout",
    "kubectl (other verbs)",
    "other subprocess",
    "pure Python",
)
RUN_TIMEOUT = 3600.0
"""Seconds the profiled pytest run may take before it is stopped (the whole suite takes 5-10 minutes on 2 cores)."""


# -- the plugin side: runs inside each pytest process --------------------------------------------------------------


@dataclass
class _SpecRecord:
    children: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # kind -> summed lifetime (s)
    started: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # kind -> children started


_current: _SpecRecord | None = None
_lock = threading.Lock()


def child_kind(argv: Any) -> str:
    """The category of one child process from its argv (a list, or a shell string)."""
    words = [str(a) for a in argv] if isinstance(argv, list | tuple) else str(argv).split()
    if words and os.path.basename(words[0]) == "setpriv" and "--" in words:  # harness.process.spawn's launcher
        words = words[words.index("--") + 1 :]
    if not words:
        return "other subprocess"
    program = os.path.basename(words[0])
    if program.startswith("kubectl"):
        if "port-forward" in words:
            return "kubectl port-forward"
        return "kubectl rollout" if "rollout" in words else "kubectl (other verbs)"
    # pytester's subprocess runs start ``python -mpytest`` (one word)
    if (
        {"pytest", "-mpytest"} & set(words)
        or program.startswith("pytest")
        or any(w.endswith("/pytest") for w in words[:3])
    ):
        return "inner pytest (subprocess)"
    return "other subprocess"


def _track(kind: str, record: _SpecRecord, proc: subprocess.Popen[Any]) -> None:
    """Wait (in a daemon thread, without reaping: ``os.waitid`` with ``WNOWAIT``) for the child's exit and add its
    lifetime; the owner still reaps it."""
    started = time.monotonic()

    def watch() -> None:
        with contextlib.suppress(ChildProcessError):  # already reaped by its owner
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        with _lock:
            record.children[kind] += time.monotonic() - started

    threading.Thread(target=watch, name="suite-profile-child", daemon=True).start()


def _install_popen_hook() -> None:
    original = subprocess.Popen.__init__

    def init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        original(self, args, *rest, **kwargs)
        record = _current
        if record is not None:
            kind = child_kind(args)
            with _lock:
                record.started[kind] += 1
            _track(kind, record, self)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]


def _install_pytester_hook() -> None:
    from _pytest.pytester import Pytester

    original = Pytester.inline_run

    def inline_run(self: Pytester, *args: Any, **kwargs: Any) -> Any:
        record = _current
        start = time.monotonic()
        try:
            return original(self, *args, **kwargs)
        finally:
            if record is not None:
                with _lock:
                    record.started["inner pytest (in-process)"] += 1
                    record.children["inner pytest (in-process)"] += time.monotonic() - start

    Pytester.inline_run = inline_run  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(OUT_ENV) and not hasattr(subprocess.Popen.__init__, "__wrapped_by_profile__"):
        _install_popen_hook()
        _install_pytester_hook()
        subprocess.Popen.__init__.__wrapped_by_profile__ = True  # type: ignore[attr-defined]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    global _current
    out = os.environ.get(OUT_ENV)
    if not out:
        return (yield)
    record = _current = _SpecRecord()
    start, cpu_start = time.monotonic(), _cpu_seconds()
    try:
        return (yield)
    finally:
        _current = None
        wall, cpu = time.monotonic() - start, _cpu_seconds() - cpu_start
        line = {
            "nodeid": item.nodeid,
            "at": time.time() - wall,  # epoch seconds the spec began: with the others', how busy the run was when
            "wall": wall,
            "cpu": cpu,
            "children": dict(record.children),
            "started": dict(record.started),
        }
        path = Path(out) / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}.jsonl"
        with path.open("a") as f:
            f.write(json.dumps(line) + "\n")


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, all its threads, and its children reaped so far: a spec's share
    of it does not grow when the machine is loaded, unlike its wall time."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# -- the script side ------------------------------------------------------------------------------------------------


def category(record: dict[str, Any]) -> str:
    started = record["started"]
    return next((kind for kind in CATEGORIES[:-1] if started.get(kind)), "pure Python")


def records(folder: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            yield json.loads(line)


def report(found: list[dict[str, Any]], wall: float, cpu: float) -> None:
    total = sum(r["wall"] for r in found) or 1.0
    total_cpu = sum(r.get("cpu", 0.0) for r in found)
    print(f"{'category':28} {'specs':>6} {'spec time s':>12} {'share':>6} {'spec CPU s':>11} {'children alive s':>17}")
    for kind in CATEGORIES:
        mine = [r for r in found if category(r) == kind]
        alive = sum(r["children"].get(kind, 0.0) for r in found)
        spent, used = sum(r["wall"] for r in mine), sum(r.get("cpu", 0.0) for r in mine)
        print(f"{kind:28} {len(mine):6d} {spent:12.1f} {spent / total:6.1%} {used:11.1f} {alive:17.1f}")
    print(f"{'all':28} {len(found):6d} {total:12.1f} {'':6} {total_cpu:11.1f}")
    print("\n30 slowest specs (wall s, CPU s of the worker and the children it reaped):")
    for r in sorted(found, key=lambda r: r["wall"], reverse=True)[:30]:
        print(f"{r['wall']:8.2f} s {r.get('cpu', 0.0):6.2f} s  {category(r):28} {r['nodeid']}")
    print(f"\nrun wall time {wall:.1f} s; CPU of pytest and its children {cpu:.1f} s (user + system; the specs' own")
    print(f"share above is {total_cpu:.1f} s, the rest is start-up and collection in each worker)")
    busy(found)


def busy(found: list[dict[str, Any]], step: float = 10.0) -> None:
    """How busy the run was over time: per ``step`` seconds from the first spec's start, the specs in progress (on
    average) and the CPU cores their work kept busy (each spec's CPU spread evenly over its wall time). A tail of
    few specs at low CPU is time the worker count or the order of the specs could win back."""
    timed = [r for r in found if "at" in r]
    if not timed:
        return
    first = min(r["at"] for r in timed)
    slots = int(max(r["at"] + r["wall"] for r in timed) - first) // int(step) + 1
    running, cores = [0.0] * slots, [0.0] * slots
    for r in timed:
        begin, end = r["at"] - first, r["at"] - first + r["wall"]
        rate = r.get("cpu", 0.0) / r["wall"] if r["wall"] > 0 else 0.0
        for slot in range(int(begin // step), int(end // step) + 1):
            overlap = max(0.0, min(end, (slot + 1) * step) - max(begin, slot * step))
            running[slot] += overlap / step
            cores[slot] += overlap * rate / step
    print(f"\nfrom the first spec's start, per {step:g} s: specs in progress, cores their work kept busy")
    for slot in range(slots):
        print(f"{slot * step:6.0f} s  {running[slot]:5.1f} specs  {cores[slot]:4.2f} cores")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    make_test_workers = str(3 * len(os.sched_getaffinity(0)))  # what the Makefile's TEST_WORKERS gives
    parser.add_argument("--workers", default=make_test_workers, help="pytest-xdist -n value (default: as make test)")
    parser.add_argument("--records", help="also write every spec's record (JSON list) to this file, to compare runs")
    parser.add_argument("selection", nargs="*", help="pytest selection (default: by HARNESS_BENCH)")
    args = parser.parse_args()
    long = os.environ.get("HARNESS_BENCH") == "long"
    selection = args.selection or (["specs", "-m", "not cluster and not twin"] if long else ["specs/guard"])
    with tempfile.TemporaryDirectory(prefix="suite-profile-") as out:
        env = {**os.environ, OUT_ENV: out, "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT)])}
        env["PYTHONDONTWRITEBYTECODE"] = ""  # bytecode written and reused, as in make test
        command = [sys.executable, "-m", "pytest", "-q", "-p", "bench_suite_profile", "-n", args.workers, *selection]
        print("profiling:", " ".join(command[1:]), flush=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, env=env, timeout=RUN_TIMEOUT, capture_output=True, text=True)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        lines = done.stdout.strip().splitlines()
        for line in lines:  # the short summary's failures and errors: a profile of a red run says which were red
            if line.startswith(("FAILED ", "ERROR ")):
                print(line[:300])
        print(lines[-1] if lines else "(pytest printed nothing)")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        found = list(records(Path(out)))
        if args.records:
            Path(args.records).write_text(json.dumps({"wall": wall, "cpu": cpu, "specs": found}))
        report(found, wall, cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
