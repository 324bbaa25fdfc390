"""The cluster specs as an Indexed Job (``make e2e-job``) against the main job's own sharding on this machine
(``make e2e`` with the same selection): wall time of each, and each one's passed count. Nothing is asserted.

Run: ``python benchmarks/bench_jobrun.py [--shards 2] [--on double] [--repeat 1]``. ``--on`` is what each shard's
twin runs on (``TWIN_ON``). ``make bench`` runs the quick set (2 shards, twins on the double, once each); ``make
bench LONG=1`` runs 2 and 4 shards, three times each. The Job's time includes starting its control plane and
local node (``make e2e`` starts none); both include starting the twins.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import process  # noqa: E402 (the repository root first, so this runs from anywhere)

RUN_TIMEOUT = 3600.0
"""Seconds one run may take (the twins on the control plane, 2 shards: under 15 minutes on 2 cores)."""
SELECTION = "-m cluster --target twin -p no:cacheprovider"


def timed(argv: list[str]) -> tuple[float, int, str]:
    start = time.monotonic()
    done = process.run_bounded(argv, timeout=RUN_TIMEOUT, cwd=str(ROOT))
    return time.monotonic() - start, done.returncode, done.stdout + done.stderr


def passed(output: str) -> str:
    """The count line of the run: pytest's for ``make e2e``, the Job's merged one for ``make e2e-job``."""
    job = re.findall(r"\d+/\d+ shards done; specs: ([^(]*)", output)
    if job:
        return job[-1].strip()
    lines = re.findall(r"=+ (.*(?:passed|failed|error).*) in [\d.]+s", output)
    return lines[-1] if lines else "no count line"


def main() -> None:
    long = os.environ.get("HARNESS_BENCH") == "long"
    parser = argparse.ArgumentParser()
    parser.add_argument("--shards", default="2,4" if long else "2")
    parser.add_argument("--on", default="double", choices=("double", "control-plane"))
    parser.add_argument("--repeat", type=int, default=3 if long else 1)
    args = parser.parse_args()
    make = ["make", "--no-print-directory"]
    runs = [("make e2e", [*make, "e2e", f"TWIN_ON={args.on}", f"PYTEST_ARGS={SELECTION}"])]
    runs += [
        (f"make e2e-job SHARDS={n}", [*make, "e2e-job", f"SHARDS={n}", f"TWIN_ON={args.on}"])
        for n in (int(s) for s in args.shards.split(","))
    ]
    print(f"cluster specs ({SELECTION}), twins on {args.on}, {os.cpu_count()} cores")
    for name, argv in runs:
        for attempt in range(1, args.repeat + 1):
            wall, code, output = timed(argv)
            print(f"{name:<24} run {attempt}: {wall:7.1f} s  exit {code}  {passed(output)}", flush=True)


if __name__ == "__main__":
    main()
