"""The objects one sharded run applies: its Namespace, the shards' ServiceAccount, and the Indexed Job.

- **Namespace** ``harness-run-<run id>``, labelled with the run id (:data:`harness.artifacts.RUN_LABEL`): everything
  else of the run lives in it, so deleting it removes the run whatever state it was left in.
- **ServiceAccount** ``harness-shard``. A shard that runs its specs against a stack of its own (a twin started in
  the pod) uses no verb of the cluster it runs on, so no Role is bound and no token is mounted
  (``automountServiceAccountToken: false``): the least privilege is none. ``grants`` adds a Role and RoleBinding
  with exactly the rules given, for shards whose specs reach the cluster's API.
- **Job**: ``completionMode: Indexed`` with ``completions`` = ``parallelism`` = shards, so index ``i`` is shard ``i``
  (``JOB_COMPLETION_INDEX``); ``backoffLimitPerIndex: 0`` and ``restartPolicy: Never``, so a failed or deleted pod
  fails its index and is never retried (a retry would hide a flake); ``activeDeadlineSeconds`` bounds the whole
  Job. Semantics from the Kubernetes Job docs (Indexed completion mode, backoff limit per index; GA in 1.33).
- **In-cluster shards** (``in_cluster``): each shard runs ``pytest --in-cluster`` (:mod:`harness.incluster`):
  the ServiceAccount's token is mounted and a Role grants what the harness does there (:data:`IN_CLUSTER_RULES`) besides
  ``grants``. A local-process pod gets no mounted files, so its token, CA and namespace come from a
  ``kubernetes.io/service-account-token`` Secret (:data:`TOKEN_SECRET`, filled by the tokens controller) through
  ``secretKeyRef``, and ``KUBERNETES_SERVICE_HOST``/``PORT`` name ``api_server`` (the address this machine reaches).
- **The container**: ``image`` (on a cluster with a container runtime), or, for a node that runs pods as local
  processes, this checkout's interpreter with ``workingDir`` the checkout and the pod annotated
  ``stack-harness.dev/local-process: "true"`` (the local-process contract of the repository's fakes).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.artifacts import RUN_LABEL

Obj = dict[str, Any]
SERVICE_ACCOUNT = "harness-shard"
JOB = "harness-shards"
CONTAINER = "shard"
LOCAL_PROCESS = "stack-harness.dev/local-process"
"""The annotation of the local-process contract (a node of this machine runs the pod's containers as processes)."""
TOKEN_SECRET = "harness-shard-token"
IN_CLUSTER_RULES = (
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update", "delete"]},
)
"""What the harness itself does in a pod, and nothing more: the session's API check reads its namespace (a Role
may grant a namespace's own object: apiserver ``requestinfo.go`` takes a namespace's name as its namespace), and
the cluster lock takes a Lease (:mod:`harness.lease`)."""
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


@dataclass(frozen=True)
class Plan:
    """One run: ``run_id``, ``shards`` (>= 1), ``pytest_args`` (each shard's, before ``--job-shard``),
    ``deadline`` (seconds, the Job's ``activeDeadlineSeconds``), ``image`` (``None``: run as a local process from
    ``checkout``), ``env`` (extra container environment), ``grants`` (Role rules; empty: no Role), ``in_cluster``
    (shards in the in-cluster mode) and ``api_server`` (its URL as a local-process pod reaches it)."""

    run_id: str
    shards: int
    pytest_args: tuple[str, ...]
    deadline: float
    image: str | None = None
    checkout: Path = field(default_factory=Path.cwd)
    env: tuple[tuple[str, str], ...] = ()
    grants: tuple[Obj, ...] = ()
    in_cluster: bool = False
    api_server: str | None = None

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise ValueError(f"shards must be at least 1, got {self.shards}")
        if self.deadline <= 0:
            raise ValueError(f"deadline must be positive seconds, got {self.deadline}")

    @property
    def namespace(self) -> str:
        return f"harness-run-{self.run_id}".lower()[:63].rstrip("-")

    def objects(self) -> list[Obj]:
        """Every object of the run, in the order to apply them."""
        labels = {RUN_LABEL: self.run_id}
        meta = {"namespace": self.namespace, "labels": labels}
        objects: list[Obj] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace, "labels": labels}},
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": SERVICE_ACCOUNT, **meta},
                "automountServiceAccountToken": self._token_mounted,
            },
        ]
        if self.rules:
            objects += self._role(meta)
        if self.in_cluster and self.image is None:
            objects.append(self.token_secret(meta))
        return [*objects, self.job(meta)]

    @property
    def rules(self) -> list[Obj]:
        """The Role's rules: ``grants``, and for in-cluster shards :data:`IN_CLUSTER_RULES`."""
        return [*self.grants, *IN_CLUSTER_RULES] if self.in_cluster else list(self.grants)

    @property
    def _token_mounted(self) -> bool:
        return bool(self.rules)

    def token_secret(self, meta: Obj) -> Obj:
        """The ServiceAccount's token as a Secret (for local-process pods, which mount nothing)."""
        annotations = {"kubernetes.io/service-account.name": SERVICE_ACCOUNT}
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {"name": TOKEN_SECRET, "annotations": annotations, **meta},
        }

    def _role(self, meta: Obj) -> list[Obj]:
        rbac = "rbac.authorization.k8s.io/v1"
        return [
            {
                "apiVersion": rbac,
                "kind": "Role",
                "metadata": {"name": SERVICE_ACCOUNT, **meta},
                "rules": self.rules,
            },
            {
                "apiVersion": rbac,
                "kind": "RoleBinding",
                "metadata": {"name": SERVICE_ACCOUNT, **meta},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": SERVICE_ACCOUNT},
                "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": self.namespace}],
            },
        ]

    def job(self, meta: Obj) -> Obj:
        """The Indexed Job."""
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": JOB, **meta},
            "spec": {
                "completionMode": "Indexed",
                "completions": self.shards,
                "parallelism": self.shards,
                "backoffLimitPerIndex": 0,
                "activeDeadlineSeconds": max(1, int(self.deadline)),
                "template": {"metadata": self._pod_meta(), "spec": self._pod_spec()},
            },
        }

    def _pod_meta(self) -> Obj:
        meta: Obj = {"labels": {RUN_LABEL: self.run_id}}
        if self.image is None:
            meta["annotations"] = {LOCAL_PROCESS: "true"}
        return meta

    def _pod_spec(self) -> Obj:
        env: list[Obj] = [{"name": "HARNESS_JOB_SHARDS", "value": str(self.shards)}]
        env += [{"name": k, "value": v} for k, v in self.env]
        if self.in_cluster and self.image is None:
            env += self._service_account_env()
        pytest_args = [*self.pytest_args, "--in-cluster"] if self.in_cluster else list(self.pytest_args)
        container: Obj = {"name": CONTAINER, "env": env, "args": ["--", *pytest_args]}
        if self.image is None:
            container |= {
                "image": "local-process",
                "command": [sys.executable, "-m", "harness.jobrun.shard"],
                "workingDir": str(self.checkout),
            }
        else:
            container |= {"image": self.image, "command": ["python", "-m", "harness.jobrun.shard"]}
        return {
            "restartPolicy": "Never",
            "serviceAccountName": SERVICE_ACCOUNT,
            "automountServiceAccountToken": self._token_mounted,
            "containers": [container],
        }

    def _service_account_env(self) -> list[Obj]:
        """What the kubelet would mount and set, as environment (:mod:`harness.incluster` reads either)."""
        from urllib.parse import urlsplit

        from harness.incluster import CA_ENV, NAMESPACE_ENV, TOKEN_ENV

        if self.api_server is None:
            raise ValueError("in-cluster local-process shards need api_server (the URL this machine reaches)")
        url = urlsplit(self.api_server)
        secret = [(TOKEN_ENV, "token"), (CA_ENV, "ca.crt"), (NAMESPACE_ENV, "namespace")]
        return [
            {"name": "KUBERNETES_SERVICE_HOST", "value": url.hostname or ""},
            {"name": "KUBERNETES_SERVICE_PORT", "value": str(url.port or 443)},
            *(
                {"name": name, "valueFrom": {"secretKeyRef": {"name": TOKEN_SECRET, "key": key}}}
                for name, key in secret
            ),
        ]
