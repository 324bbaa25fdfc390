"""What does the harness plugin add to the start-up of a project that does not use it?

Prints figures; asserts nothing. Run: `.venv/bin/python benchmarks/bench_plugin_startup.py [--runs N]`.

A tiny foreign project (its own ``pyproject.toml`` without ``[tool.harness]``, one spec file with two plain specs
that use no harness fixture) is written into a temporary folder and run with this venv's pytest ``--runs`` times
(default 10), alternately with the plugin (loaded by its ``pytest11`` entry point) and with ``-p no:harness``.
Each figure is the wall time of the whole ``python -m pytest`` process (interpreter start-up included), so the
difference of the medians is what installing the harness costs every pytest run in the venv. Target: at most 50 ms.

It also says whether the run with the plugin printed a ``harness`` line or left an ``artifacts/`` folder.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 50.0
PYPROJECT = '[project]\nname = "foreign"\nversion = "0"\n\n[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\n'
SPECS = "def test_adds():\n    assert 1 + 1 == 2\n\n\ndef test_joins():\n    assert ','.join('ab') == 'a,b'\n"


def run_once(project: Path, extra: list[str]) -> tuple[float, float, str]:
    """Wall seconds and CPU seconds (user + system, its children included) of one inner pytest run, and its output.

    On a shared, loaded machine the wall time swings by seconds; the CPU time is what the process itself spent."""
    argv = [sys.executable, "-m", "pytest", "-q", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"inner pytest failed ({' '.join(argv)}):\n{done.stdout}\n{done.stderr}")
    return elapsed, cpu, done.stdout + done.stderr


def figures(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return f"{name:<26} min {ms[0]:7.1f} ms   median {statistics.median(ms):7.1f} ms   max {ms[-1]:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="foreign-project-") as folder:
        project = Path(folder)
        (project / "pyproject.toml").write_text(PYPROJECT)
        (project / "test_plain.py").write_text(SPECS)
        run_once(project, [])  # warm the file system cache and the byte-code of both variants
        run_once(project, ["-p", "no:harness"])
        wall: dict[str, list[float]] = {"with the plugin": [], "-p no:harness": []}
        cpu: dict[str, list[float]] = {"with the plugin": [], "-p no:harness": []}
        output = ""
        for _ in range(args.runs):
            for name, extra in (("with the plugin", []), ("-p no:harness", ["-p", "no:harness"])):
                seconds, spent, text = run_once(project, extra)
                wall[name].append(seconds)
                cpu[name].append(spent)
                output = output if extra else text
        for kind, samples in (("wall", wall), ("cpu", cpu)):
            for name, values in samples.items():
                print(figures(f"{kind} {name}", values))
            cost = (statistics.median(samples["with the plugin"]) - statistics.median(samples["-p no:harness"])) * 1000
            least = (min(samples["with the plugin"]) - min(samples["-p no:harness"])) * 1000
            verdict = "ok" if cost <= TARGET_MS else "over target"
            print(
                f"{kind} cost of the plugin: median difference {cost:.1f} ms, min difference {least:.1f} ms "
                f"(target <= {TARGET_MS:.0f} ms: {verdict})"
            )
        harness_lines = [line for line in output.splitlines() if "harness" in line.lower()]
        print(f"lines naming the harness in the run's output: {len(harness_lines)}")
        for line in harness_lines:
            print(f"    {line}")
        print(f"artifacts/ folder left in the project: {'yes' if (project / 'artifacts').exists() else 'no'}")


if __name__ == "__main__":
    main()
