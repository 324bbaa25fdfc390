"""Load recorded Kubernetes objects, statuses included, into the Kubernetes API double (``fakes.kube``).

For specs that need a cluster in a given state (a rollout stuck on a crash loop, a pod the scheduler cannot place)
without driving controllers there: the objects are created through the double's store as a controller would write
them, and the real kubectl reads them back. Server-set metadata (uid, resourceVersion, creationTimestamp,
generation, deletion stamps) is dropped; the double sets its own.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

STORE_NAMES = {"Deployment": "deployments.apps", "StatefulSet": "statefulsets.apps", "ReplicaSet": "replicasets.apps",
               "Pod": "pods", "Event": "events"}
_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp",
               "deletionGracePeriodSeconds")


def load_objects(kd: Any, objects: list[dict[str, Any]]) -> None:
    """Create ``objects`` (any of :data:`STORE_NAMES`' kinds) in the double ``kd``, keeping their ``status``;
    their namespaces are created when missing. Raises ``KeyError`` for another kind."""
    for obj in objects:
        namespace = obj["metadata"].get("namespace")
        if namespace and kd.store.get("namespaces", None, namespace) is None:
            kd.store.create("namespaces", {"metadata": {"name": namespace}})
        fresh = copy.deepcopy(obj)
        for key in _SERVER_SET:
            fresh["metadata"].pop(key, None)
        kind = STORE_NAMES[obj["kind"]]
        kd.store.create(kind, fresh, keep_status=kind != "events")


@contextmanager
def bare_double(**options: Any) -> Iterator[Any]:
    """``fakes.kube.serve(**options)`` without the simulated controllers where the double has them, so loaded
    objects keep the state they were loaded in."""
    import fakes.kube

    if "controllers" in inspect.signature(fakes.kube.serve).parameters:
        options.setdefault("controllers", False)
    with fakes.kube.serve(**options) as handle:
        yield handle
