"""What does installing the harness add to the start-up of a project that does not use it?

Prints figures; asserts nothing. Run: ``.venv/bin/python benchmarks/bench_plugin_startup.py [--runs N]``
(``HARNESS_BENCH=long``: 30 runs; ``--clean`` removes the cached environments and stops).

Three virtual environments, built from one wheelhouse with ``pip install --no-index`` (pinned to this venv's
versions, so each holds the same builds): (a) pytest alone; (b) the harness's base requirements, read at run time
from the metadata of a wheel built from this working tree (``Requires-Dist`` without extras), without stack-harness;
(c) the same packages plus that wheel, a normal install (``--no-deps``). They live under
``$XDG_CACHE_HOME/stack-harness/bench-plugin-startup`` (``~/.cache`` without it), one set at a time: a new
requirement set, pin or Python replaces it; the wheel is built and reinstalled into (c) on every run.

A tiny foreign project (its own ``pyproject.toml`` without ``[tool.harness]``, one plain spec) is run with
``python -m pytest -q`` in each environment, and in (c) with ``-p no:harness`` too, interleaved (the order rotates
every round), ``--runs`` times each after one warm-up, first with ``PYTHONDONTWRITEBYTECODE=1`` (pytest's rewritten
byte-code removed first, so every run compiles what it rewrites: a CI job's cost), then with byte-code written
(the warm-up writes it). Each figure is the wall time of the whole process, interpreter start-up included; the
CPU time (user + system) is printed too, being less sensitive to a loaded machine, and the median of the differences
within each round. Target: (c) - (b) at most 20 ms, medians, in both modes.

Which plugin costs what: the same project is run a few times in (c) under an in-process profiler that times, per
owner (the distribution of a plugin's module), loading each ``pytest11`` entry point (its import, and the modules it
registers) and the time spent in its hook implementations (exclusive of hooks they call), plus pytest's scan of
every distribution for entry points and its marking of plugin distributions for assertion rewriting.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
TARGET_MS = 20.0
RUNS = 30 if os.environ.get("HARNESS_BENCH") == "long" else 10
PROFILE_RUNS = 9 if os.environ.get("HARNESS_BENCH") == "long" else 5
PIP_TIMEOUT = 900.0  # seconds for one pip download or install: a cold wheelhouse fetches some 100 MB
RUN_TIMEOUT = 120.0  # seconds for one inner pytest run (a second or two when all is well)
PYPROJECT = '[project]\nname = "foreign"\nversion = "0"\n\n[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\n'
SPEC = "def test_adds():\n    assert 1 + 1 == 2\n"
DROPPED_ENV = {"PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
DROPPED_ENV |= {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONPYCACHEPREFIX"}
VARIANTS: tuple[tuple[str, str, list[str]], ...] = (
    ("(a) pytest alone", "a", []),
    ("(b) base, no stack-harness", "b", []),
    ("(c) base + stack-harness", "c", []),
    ("(c) -p no:harness", "c", ["-p", "no:harness"]),
)

# Runs in (c) as `python -c PROFILER OUT -q`: wraps pluggy's hook implementations and pytest's plugin loading with
# timers, runs pytest, and writes {owner: {"load": s, "hooks": s, "modules": n}, ...} to OUT. Times are exclusive: a
# hook or a load that runs others (a plugin's import registering more plugins) is charged only for its own part.
PROFILER = r"""
import importlib.metadata, inspect, json, sys, time
import pluggy._hooks

clock = time.perf_counter
totals = {}
stack = []  # per open timed segment: time spent in timed segments nested in it

def charge(owner, kind, seconds, modules=0):
    entry = totals.setdefault(owner, {"load": 0.0, "hooks": 0.0, "modules": 0, "calls": 0})
    entry[kind] += seconds
    entry["modules"] += modules
    entry["calls"] += kind == "hooks"

def timed(owner, kind, call):
    stack.append(0.0)
    started, before = clock(), len(sys.modules)
    try:
        return call()
    finally:
        spent = clock() - started
        nested = stack.pop()
        if stack:
            stack[-1] += spent
        charge(owner, kind, spent - nested, len(sys.modules) - before if kind == "load" else 0)

def owner_of(plugin):
    name = getattr(plugin, "__name__", None) or type(plugin).__module__
    top = name.split(".")[0]
    if top in ("_pytest", "pytest", "py"):
        return "pytest (built-in plugins)"
    if top == "conftest" or name.endswith("conftest"):
        return "conftest"
    return DISTS.get(top, [top])[0]

DISTS = importlib.metadata.packages_distributions()

def wrap(function, owner):
    if inspect.isgeneratorfunction(function):
        def wrapper(*args):
            gen = function(*args)
            value = timed(owner, "hooks", lambda: next(gen))
            while True:
                try:
                    sent = yield value
                except BaseException as exc:
                    step = lambda exc=exc: gen.throw(exc)
                else:
                    step = lambda sent=sent: gen.send(sent)
                try:
                    value = timed(owner, "hooks", step)
                except StopIteration as done:
                    return done.value
    else:
        def wrapper(*args):
            return timed(owner, "hooks", lambda: function(*args))
    return wrapper

init = pluggy._hooks.HookImpl.__init__

def hookimpl_init(self, plugin, plugin_name, function, hook_impl_opts):
    init(self, plugin, plugin_name, function, hook_impl_opts)
    self.function = wrap(function, owner_of(plugin))

pluggy._hooks.HookImpl.__init__ = hookimpl_init
load = importlib.metadata.EntryPoint.load

def entry_point_load(self):
    owner = self.dist.name if self.dist is not None else self.name
    return timed(owner, "load", lambda: load(self)) if self.group == "pytest11" else load(self)

importlib.metadata.EntryPoint.load = entry_point_load

import _pytest.config

manager = _pytest.config.PytestPluginManager
register, scan = manager.register, manager.load_setuptools_entrypoints

def plugin_register(self, plugin, name=None):
    return timed(owner_of(plugin), "load", lambda: register(self, plugin, name))

manager.register = plugin_register
manager.load_setuptools_entrypoints = lambda self, group, name=None: timed(
    "(pytest: entry-point scan of every distribution)", "load", lambda: scan(self, group, name)
)
mark = _pytest.config.Config._mark_plugins_for_rewrite
_pytest.config.Config._mark_plugins_for_rewrite = lambda self, hook, disable: timed(
    "(pytest: marking plugin distributions for rewrite)", "load", lambda: mark(self, hook, disable)
)
out = sys.argv.pop(1)
began = clock()
try:
    code = _pytest.config.main()
finally:
    totals["(whole pytest.main)"] = {"load": clock() - began, "hooks": 0.0, "modules": len(sys.modules), "calls": 0}
    with open(out, "w") as f:
        json.dump(totals, f)
sys.exit(code)
"""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stack-harness" / "bench-plugin-startup"


def run(argv: list[str], *, timeout: float, cwd: Path | None = None) -> str:
    """Run a set-up command within ``timeout`` seconds; its output, or ``SystemExit`` with it when it fails."""
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(f"timed out after {timeout:.0f}s: {' '.join(argv)}") from exc
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def pip(*args: str) -> str:
    return run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], timeout=PIP_TIMEOUT)


def build_wheel(work: Path) -> Path:
    """A wheel of this working tree (tracked files as they are now), built outside it: the build leaves nothing here."""
    listed = run(["git", "-C", str(REPO), "ls-files", "-z"], timeout=30.0)
    source = work / "source"
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(work / "dist"), str(source))
    (wheel,) = (work / "dist").glob("stack_harness-*.whl")
    return wheel


def base_requirements(wheel: Path, work: Path) -> list[str]:
    """``Requires-Dist`` of the wheel without the extras': what ``pip install stack-harness`` brings."""
    with zipfile.ZipFile(wheel) as archive:
        (info,) = {n.split("/")[0] for n in archive.namelist() if n.split("/")[0].endswith(".dist-info")}
        archive.extractall(work / "unpacked", [n for n in archive.namelist() if n.startswith(info + "/")])
    requires = metadata.PathDistribution(work / "unpacked" / info).requires or []
    return sorted({r for r in requires if (m := Requirement(r).marker) is None or m.evaluate({"extra": ""})})


def pins() -> list[str]:
    """This venv's installed versions (stack-harness aside), as constraints: the environments get the same builds."""
    found = {d.metadata["Name"].lower(): d.version for d in metadata.distributions() if d.metadata["Name"]}
    found.pop("stack-harness", None)
    return [f"{name}=={version}" for name, version in sorted(found.items())]


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def installed(venv: Path) -> set[str]:
    listing = "import importlib.metadata as m; print(*{d.name for d in m.distributions()})"
    out = run([str(python_of(venv)), "-I", "-c", listing], timeout=60.0)  # -I: not the cwd's own egg-info
    return set(out.split())


def environments(wheel: Path, requirements: list[str]) -> dict[str, Path]:
    """The three venvs, reused while the requirement set, the pins and the Python are the same (else rebuilt)."""
    root = cache_root()
    constraints = pins()
    pytest_pin = next(p for p in constraints if p.startswith("pytest=="))
    key = hashlib.sha256(json.dumps([sys.version, requirements, constraints]).encode()).hexdigest()[:16]
    venvs = {"a": root / "venv-pytest", "b": root / "venv-base", "c": root / "venv-harness"}
    if (root / "key").is_file() and (root / "key").read_text() == key:
        print(f"environments: reused from {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        (root / "constraints.txt").write_text("\n".join(constraints) + "\n")
        (root / "base.txt").write_text("\n".join(requirements) + "\n")
        c = ["-c", str(root / "constraints.txt")]
        started = time.monotonic()
        wheels = str(root / "wheelhouse")
        base = ["-r", str(root / "base.txt")]
        pip("wheel", "--quiet", "--wheel-dir", wheels, *base, pytest_pin, *c)  # the one step that may use the registry
        for name, wanted in (("a", [pytest_pin]), ("b", base), ("c", base)):
            run([sys.executable, "-m", "venv", "--without-pip", str(venvs[name])], timeout=120.0)
            target = ["--python", str(python_of(venvs[name]))]
            pip(*target, "install", "--quiet", "--no-index", "--find-links", wheels, *wanted, *c)
        (root / "key").write_text(key)
        print(f"environments: built in {time.monotonic() - started:.0f} s under {root}")
    target = ["--python", str(python_of(venvs["c"]))]
    pip(*target, "install", "--quiet", "--no-deps", "--no-index", "--force-reinstall", str(wheel))
    difference = installed(venvs["c"]) ^ installed(venvs["b"])
    if difference != {"stack-harness"}:
        print(f"warning: (b) and (c) differ by more than stack-harness: {sorted(difference)}")
    return venvs


def clean_env(dont_write: bool, state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV and not k.startswith("HARNESS_")}
    env["HARNESS_STATE_DIR"] = str(state)  # anything the plugin wrote would show there, not in the user's own
    if dont_write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def drop_rewritten_bytecode(*folders: Path) -> int:
    """Remove pytest's rewritten byte-code (``*-pytest-*.pyc``): without it each run compiles what pytest rewrites."""
    gone = 0
    for folder in folders:
        for pyc in folder.rglob("*-pytest-*.pyc"):
            pyc.unlink()
            gone += 1
    return gone


def run_once(python: Path, extra: list[str], project: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds and CPU seconds (user + system) of one ``python -m pytest -q`` in ``project``, and its output."""
    argv = [str(python), "-m", "pytest", "-q", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(f"inner pytest timed out after {RUN_TIMEOUT:.0f}s: {' '.join(argv)}") from exc
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"inner pytest failed ({' '.join(argv)}):\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, done.stdout + done.stderr


def ms(samples: list[float]) -> str:
    s = sorted(x * 1000 for x in samples)
    return f"median {statistics.median(s):7.1f}  min {s[0]:7.1f}  max {s[-1]:7.1f} ms"


def difference(name: str, wall: dict[str, list[float]], cpu: dict[str, list[float]], x: str, y: str) -> str:
    d_wall = (statistics.median(wall[x]) - statistics.median(wall[y])) * 1000
    d_cpu = (statistics.median(cpu[x]) - statistics.median(cpu[y])) * 1000
    d_min = (min(wall[x]) - min(wall[y])) * 1000
    # Runs of one round are seconds apart: their difference cancels the machine's slower drifts in load.
    paired = statistics.median(a - b for a, b in zip(wall[x], wall[y], strict=True)) * 1000
    spread = f"min to min {d_min:+6.1f}, per round {paired:+6.1f}"
    return f"  {name:<34} wall {d_wall:+7.1f} ms ({spread})   cpu {d_cpu:+7.1f} ms"


def measure(venvs: dict[str, Path], project: Path, dont_write: bool, runs: int, state: Path) -> str:
    env = clean_env(dont_write, state)
    wall: dict[str, list[float]] = {label: [] for label, _, _ in VARIANTS}
    cpu: dict[str, list[float]] = {label: [] for label, _, _ in VARIANTS}
    output = ""
    for _, venv, extra in VARIANTS:  # warm-up: the file system cache; with byte-code written, it writes it
        run_once(python_of(venvs[venv]), extra, project, env)
    for round_ in range(runs):
        for i in range(len(VARIANTS)):
            label, venv, extra = VARIANTS[(round_ + i) % len(VARIANTS)]
            seconds, spent, text = run_once(python_of(venvs[venv]), extra, project, env)
            wall[label].append(seconds)
            cpu[label].append(spent)
            output = text if label.startswith("(c) base") else output
    print(f"\n{'PYTHONDONTWRITEBYTECODE=1' if dont_write else 'byte-code written'}: {runs} interleaved runs each")
    for label, _, _ in VARIANTS:
        print(f"  {label:<28} wall {ms(wall[label])}   cpu median {statistics.median(cpu[label]) * 1000:6.1f} ms")
    a, b, c, no = (label for label, _, _ in VARIANTS)
    cost = (statistics.median(wall[c]) - statistics.median(wall[b])) * 1000
    verdict = "within" if cost <= TARGET_MS else "over"
    print(difference(f"(c) - (b): the harness [{verdict} {TARGET_MS:.0f} ms]", wall, cpu, c, b))
    print(difference("(c) - (a): over pytest alone", wall, cpu, c, a))
    print(difference("(b) - (a): the base packages alone", wall, cpu, b, a))
    print(difference("(c) -p no:harness - (b): left over", wall, cpu, no, b))
    return output


def profile(venv: Path, project: Path, dont_write: bool, runs: int, state: Path, work: Path) -> None:
    env = clean_env(dont_write, state)
    figures: dict[str, dict[str, list[float]]] = {}
    for i in range(runs):
        out = work / f"profile-{i}.json"
        argv = [str(python_of(venv)), "-c", PROFILER, str(out), "-q"]
        try:
            subprocess.run(argv, cwd=project, env=env, capture_output=True, timeout=RUN_TIMEOUT, check=False)
        except subprocess.TimeoutExpired as exc:
            raise SystemExit(f"profiled pytest timed out after {RUN_TIMEOUT:.0f}s") from exc
        for owner, entry in json.loads(out.read_text()).items():
            for kind, value in entry.items():
                figures.setdefault(owner, {}).setdefault(kind, []).append(float(value))
    mode = "PYTHONDONTWRITEBYTECODE=1" if dont_write else "byte-code written"
    print(f"\nwhich plugin costs what in (c), {mode}: medians of {runs} profiled runs (ms, exclusive)")
    print(f"  {'owner':<52} {'load':>7} {'hooks':>7} {'calls':>6} {'modules':>8}")
    whole = figures.pop("(whole pytest.main)")

    def cost(item: tuple[str, dict[str, list[float]]]) -> float:
        return -statistics.median(item[1]["load"]) - statistics.median(item[1]["hooks"])

    for owner, entry in sorted(figures.items(), key=cost):
        load, hooks = statistics.median(entry["load"]) * 1000, statistics.median(entry["hooks"]) * 1000
        calls, modules = statistics.median(entry["calls"]), statistics.median(entry["modules"])
        print(f"  {owner:<52} {load:7.1f} {hooks:7.1f} {calls:6.0f} {modules:8.0f}")
    print(
        f"  whole pytest.main: {statistics.median(whole['load']) * 1000:.1f} ms, "
        f"{statistics.median(whole['modules']):.0f} modules in sys.modules at the end "
        "(load: importing and registering, with the modules it imported; hooks: time in its hook implementations)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=RUNS, help=f"interleaved runs per variant and mode (default {RUNS})"
    )
    parser.add_argument("--profile-runs", type=int, default=PROFILE_RUNS, help="profiled runs per mode")
    parser.add_argument("--clean", action="store_true", help="remove the cached environments and stop")
    args = parser.parse_args()
    if args.clean:
        shutil.rmtree(cache_root(), ignore_errors=True)
        print(f"removed {cache_root()}")
        return
    with tempfile.TemporaryDirectory(prefix="bench-plugin-startup-") as folder:
        work = Path(folder)
        wheel = build_wheel(work)
        requirements = base_requirements(wheel, work)
        print(f"base requirements of {wheel.name} (its metadata, no extras): {', '.join(requirements)}")
        venvs = environments(wheel, requirements)
        for name, venv in venvs.items():
            print(f"  ({name}) {len(installed(venv))} distributions: {venv}")
        project, state = work / "project", work / "state"
        project.mkdir()
        (project / "pyproject.toml").write_text(PYPROJECT)
        (project / "test_plain.py").write_text(SPEC)
        dropped = drop_rewritten_bytecode(project, *venvs.values())
        print(f"pytest's rewritten byte-code removed before the first mode: {dropped} file(s)")
        output = ""
        for dont_write in (True, False):
            output = measure(venvs, project, dont_write, args.runs, state)
            profile(venvs["c"], project, dont_write, args.profile_runs, state, work)
        said = [line for line in output.splitlines() if "harness" in line.lower()]
        print(f"\nlines naming the harness in (c)'s output: {len(said)}")
        for line in said:
            print(f"    {line}")
        print(f"artifacts/ left in the project: {'yes' if (project / 'artifacts').exists() else 'no'}")
        print(f"files the plugin wrote to its state dir: {len(list(state.rglob('*'))) if state.exists() else 0}")


if __name__ == "__main__":
    main()
