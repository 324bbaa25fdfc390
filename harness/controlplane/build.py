"""Build the control plane's binaries from their Go modules, into a per-user cache.

``python -m harness.controlplane build`` (and ``make control-plane``) calls :func:`build`: it copies the committed
wrapper modules (:mod:`harness.controlplane.release`) into the cache, then runs ``go build`` for each binary with
the version stamped the way Kubernetes' own build stamps it (``hack/lib/version.sh``: ldflags on
``k8s.io/component-base/version``), so ``/version`` reports the release and clients judge skew right. A cache whose
stamp matches the committed modules builds nothing. Go's own module and build caches (``go env GOMODCACHE
GOCACHE``, per user) make a rebuild after a module change fast; they are never in the repository.

Cache: ``$HARNESS_CONTROL_PLANE_CACHE``, else ``$XDG_CACHE_HOME/stack-harness/control-plane``, else
``~/.cache/stack-harness/control-plane``; one folder per release, ``bin/``, ``kwok-stages.yaml`` and
``kwok-crds.yaml`` inside.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from harness import process
from harness.controlplane.release import BINARIES, MODULES, Binary, Release, module_digest, pinned
from harness.errors import ControlPlaneBuildFailed

GO_TIMEOUT = 3600.0
"""Seconds one ``go`` command may take: kube-apiserver alone compiles about 150 s cold on 2 idle cores, and a
loaded CI machine has been seen several times slower; a download that stalls for longer than this is not coming."""
LOCK_TIMEOUT = GO_TIMEOUT * 2
"""Seconds a second build waits for one already running for the same cache."""
VERSION_TIMEOUT = 30.0
"""Seconds a built binary may take to print its version."""
STAMP = "stamp.json"
RECIPE = 2
"""Bumped when how a binary is built changes (flags, stamps): a cache built by another recipe is stale."""
STAGES = "kwok-stages.yaml"
CRDS = "kwok-crds.yaml"
"""kwok's PortForward CRD (printed by ``modules/kwok/crds``): the plane installs it, kwok serves its objects."""

Say = Callable[[str], None]


def cache_root() -> Path:
    """Where built releases live (see the module docstring)."""
    explicit = os.environ.get("HARNESS_CONTROL_PLANE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stack-harness" / "control-plane"


def release_folder(release: Release | None = None) -> Path:
    return cache_root() / (release or pinned()).folder


def is_current(folder: Path | None = None) -> bool:
    """True when ``folder`` (default: the pinned release's) holds every binary, built from the committed modules."""
    folder = folder or release_folder()
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return False
    return (
        stamp.get("digest") == module_digest()
        and stamp.get("recipe") == RECIPE
        and all((folder / "bin" / b.name).is_file() for b in BINARIES)
        and (folder / STAGES).is_file()
        and (folder / CRDS).is_file()
    )


def go_toolchain(need: tuple[int, int]) -> tuple[str, str]:
    """``(path, "go1.N.M")`` of a Go at least ``need``; raises :class:`ControlPlaneBuildFailed` naming what is
    missing (no ``go`` on PATH, or too old)."""
    go = shutil.which("go")
    if go is None:
        raise ControlPlaneBuildFailed(
            f"no Go toolchain on PATH: building the control plane needs Go {need[0]}.{need[1]} or newer "
            "(https://go.dev/dl/), or point KUBEBUILDER_ASSETS / TEST_ASSET_<NAME> at binaries you have"
        )
    done = process.run_bounded([go, "env", "GOVERSION"], timeout=VERSION_TIMEOUT, env=_go_env())
    version = done.stdout.strip()
    found = re.match(r"go(\d+)\.(\d+)", version)
    if done.returncode != 0 or found is None:
        raise ControlPlaneBuildFailed(f"`{go} env GOVERSION` did not name a version: {process.tail(done.stderr, 3)}")
    if (int(found[1]), int(found[2])) < need:
        raise ControlPlaneBuildFailed(
            f"{go} is {version}; the control plane's modules need Go {need[0]}.{need[1]} or newer (their go.mod "
            "files' go directive)"
        )
    return go, version


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env["CGO_ENABLED"] = "0"  # static binaries, as Kubernetes' release build makes them
    env["GOTOOLCHAIN"] = "local"  # too old a Go is our clear error, not a toolchain download
    env["GOFLAGS"] = " ".join([*env.get("GOFLAGS", "").split(), "-mod=readonly", "-trimpath"])
    return env


def _ldflags(binary: Binary, release: Release) -> str:
    if binary.module != "kubernetes":
        return "-s -w"
    major, minor = release.minor.split(".")
    pkg = "k8s.io/component-base/version"
    stamps = {
        "gitVersion": release.kubernetes,
        "gitMajor": major,
        "gitMinor": minor,
        # The module proxy carries no commit: say none rather than leave the source's "$Format:%H$" placeholder.
        # Kubernetes' build says "archive" for a tree that is not a git checkout (hack/lib/version.sh).
        "gitCommit": "",
        "gitTreeState": "archive",
        "buildDate": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return " ".join(["-s -w", *(f"-X {pkg}.{k}={v}" for k, v in stamps.items())])


def _go(argv: list[str], *, cwd: Path, what: str) -> str:
    done = process.run_bounded(argv, timeout=GO_TIMEOUT, env=_go_env(), cwd=str(cwd))
    if done.returncode != 0:
        raise ControlPlaneBuildFailed(_explain(what, done.stderr))
    return done.stdout


def _explain(what: str, stderr: str) -> str:
    refused = re.search(r"(\S+@v\S+): (?:reading|verifying) \S+: (\d{3} [^\n]+)", stderr)
    if refused:
        return (
            f"{what}: the Go module proxy ({os.environ.get('GOPROXY') or 'go env GOPROXY'}) refused "
            f"{refused[1]}: {refused[2]}"
        )
    return f"{what} failed:\n{process.tail(stderr, 12)}"


@contextlib.contextmanager
def _exclusive(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "build.lock", "w") as handle:
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ControlPlaneBuildFailed(
                        f"another build of {folder} held its lock for {LOCK_TIMEOUT:.0f}s"
                    ) from None
                time.sleep(1.0)  # another process's build: nothing to wait on but its lock
        yield


def build(*, say: Say = print, force: bool = False) -> Path:
    """Build every binary of the pinned release unless the cache is current; returns the release folder.

    Prints progress through ``say``. Raises :class:`ControlPlaneBuildFailed` (no Go, too old a Go, a version the
    proxy refuses, a failed ``go build``, a binary that does not report the release)."""
    release = pinned()
    folder = release_folder(release)
    if not force and is_current(folder):
        say(f"control plane {release.kubernetes} is built: {folder} ({_size(folder)}); nothing to do")
        return folder
    go, version = go_toolchain(release.go)
    with _exclusive(cache_root()):
        if not force and is_current(folder):  # built by the build we waited for
            return folder
        say(
            f"building the control plane {release.kubernetes} (etcd {release.etcd}, kwok {release.kwok}) with {version}"
        )
        caches = _go([go, "env", "GOMODCACHE", "GOCACHE"], cwd=MODULES, what="go env").split()
        say(f"into {folder}; Go's module and build caches: {', '.join(caches)}")
        src = folder / "src"
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(MODULES, src)
        (folder / "bin").mkdir(parents=True, exist_ok=True)
        for module in dict.fromkeys(b.module for b in BINARIES):
            what = f"{module}: go mod download"
            _timed(say, what, functools.partial(_go, [go, "mod", "download"], cwd=src / module, what=what))
        for index, binary in enumerate(BINARIES, 1):
            step = functools.partial(_build_one, go, binary, release, src, folder)
            _timed(say, f"[{index}/{len(BINARIES)}] {binary.name}", step)
        stages = _go([go, "run", "./stages"], cwd=src / "kwok", what="kwok: printing its default stages")
        (folder / STAGES).write_text(stages)
        crds = _go([go, "run", "./crds"], cwd=src / "kwok", what="kwok: printing its PortForward CRD")
        (folder / CRDS).write_text(crds)
        _check_versions(folder, release)
        (folder / STAMP).write_text(
            json.dumps({"digest": module_digest(), "recipe": RECIPE, "go": version, "release": release.folder})
        )
    say(f"built: {folder} ({_size(folder)})")
    return folder


def _timed(say: Say, what: str, step: Callable[[], object]) -> None:
    say(f"{what} ...")
    started = time.monotonic()
    step()
    say(f"{what}: done in {time.monotonic() - started:.0f} s")


def _build_one(go: str, binary: Binary, release: Release, src: Path, folder: Path) -> None:
    target = folder / "bin" / binary.name
    partial = target.with_suffix(".partial")
    _go(
        [go, "build", "-ldflags", _ldflags(binary, release), "-o", str(partial), binary.package],
        cwd=src / binary.module,
        what=f"building {binary.name}",
    )
    partial.replace(target)


def _check_versions(folder: Path, release: Release) -> None:
    for binary in BINARIES:
        done = process.run_bounded([str(folder / "bin" / binary.name), "--version"], timeout=VERSION_TIMEOUT)
        shown = done.stdout + done.stderr
        if release.version_of(binary.name).lstrip("v") not in shown:
            raise ControlPlaneBuildFailed(
                f"{binary.name} was built but reports {process.tail(shown, 2)!r}, not {release.version_of(binary.name)}"
            )


def _size(folder: Path) -> str:
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    return f"{total / 2**20:.0f} MiB"


def describe_cache(say: Say = print) -> None:
    """Print the cache's place, each release folder with its size, and which one the committed modules build."""
    root = cache_root()
    current = pinned().folder
    say(f"control-plane cache: {root}")
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    for folder in folders:
        mark = " (current)" if folder.name == current and is_current(folder) else ""
        say(f"  {folder.name}: {_size(folder)}{mark}")
    if not folders:
        say("  (empty)")
    say("Go's own caches (shared with your other Go work): go env GOMODCACHE GOCACHE; `go clean -cache -modcache`")


def prune(say: Say = print) -> list[Path]:
    """Remove every release folder but the pinned one; returns what was removed."""
    root = cache_root()
    keep = pinned().folder
    removed = [p for p in root.iterdir() if p.is_dir() and p.name != keep] if root.is_dir() else []
    with _exclusive(root):
        for folder in removed:
            say(f"removing {folder} ({_size(folder)})")
            shutil.rmtree(folder)
    if not removed:
        say(f"nothing to prune in {root}")
    return removed
