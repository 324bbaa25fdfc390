"""The in-cluster mode: specs run in a pod, with the pod's service account for credentials and no port-forwards.

``pytest --in-cluster`` (see :func:`configure`) reads the pod's service account, writes a kubeconfig with one
context, :data:`CONTEXT`, and pins the session to it, as a context on the allow-list (the context must be there,
like any other). Then the cluster lock is a Lease in the guarded namespace (:mod:`harness.lease`) instead of a file
lock on one machine, and the ``forwards`` fixture hands out Services' in-cluster addresses instead of kubectl
port-forwards (:mod:`harness.service_addresses`).

Where the service account comes from, as client-go's ``rest.InClusterConfig`` reads it:

- the API server: ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`` (the kubelet sets both);
- the token, CA certificate and namespace: the files the kubelet mounts in :data:`TOKEN_DIR` (the token is
  referenced as ``tokenFile``, so its rotation is followed), or else the environment variables :data:`TOKEN_ENV`,
  :data:`CA_ENV` and :data:`NAMESPACE_ENV`, for a node that mounts no volumes: set them from a
  ``kubernetes.io/service-account-token`` Secret with ``secretKeyRef`` (keys ``token``, ``ca.crt``, ``namespace``).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InClusterUnavailable

CONTEXT = "harness-in-cluster"
"""The one context of the in-cluster kubeconfig: put it on ``[tool.harness] allowed_contexts`` to run in a pod."""
TOKEN_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_ENV, CA_ENV, NAMESPACE_ENV = "HARNESS_SA_TOKEN", "HARNESS_SA_CA_CRT", "HARNESS_SA_NAMESPACE"


@dataclass(frozen=True)
class ServiceAccount:
    """A pod's service account: ``server`` (URL), ``namespace``, ``ca_pem`` (PEM text), and either ``token_file``
    (the mounted, rotating file) or ``token`` (its value, from the environment); ``source`` says which was read."""

    server: str
    namespace: str
    ca_pem: str
    token: str | None
    token_file: Path | None
    source: str


def service_account(env: Mapping[str, str] | None = None, root: Path = TOKEN_DIR) -> ServiceAccount:
    """The pod's service account. Raises :class:`~harness.errors.InClusterUnavailable` naming what is missing."""
    env = os.environ if env is None else env
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise InClusterUnavailable(
            "--in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set: this process does "
            "not run in a pod (the kubelet sets them), or its pod spec overrides them"
        )
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    token_file = root / "token"
    if token_file.is_file():
        return ServiceAccount(
            server,
            _file(root / "namespace", root),
            _file(root / "ca.crt", root),
            None,
            token_file,
            f"the files in {root}",
        )
    missing = [name for name in (TOKEN_ENV, CA_ENV, NAMESPACE_ENV) if not env.get(name)]
    if missing:
        raise InClusterUnavailable(
            f"--in-cluster: no service account token: {token_file} does not exist (is automountServiceAccountToken "
            f"false?) and {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set"
        )
    return ServiceAccount(
        server, env[NAMESPACE_ENV], env[CA_ENV], env[TOKEN_ENV], None, f"{TOKEN_ENV}, {CA_ENV}, {NAMESPACE_ENV}"
    )


def _file(path: Path, root: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError as exc:
        raise InClusterUnavailable(f"--in-cluster: {root} has a token but {path.name} cannot be read: {exc}") from exc
    if not text:
        raise InClusterUnavailable(f"--in-cluster: {path} is empty")
    return text + "\n" if path.name == "ca.crt" else text


def kubeconfig(account: ServiceAccount) -> dict[str, object]:
    """The kubeconfig for ``account``: one cluster, one user, one context (:data:`CONTEXT`), current."""
    user: dict[str, str] = {"tokenFile": str(account.token_file)} if account.token_file else {}
    if account.token is not None:
        user["token"] = account.token
    ca = base64.b64encode(account.ca_pem.encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "in-cluster", "cluster": {"server": account.server, "certificate-authority-data": ca}}],
        "users": [{"name": "service-account", "user": user}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": "in-cluster", "user": "service-account", "namespace": account.namespace},
            }
        ],
        "current-context": CONTEXT,
    }


def write_kubeconfig(account: ServiceAccount, path: Path) -> Path:
    """Write :func:`kubeconfig` to ``path`` (mode 0600: it may hold the token) and return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(kubeconfig(account), out)
    return path
