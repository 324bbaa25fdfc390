"""Which release of each component the control plane is built from: read from the committed wrapper modules.

The wrapper modules (``modules/<name>/go.mod``, package data) are the only place a version is written: Kubernetes
(kube-apiserver, kube-controller-manager, kube-scheduler), etcd at the version that Kubernetes release's own go.mod
requires (what its integration tests run against), and kwok.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

MODULES = Path(__file__).parent / "modules"


@dataclass(frozen=True)
class Binary:
    """One binary: ``name`` as envtest names its assets, the wrapper ``module`` folder, the Go ``package`` built."""

    name: str
    module: str
    package: str


BINARIES = (
    Binary("etcd", "etcd", "."),
    Binary("kube-apiserver", "kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver"),
    Binary("kube-controller-manager", "kubernetes", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    Binary("kube-scheduler", "kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler"),
    Binary("kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok"),
)
NAMES = tuple(b.name for b in BINARIES)
ENVTEST_PAIR = ("etcd", "kube-apiserver")
"""What an envtest assets folder holds: enough for an API server with no controllers, no scheduler and no nodes."""


@dataclass(frozen=True)
class Release:
    """The pinned versions (``v``-prefixed, as Go writes them) and the Go version the modules need."""

    kubernetes: str
    etcd: str
    kwok: str
    go: tuple[int, int]

    @property
    def minor(self) -> str:
        """Kubernetes ``major.minor``, e.g. ``1.33``."""
        return ".".join(self.kubernetes.lstrip("v").split(".")[:2])

    @property
    def folder(self) -> str:
        """The cache folder's name for this release."""
        return f"k8s-{self.kubernetes}_etcd-{self.etcd}_kwok-{self.kwok}"

    def version_of(self, name: str) -> str:
        return {"etcd": self.etcd, "kwok": self.kwok}.get(name, self.kubernetes)


def _required(module: str, path: str) -> str:
    text = (MODULES / module / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(path)}\s+(v\S+)", text, re.M)
    if found is None:
        raise RuntimeError(f"{MODULES / module / 'go.mod'} requires no {path}")
    return found[1]


def _go_directive(module: str) -> tuple[int, int]:
    found = re.search(r"^go\s+(\d+)\.(\d+)", (MODULES / module / "go.mod").read_text(), re.M)
    return (int(found[1]), int(found[2])) if found else (1, 0)


def pinned() -> Release:
    """The release the committed modules build."""
    return Release(
        kubernetes=_required("kubernetes", "k8s.io/kubernetes"),
        etcd=_required("etcd", "go.etcd.io/etcd/server/v3"),
        kwok=_required("kwok", "sigs.k8s.io/kwok"),
        go=max(_go_directive(m) for m in ("kubernetes", "etcd", "kwok")),
    )


def module_digest() -> str:
    """A hash of every committed module file: a cache built from other files is stale."""
    digest = hashlib.sha256()
    for path in sorted(p for p in MODULES.rglob("*") if p.is_file() and p.suffix in {".mod", ".sum", ".go"}):
        digest.update(str(path.relative_to(MODULES)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
