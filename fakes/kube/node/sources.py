"""What a kubelet reads through the API before it starts a pod's containers: the ConfigMaps and Secrets their
environment names (``envFrom``, ``valueFrom``) and the ConfigMaps their volumes mount, each read once, a missing one
as ``None`` (the environment's rules then decide, :func:`fakes.kube.local_process.environment`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fakes.kube.client import Api
from fakes.kube.local_process import config_map_data, secret_data

Obj = dict[str, Any]


class Fetched:
    """The Secrets and ConfigMaps read for one pod (a :class:`fakes.kube.local_process.Sources`)."""

    def __init__(self, found: dict[tuple[str, str], Mapping[str, str] | None]) -> None:
        self.found = found

    def config_map(self, _namespace: str, name: str) -> Mapping[str, str] | None:
        return self.found.get(("configmaps", name))

    def secret(self, _namespace: str, name: str) -> Mapping[str, str] | None:
        return self.found.get(("secrets", name))


def named_sources(pod: Obj) -> set[tuple[str, str]]:
    """``(configmaps|secrets, name)`` for every object the pod's environment and configMap/secret volumes name."""
    wanted: set[tuple[str, str]] = set()
    spec = pod.get("spec") or {}
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        for source in c.get("envFrom") or []:
            wanted |= {
                (k, str(source[key]["name"]))
                for k, key in (("configmaps", "configMapRef"), ("secrets", "secretRef"))
                if key in source
            }
        for env in c.get("env") or []:
            ref = env.get("valueFrom") or {}
            wanted |= {
                (k, str(ref[key]["name"]))
                for k, key in (("configmaps", "configMapKeyRef"), ("secrets", "secretKeyRef"))
                if key in ref
            }
    for volume in spec.get("volumes") or []:
        if (volume.get("configMap") or {}).get("name"):
            wanted.add(("configmaps", str(volume["configMap"]["name"])))
        if (volume.get("secret") or {}).get("secretName"):
            wanted.add(("secrets", str(volume["secret"]["secretName"])))
    return wanted


async def fetch_sources(api: Api, pod: Obj) -> Fetched:
    """Every ConfigMap and Secret :func:`named_sources` lists, read now in the pod's namespace. Raises
    :class:`~fakes.kube.client.ApiError` for an answer other than ``404``."""
    namespace = str(pod["metadata"]["namespace"])
    found: dict[tuple[str, str], Mapping[str, str] | None] = {}
    for kind, name in sorted(named_sources(pod)):
        obj = await api.get(f"/api/v1/namespaces/{namespace}/{kind}/{name}")
        if obj is None:
            found[(kind, name)] = None
            continue
        found[(kind, name)] = secret_data(obj) if kind == "secrets" else config_map_data(obj)
    return Fetched(found)
