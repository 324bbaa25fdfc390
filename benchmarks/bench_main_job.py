"""The main job's own specs on the stack twin: wall time by time scale and number of twins, and where each spec
file's time goes (waiting on the stack versus everything else). Nothing is asserted.

Run: ``python benchmarks/bench_main_job.py [--scales 5] [--twins 2] [--select cluster,twin,"cluster or twin"]
[--on double,control-plane]``; ``--on`` picks what the twins run on (the API double, or this machine's real control
plane with a local node: the same specs, where the time goes on each).
``make bench`` runs the quick set (the default scale, two twins, the main job's selection ``cluster or twin``);
``make bench LONG=1`` runs every combination of scale 1 and the default scale, one and two twins, and the cluster
and twin-marked selections apart (at scale 1 a run is 10 to 15 minutes on 2 cores).

Each run is ``pytest specs -m SELECTION --target twin --time-scale K -n TWINS --dist loadgroup`` with a JUnit file.
One xdist worker per twin: each worker starts its own twin, so ``-n 1`` is one twin and ``-n 2`` two. Printed per
run: wall time, pytest's own count line, and per spec file the summed spec time split into ``wait`` (inside the
harness's ``wait_for`` loops: the ``harness.wait.N`` properties every spec's waits leave in the JUnit file) and
``work`` (the rest: set-up, kubectl calls, HTTP, the spec's own windows outside ``wait_for``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import process  # noqa: E402 (the repository root first, so this runs from anywhere)

RUN_TIMEOUT = 3600.0
"""Seconds one run may take (scale 1 with one twin is the longest: about 15 minutes on 2 cores)."""


@dataclass
class FileTime:
    specs: int = 0
    seconds: float = 0.0
    waiting: float = 0.0


@dataclass
class Run:
    selection: str
    scale: float
    twins: int
    on: str
    wall: float
    outcome: str
    files: dict[str, FileTime] = field(default_factory=dict)


def run_once(selection: str, scale: float, twins: int, on: str = "double") -> Run:
    with tempfile.TemporaryDirectory(prefix="bench-main-job-") as tmp:
        junit = Path(tmp) / "junit.xml"
        argv = [sys.executable, "-m", "pytest", "specs", "-m", selection, "--target=twin", f"--time-scale={scale:g}"]
        argv += [f"-n={twins}", "--dist=loadgroup", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"]
        argv += [f"--twin-on={on}"]
        began = time.monotonic()
        done = process.run_bounded(argv, timeout=RUN_TIMEOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.monotonic() - began
        lines = [line for line in done.stdout.splitlines() if " in " in line and ("passed" in line or "failed" in line)]
        outcome = lines[-1].strip("= ") if lines else f"exit {done.returncode}: {process.tail(done.stdout, 3)}"
        files = per_file(junit) if junit.exists() else {}
    return Run(selection, scale, twins, on, wall, outcome, files)


def per_file(junit: Path) -> dict[str, FileTime]:
    """Per spec file: specs, summed time, summed time inside ``wait_for`` (from the JUnit wait properties)."""
    files: dict[str, FileTime] = defaultdict(FileTime)
    for case in ET.parse(junit).iter("testcase"):
        row = files[spec_file(case.get("classname") or "")]
        row.specs += 1
        row.seconds += float(case.get("time") or 0.0)
        for prop in case.iter("property"):
            if (prop.get("name") or "").startswith("harness.wait."):
                try:
                    row.waiting += float(json.loads(prop.get("value") or "{}").get("elapsed") or 0.0)
                except ValueError:
                    continue
    return dict(files)


def spec_file(classname: str) -> str:
    """``specs/x/test_y.py`` of a JUnit classname (``specs.x.test_y``, or ``specs.x.test_y.TestClass``)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if (ROOT / path).is_file():
            return path
    return classname


def show(run: Run) -> None:
    where = f"time scale {run.scale:g}, {run.twins} twin(s) on {run.on}"
    print(f"\n== -m {run.selection!r}, {where}: {run.wall:.1f} s wall")
    print(f"   pytest: {run.outcome}")
    total = sum(f.seconds for f in run.files.values())
    waiting = sum(f.waiting for f in run.files.values())
    print(f"   spec time {total:.1f} s (wait {waiting:.1f} s, work {total - waiting:.1f} s)")
    print(f"   {'file':<52} {'specs':>5} {'seconds':>8} {'wait':>8} {'work':>8}")
    for name, row in sorted(run.files.items(), key=lambda kv: -kv[1].seconds):
        work = row.seconds - row.waiting
        print(f"   {name:<52} {row.specs:>5} {row.seconds:>8.1f} {row.waiting:>8.1f} {work:>8.1f}")


def main() -> None:
    long = os.environ.get("HARNESS_BENCH") == "long"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="1,5" if long else "5", help="time scales, comma-separated")
    parser.add_argument("--twins", default="1,2" if long else "2", help="twin counts (xdist workers), comma-separated")
    parser.add_argument(
        "--select", default="cluster,twin" if long else "cluster or twin", help="-m selections, comma-separated"
    )
    parser.add_argument("--on", default="double", help="what the twins run on: double, control-plane (comma-separated)")
    args = parser.parse_args()
    print(f"main job on the twin, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    for selection in args.select.split(","):
        for scale in (float(s) for s in args.scales.split(",")):
            for twins in (int(n) for n in args.twins.split(",")):
                for on in args.on.split(","):
                    show(run_once(selection.strip(), scale, twins, on.strip()))


if __name__ == "__main__":
    main()
