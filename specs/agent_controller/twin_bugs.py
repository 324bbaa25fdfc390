"""Switching the stack twin's product bugs on and off while it runs (:mod:`fakes.stack.bugs`).

The twin's services read the switched-on set from the ConfigMap ``stack-twin-bugs`` in the stack's namespace at
each decision, so :func:`switch_bugs` takes effect for the next turn without a restart. Only a twin has that
ConfigMap: a cluster's stack has no bug switches, and nothing here is for a cluster.
"""

from __future__ import annotations

import json
from typing import Any

from fakes.stack.bugs import CONFIGMAP, configmap, names_in
from harness.kube import Kube

SWITCH_TIMEOUT = 30.0
"""Seconds one ``kubectl apply`` or ``get`` of the switches' ConfigMap may take."""


def switch_bugs(kube: Kube, names: list[str] | tuple[str, ...] | frozenset[str]) -> None:
    """Switch exactly ``names`` on in the twin behind ``kube`` (every other bug off), with ``kubectl apply``.

    Raises :class:`fakes.stack.bugs.UnknownBug` for an unknown name (before touching the twin) and the harness's
    :class:`~harness.errors.KubectlError` when the apply fails."""
    manifest = configmap(names, kube.namespace)
    kube.kubectl("apply", "-f", "-", input=json.dumps(manifest), timeout=SWITCH_TIMEOUT)


def switched_bugs(kube: Kube) -> frozenset[str]:
    """The bugs the twin behind ``kube`` has switched on now, as its services read them."""
    obj: Any = kube.kubectl_json("get", "configmap", CONFIGMAP, timeout=SWITCH_TIMEOUT)
    return names_in(obj)
