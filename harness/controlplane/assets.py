"""Where each binary comes from: binaries a user already has, else the build cache.

The envtest convention (controller-runtime's ``pkg/envtest``) is honoured first: ``TEST_ASSET_<NAME>`` (e.g.
``TEST_ASSET_KUBE_APISERVER``) names one binary, ``KUBEBUILDER_ASSETS`` a folder of them. An envtest folder holds
``etcd`` and ``kube-apiserver`` only: with those two an API server runs (no controllers, no scheduler, no nodes, so
no pod ever runs); :meth:`Assets.missing` names the rest, and what needs them skips, naming them and the build.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness.controlplane import build
from harness.controlplane.release import ENVTEST_PAIR, NAMES
from harness.errors import BinariesMissing

BUILD_COMMAND = "python -m harness.controlplane build"
"""The command that provides every binary (``make control-plane`` in this repository runs it)."""


def env_name(binary: str) -> str:
    """envtest's variable for one binary: ``kube-apiserver`` -> ``TEST_ASSET_KUBE_APISERVER``."""
    return "TEST_ASSET_" + binary.upper().replace("-", "_")


@dataclass(frozen=True)
class Assets:
    """``paths``: binary name -> path, for those found; ``origins``: where each was found; ``stages``: kwok's
    stage file and ``crds`` its PortForward CRD (each ``None`` without a build); ``stale``: a build cache exists but
    was built from other modules."""

    paths: dict[str, str]
    origins: dict[str, str]
    stages: Path | None
    crds: Path | None = None
    stale: bool = False

    def missing(self, names: tuple[str, ...] = NAMES) -> tuple[str, ...]:
        gone = [n for n in names if n not in self.paths]
        if "kwok" in names and "kwok" in self.paths and (self.stages is None or self.crds is None):
            gone.append("kwok's stages and CRD (printed by the build)")
        return tuple(gone)

    def require(self, names: tuple[str, ...] = NAMES) -> None:
        """Raises :class:`BinariesMissing` naming each of ``names`` not found, and how to provide them."""
        gone = self.missing(names)
        if not gone:
            return
        why = " (the build cache is from other module files: rebuild)" if self.stale else ""
        found = ", ".join(f"{n} from {self.origins[n]}" for n in names if n in self.origins)
        runs = ""
        if set(ENVTEST_PAIR) <= set(self.paths):
            runs = "; with etcd and kube-apiserver alone an API server runs, with no controllers, scheduler or nodes"
        raise BinariesMissing(
            f"the control plane needs {', '.join(gone)}{why}; found: {found or 'nothing'}{runs}. Build them with "
            f"`{BUILD_COMMAND}` (Go needed), or point KUBEBUILDER_ASSETS or TEST_ASSET_<NAME> at binaries you have",
            missing=gone,
            fix=BUILD_COMMAND,
        )


def find(env: dict[str, str] | None = None) -> Assets:
    """Look every binary up: ``TEST_ASSET_<NAME>``, then ``$KUBEBUILDER_ASSETS/<name>``, then the current build."""
    env = dict(os.environ) if env is None else env
    folder = build.release_folder()
    current = build.is_current(folder)
    paths: dict[str, str] = {}
    origins: dict[str, str] = {}
    for name in NAMES:
        candidates = [(env.get(env_name(name)), env_name(name))]
        if env.get("KUBEBUILDER_ASSETS"):
            candidates.append((os.path.join(env["KUBEBUILDER_ASSETS"], name), "KUBEBUILDER_ASSETS"))
        if current:
            candidates.append((str(folder / "bin" / name), "the build cache"))
        for path, origin in candidates:
            if path and os.path.isfile(path) and os.access(path, os.X_OK):
                paths[name], origins[name] = path, origin
                break

    def built(name: str) -> Path | None:
        path = folder / name
        return path if current and path.is_file() else None

    return Assets(paths, origins, built(build.STAGES), built(build.CRDS), stale=folder.exists() and not current)
