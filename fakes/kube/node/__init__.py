"""A node of this machine for a real kube-apiserver, whose pods' containers are local processes.

``LocalNode(kubeconfig).start()`` registers a Node (``local-node``) with the API server of ``kubeconfig`` and runs
every pod the scheduler binds to it under the local-process contract (:mod:`fakes.kube.local_process`): the same
pod manifest behaves on it as on the API double. Its kubelet port is served with the double's own exec,
port-forward and logs code (so it comes with the ``kube-double`` extra).
"""

from __future__ import annotations

from fakes.kube.node.node import LABEL, LocalNode, NodeError

__all__ = ["LABEL", "LocalNode", "NodeError"]
