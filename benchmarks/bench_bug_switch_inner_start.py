"""How long does a bug-switch case's inner pytest take to start and collect its cluster spec, cold and cached?

Prints figures; asserts nothing. Run: `.venv/bin/python benchmarks/bench_bug_switch_inner_start.py [--runs N]`.

Each case of ``specs/twin/test_bug_switches.py`` runs its cluster spec in a fresh pytest process. This times
``python -m pytest --collect-only`` of ``specs/cluster/test_happy_path.py`` with ``--target twin`` (no twin starts:
collection ends before the first spec) in three set-ups:

1. ``cold``: ``PYTHONDONTWRITEBYTECODE=1`` and no cache, as this environment runs (every module compiled afresh);
2. ``cached``: bytecode in one ``PYTHONPYCACHEPREFIX`` directory, filled by a first run that is not counted;
3. ``cached, plugins off``: also ``-p no:xdist -p no:xdist.looponfail -p no:hypothesispytest`` (what the bug-switch
   module's inner runs pass).

Median and max wall seconds over ``--runs`` runs each (default 3).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = "specs/cluster/test_happy_path.py"
PLUGINS_OFF = ("-p", "no:xdist", "-p", "no:xdist.looponfail", "-p", "no:hypothesispytest")
RUN_TIMEOUT = 300.0


def collect(env: dict[str, str], extra: tuple[str, ...] = ()) -> float:
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", SPEC, "--target", "twin", "-p", "no:cacheprovider"]
    began = time.monotonic()
    subprocess.run([*argv, *extra], cwd=ROOT, env=env, capture_output=True, timeout=RUN_TIMEOUT, check=True)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="bench-pycache-"))
    try:
        cold = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = str(cache)
        collect(cached)  # fills the cache; not counted
        for label, env, extra in (
            ("cold", cold, ()),
            ("cached", cached, ()),
            ("cached, plugins off", cached, PLUGINS_OFF),
        ):
            times = [collect(env, extra) for _ in range(args.runs)]
            print(f"{label:<22} median {statistics.median(times):6.2f} s  max {max(times):6.2f} s  ({args.runs} runs)")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
