"""The control loops of the Kubernetes API double, one module each (Deployments, ReplicaSets and
ReplicationControllers, StatefulSets, Jobs, DaemonSets, the Node, namespace defaults, PodDisruptionBudgets, HPAs), and
what they share: :mod:`.base` (the work queue, timers and object helpers) and :mod:`.events` (the Event recorder).

:class:`fakes.kube.components.Controllers` assembles them with the kubelet (:mod:`fakes.kube.lifecycle`) and the log
book (:mod:`fakes.kube.logs`), which import :mod:`.base` and :mod:`.events`; so this package imports none of its
modules here, and nothing above it (no import circle).
"""
