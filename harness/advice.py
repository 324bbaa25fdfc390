"""The fixes the guard and API server messages give, built from the context in use and the allow-list.

A fix names a tool's command only for a context that tool made: ``minikube start`` for the context ``minikube``,
``k3d cluster start NAME`` for ``k3d-NAME``, ``docker start NAME-control-plane`` for ``kind-NAME`` (kind's node
container), and so on for the tools :data:`harness.config.DEFAULT_ALLOWED_CONTEXTS` lists. Any other context gets
advice that holds for every cluster (``kubectl --context C cluster-info``, the kubeconfig's server URL).
"""

from __future__ import annotations

import fnmatch
import shlex


def _tool(context: str) -> tuple[str, str]:
    """``(tool, cluster name)`` of a context a local cluster tool names this way; ``("", "")`` for any other."""
    for prefix in ("kind-", "k3d-"):
        if context.startswith(prefix) and len(context) > len(prefix):
            return prefix[:-1], context[len(prefix) :]
    if context in ("minikube", "docker-desktop", "rancher-desktop", "colima", "orbstack"):
        return context, context
    return "", ""


_START = {
    "minikube": "start it with `minikube start` (`minikube status` says whether it runs)",
    "kind": "start its node container: `docker start {q}-control-plane` (kind clusters do not survive a Docker "
    "restart by themselves)",
    "k3d": "start it with `k3d cluster start {q}`",
    "docker-desktop": "start Docker Desktop with Kubernetes enabled in its settings",
    "rancher-desktop": "start Rancher Desktop with Kubernetes enabled in its preferences",
    "colima": "start it with `colima start --kubernetes`",
    "orbstack": "start OrbStack with Kubernetes enabled in its settings",
}
_CREDENTIALS = {
    "minikube": "`minikube update-context` rewrites them (or `minikube start`)",
    "kind": "`kind export kubeconfig --name {q}` rewrites them",
    "k3d": "`k3d kubeconfig merge {q} --kubeconfig-merge-default` rewrites them",
}
_CREATE = {
    "minikube": "`minikube start`",
    "kind-*": "`kind create cluster` (context kind-kind)",
    "k3d-*": "`k3d cluster create` (context k3d-k3s-default)",
    "docker-desktop": "Docker Desktop's Kubernetes",
    "rancher-desktop": "Rancher Desktop's Kubernetes",
    "colima": "`colima start --kubernetes`",
    "orbstack": "OrbStack's Kubernetes",
}


def start_cluster(context: str) -> str:
    """How to start the stopped cluster of ``context``."""
    tool, name = _tool(context)
    if tool:
        return _START[tool].format(q=shlex.quote(name))
    where = f"`kubectl --context {shlex.quote(context)} cluster-info` says where it should be"
    return f"start the cluster of context {context!r} ({where})"


def refresh_credentials(context: str) -> str:
    """How to renew the stale credentials of ``context`` (a recreated cluster)."""
    tool, name = _tool(context)
    if tool in _CREDENTIALS:
        return _CREDENTIALS[tool].format(q=shlex.quote(name))
    return "get fresh credentials for it from whoever (or whatever tool) created the cluster"


def create_cluster(allowed: tuple[str, ...]) -> str:
    """How to get a context the allow-list accepts: each local tool whose context it matches, or the patterns."""
    ways = [way for pattern, way in _CREATE.items() if pattern in allowed]
    if ways:
        return "create a local cluster whose context is allowed: " + ", or ".join(ways)
    return f"create a cluster whose context matches {', '.join(allowed)}"


def allowed_among(contexts: list[str], allowed: tuple[str, ...]) -> list[str]:
    """The ``contexts`` (names in the kubeconfig) that the allow-list's glob patterns accept, in order."""
    return [c for c in contexts if any(fnmatch.fnmatchcase(c, p) for p in allowed)]
