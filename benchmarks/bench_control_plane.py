"""Benchmark of the real control plane (:mod:`harness.controlplane`): how long a cold start takes, what it holds in
memory, what a kubectl verb costs against it next to the API double (``fakes.kube``), and what a build costs when
there is nothing (or only linking) to do.

- start, over ``STARTS`` cold starts (each a fresh folder, PKI, etcd data): every component's ``ready_after``
  (its own spawn to its probe answering), and from the plane's origin (``ControlPlane.timings``: the start's first
  moment, PKI included) to ``/readyz``, to every Node Ready, to ready (``start()`` returns), then to a one-replica
  Deployment's rollout complete (``kubectl create deployment`` + ``kubectl rollout status`` right after the start:
  its pod scheduled, simulated by kwok and Ready); median and min/max of each, and the stop. (Nodes-ready to ready
  is the wait for the default ServiceAccount: at its client's default rate limit, ``--kube-api-qps`` 20,
  kube-controller-manager started its controllers about 150 ms apart and that wait was about 4 s of a start on 2
  cores; it runs at 200 now, see :func:`harness.controlplane.components.kube_controller_manager`.)
- memory: each component's resident set (``VmRSS`` in ``/proc/<pid>/status``) once that Deployment is rolled out.
- kubectl verbs: median wall time of ``CALLS`` calls of ``get pods -o name`` and of ``apply`` of a small ConfigMap
  (its data changed on every call, so each one writes), against the real control plane and against the API double
  serving the same ``gitVersion``, beside ``version --client`` as the floor (process start, no server). Through the
  installed kubectl (a dispatcher: it asks the server's ``/version`` on every call and runs the matching build, so
  both sides run the same build; it answers ``version --client`` itself) and through that build directly.
- build: ``python -m harness.controlplane build`` with the cache current (it builds nothing); with
  ``HARNESS_BENCH=long``, also ``build --force`` into a scratch cache (``HARNESS_CONTROL_PLANE_CACHE``, removed
  after) with Go's own caches warm: every binary compiled from Go's build cache and linked again. A cold build (empty
  Go caches, every module downloaded: several minutes and the network) runs only with ``HARNESS_BENCH_COLD_BUILD=1``,
  into temporary ``GOCACHE`` and ``GOMODCACHE`` folders that are removed after; the user's Go caches are never touched.

Figures, not asserts (house rules). Nothing is measured without the binaries (``make control-plane`` builds them):
it says so and exits 0. ``HARNESS_BENCH=quick`` (the default): 3 starts, 10 calls; ``long``: 5 starts, 30 calls.
Run: ``HARNESS_BENCH=quick .venv/bin/python benchmarks/bench_control_plane.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fakes.kube
from harness import process
from harness.controlplane import build
from harness.controlplane.assets import find
from harness.controlplane.plane import ControlPlane, Settings
from harness.controlplane.release import NAMES, pinned
from harness.errors import ControlPlaneError

LONG = os.environ.get("HARNESS_BENCH") == "long"
COLD_BUILD = os.environ.get("HARNESS_BENCH_COLD_BUILD") == "1"
STARTS = 5 if LONG else 3
CALLS = 30 if LONG else 10

KUBECTL_TIMEOUT = 60.0
"""Seconds one kubectl call may take (a verb takes well under one)."""
ROLLOUT_SECONDS = 90
"""Seconds ``kubectl rollout status`` waits for the Deployment (its own ``--timeout``); the call is bounded a little
beyond that."""
NOTHING_TO_BUILD_TIMEOUT = 300.0
"""Seconds ``build`` may take when the cache is current (it hashes the module files and stats the binaries)."""
BUILD_TIMEOUT = build.GO_TIMEOUT * 2
"""Seconds a forced or cold build may take (each of its ``go`` commands is bounded by ``build.GO_TIMEOUT``)."""
IMAGE = "registry.local/app:1"  # kwok runs no container: the image is never pulled


# --- figures --------------------------------------------------------------------------------------------------


def _spread(samples: Sequence[float], unit: str = "s", scale: float = 1.0, digits: int = 2) -> str:
    values = [v * scale for v in samples]
    med, low, high = statistics.median(values), min(values), max(values)
    return f"{med:8.{digits}f} {unit}   (min {low:.{digits}f}, max {high:.{digits}f})"


def _row(name: str, text: str) -> None:
    print(f"  {name:<52} {text}")


# --- kubectl --------------------------------------------------------------------------------------------------


class Kubectl:
    """A kubectl pinned to one kubeconfig, context and discovery cache (as ``fakes.kube`` runs it)."""

    def __init__(self, kubeconfig: str, context: str, cache_dir: str, binary: str = "kubectl") -> None:
        self.argv = [binary, "--kubeconfig", kubeconfig, "--context", context, "--cache-dir", cache_dir]
        self.env = {**os.environ, "KUBECONFIG": kubeconfig, "KUBECACHEDIR": cache_dir}

    def __call__(self, *args: str, stdin: str | None = None, timeout: float = KUBECTL_TIMEOUT) -> str:
        done = process.run_bounded(
            [*self.argv, *args],
            timeout=timeout,
            input=stdin.encode() if stdin is not None else None,
            env=self.env,
        )
        if done.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-600:]}")
        return done.stdout


def _configmap(value: int) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "bench-config", "namespace": "default", "labels": {"app": "bench"}},
        "data": {"value": str(value), "greeting": "hello"},
    }
    return json.dumps(doc)


def _median_ms(call: Callable[[], object], calls: int) -> float:
    call()  # warm-up: discovery cache, the dispatcher's version probe
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        call()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1e3


def _verbs(kubectl: Kubectl, calls: int) -> dict[str, float]:
    counter = iter(range(1_000_000))
    return {
        "version --client (floor: no server)": _median_ms(lambda: kubectl("version", "--client"), calls),
        "get pods -n default -o name": _median_ms(lambda: kubectl("get", "pods", "-n", "default", "-o", "name"), calls),
        "apply -f - (small ConfigMap, changed)": _median_ms(
            lambda: kubectl("apply", "-f", "-", stdin=_configmap(next(counter))), calls
        ),
    }


# --- the control plane ----------------------------------------------------------------------------------------


def _plane_kubectl(plane: ControlPlane, binary: str = "kubectl") -> Kubectl:
    assert plane.root is not None
    return Kubectl(str(plane.kubeconfig), plane.context, str(plane.root / "kubectl-cache"), binary)


def _kubectls(minor: str) -> list[tuple[str, str]]:
    """(label, binary): the installed kubectl, and the build it dispatches to for ``minor`` when it is there."""
    installed = shutil.which("kubectl")
    assert installed is not None
    kubectls = [(f"the installed kubectl ({installed})", "kubectl")]
    build = os.path.join(os.path.dirname(os.path.realpath(installed)), f"kubectl.{minor}")
    if os.access(build, os.X_OK):
        kubectls.append((f"kubectl {minor} directly ({build})", build))
    return kubectls


def _rss_kib(pid: int) -> tuple[str, int | None]:
    """(``comm``, ``VmRSS`` in KiB) of ``pid``; ``None`` for a process that is gone."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return comm, int(line.split()[1])
    except OSError:
        pass
    return "?", None


class Start:
    """One cold start's figures: seconds from the plane's origin, per component and per milestone."""

    def __init__(self) -> None:
        self.ready_after: dict[str, float] = {}
        self.milestones: dict[str, float] = {}
        self.rss: dict[str, int] = {}
        self.stop = 0.0


MILESTONES = (
    ("before etcd's spawn (folder, PKI)", "first-spawn"),
    ("to /readyz (timings['readyz'])", "readyz"),
    ("to every Node Ready (timings['nodes-ready'])", "nodes-ready"),
    ("to ready (timings['ready'])", "ready"),
    ("  of which nodes-ready to ready (default SA)", "serviceaccount"),
    ("to the Deployment rolled out (pod Ready)", "deployment"),
    ("  of which create + rollout status", "rollout"),
)


def cold_start(*, then: Callable[[ControlPlane], None] | None = None) -> Start:
    """Start a plane, roll a one-replica Deployment out on it, read every component's RSS, run ``then(plane)``,
    stop it (on every path)."""
    figures = Start()
    plane = ControlPlane(Settings())
    try:
        plane.start()
        # start() takes its origin on entry and returns right after timings["ready"]: the origin, back-computed.
        origin = time.monotonic() - plane.timings["ready"]
        kubectl = _plane_kubectl(plane)
        created = time.monotonic()
        kubectl("create", "deployment", "bench", f"--image={IMAGE}", "--replicas=1", "-n", "default")
        kubectl(
            "rollout",
            "status",
            "deployment/bench",
            "-n",
            "default",
            f"--timeout={ROLLOUT_SECONDS}s",
            timeout=ROLLOUT_SECONDS + 15.0,
        )
        rolled_out = time.monotonic()
        for name, server in plane.servers.items():
            assert server.ready_after is not None
            assert server.pid is not None
            figures.ready_after[name] = server.ready_after
            comm, rss = _rss_kib(server.pid)
            if rss is None:
                raise SystemExit(f"{name} (pid {server.pid}) is gone after the rollout: the benchmark is broken")
            if comm not in name:  # /proc's comm is the first 15 characters of the binary's name
                print(f"  (pid {server.pid} of {name} is {comm!r}, not the component: its RSS is that process's)")
            figures.rss[name] = rss
        etcd = plane.servers["etcd"]
        assert etcd.started_at is not None
        figures.milestones = {
            "first-spawn": etcd.started_at - origin,
            **{k: plane.timings[k] for k in ("readyz", "nodes-ready", "ready")},
            "serviceaccount": plane.timings["ready"] - plane.timings["nodes-ready"],
            "deployment": rolled_out - origin,
            "rollout": rolled_out - created,
        }
        if then is not None:
            then(plane)
    finally:
        stopping = time.monotonic()
        plane.stop()
        figures.stop = time.monotonic() - stopping
    return figures


def start_main() -> None:
    version = pinned()
    print(
        f"control plane {version.kubernetes} (etcd {version.etcd}, kwok {version.kwok}), {STARTS} cold starts, "
        f"one kwok Node, on {os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f} at the start):"
    )
    kubectls = _kubectls(version.minor)
    verbs: dict[str, tuple[dict[str, float], dict[str, float]]] = {}  # kubectl -> (real plane's, the double's)

    def measure_verbs(plane: ControlPlane) -> None:
        git_version = str(plane.version.get("gitVersion") or version.kubernetes)
        with fakes.kube.serve(kubectl_version=git_version) as kd:
            for label, binary in kubectls:
                real = _verbs(_plane_kubectl(plane, binary), CALLS)
                double = _verbs(Kubectl(kd.kubeconfig, kd.context, kd.cache_dir, binary), CALLS)
                verbs[label] = (real, double)

    starts = [cold_start(then=measure_verbs if i == STARTS - 1 else None) for i in range(STARTS)]
    print("each component, from its spawn to its probe answering (Server.ready_after):")
    for name in NAMES:
        _row(name, _spread([s.ready_after[name] for s in starts]))
    print("the plane, from its origin (the start's first moment; ControlPlane.timings):")
    for label, key in MILESTONES:
        _row(label, _spread([s.milestones[key] for s in starts]))
    _row("stop (every component, folder removed)", _spread([s.stop for s in starts]))
    print("resident memory once the Deployment is rolled out (VmRSS):")
    for name in NAMES:
        _row(name, _spread([s.rss[name] for s in starts], "MiB", 1 / 1024, 0))
    _row("all five", _spread([sum(s.rss.values()) for s in starts], "MiB", 1 / 1024, 0))
    for label, (real, double) in verbs.items():
        print(f"kubectl verbs through {label}, median of {CALLS} calls (after one warm-up call):")
        print(f"  {'':<52} {'real control plane':>18} {'API double':>13} {'real - double':>14}")
        for verb in real:
            print(f"  {verb:<52} {real[verb]:15.1f} ms {double[verb]:10.1f} ms {real[verb] - double[verb]:+11.1f} ms")


# --- builds ---------------------------------------------------------------------------------------------------


def _build(
    *args: str, env: dict[str, str] | None = None, timeout: float = BUILD_TIMEOUT
) -> tuple[float, str, list[str]]:
    """Seconds ``python -m harness.controlplane build ARGS`` took, its last line and the steps it timed (``... done
    in N s``); raises ``SystemExit`` when it fails."""
    argv = [sys.executable, "-m", "harness.controlplane", "build", *args]
    done = process.run_bounded(argv, timeout=timeout, env=env, cwd=str(Path(__file__).resolve().parents[1]))
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[1:])} exited {done.returncode}: {process.tail(done.stderr, 12)}")
    lines = done.stdout.strip().splitlines()
    return done.duration, lines[-1] if lines else "", [line for line in lines if ": done in " in line]


def _built(label: str, took: float, said: str, steps: list[str]) -> None:
    _row(label, f"{took:8.2f} s   ({said})")
    for step in steps:
        print(f"      {step}")


def _remove(folder: str) -> None:
    """Remove ``folder``, Go's read-only module files included."""

    def writable_then_retry(function: Callable[[str], object], path: str, _exc: object) -> None:
        for made_writable in (os.path.dirname(path), path):
            with contextlib.suppress(OSError):
                os.chmod(made_writable, 0o700)
        function(path)

    shutil.rmtree(folder, onerror=writable_then_retry)  # Python 3.11: onexc is 3.12's


def build_main() -> None:
    print("builds (python -m harness.controlplane build):")
    _built("cache current (builds nothing)", *_build(timeout=NOTHING_TO_BUILD_TIMEOUT))
    if not LONG and not COLD_BUILD:
        _row("--force into a scratch cache, Go's caches warm", "(HARNESS_BENCH=long)")
        return
    scratch = tempfile.mkdtemp(prefix="bench-control-plane-build-")
    process.remove_when_gone(scratch)
    try:
        if LONG:
            env = {**os.environ, "HARNESS_CONTROL_PLANE_CACHE": os.path.join(scratch, "cache-warm")}
            _built("--force into a scratch cache, Go's caches warm", *_build("--force", env=env))
        if COLD_BUILD:
            go_caches = os.path.join(scratch, "go")
            env = {
                **os.environ,
                "HARNESS_CONTROL_PLANE_CACHE": os.path.join(scratch, "cache-cold"),
                "GOCACHE": os.path.join(go_caches, "build"),
                "GOMODCACHE": os.path.join(go_caches, "mod"),
                "GOFLAGS": " ".join([*os.environ.get("GOFLAGS", "").split(), "-modcacherw"]),
            }
            _built("--force into a scratch cache, Go's caches empty", *_build("--force", env=env))
    finally:
        _remove(scratch)
        process.forget_folder(scratch)


def main() -> int:
    if shutil.which("kubectl") is None:
        print("no kubectl on PATH: nothing to measure")
        return 0
    missing = find().missing()
    if missing:
        print(f"no control plane to measure (missing: {', '.join(missing)}); `make control-plane` builds it")
        return 0
    try:
        start_main()
    except ControlPlaneError as exc:
        print(f"the control plane did not start: {exc}")
        return 1
    build_main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
