"""Which rollout causes waiting cannot fix: pure verdicts on a pod's facts, read from the kubelet's and the
scheduler's own words.

- **Image pulls.** ``ErrImagePull``/``ImagePullBackOff`` carry the image puller's error (the container's waiting
  message, since Kubernetes 1.31 also in the back-off's, and always in the kubelet's ``Failed to pull image "x": ...``
  event, ``pkg/kubelet/images/image_manager.go``). containerd says ``...: not found`` (``failed to resolve
  reference``) or ``pull access denied``/``insufficient_scope``/``authorization failed``; CRI-O and Docker say
  ``manifest unknown``, ``name unknown``, ``repository does not exist``, ``requested access to the resource is
  denied``. Those are terminal. A registry that is down, slow or rate-limiting (``i/o timeout``, ``connection
  refused``, ``no such host``, ``TLS handshake timeout``, ``429 Too Many Requests``, ``toomanyrequests``, ``5xx``,
  ``EOF``, ``context deadline exceeded``) is transient and wins over any terminal word in the same message; a
  message neither list knows is not terminal. ``InvalidImageName`` and ``ErrImageNeverPull`` are terminal.
- **CreateContainerConfigError** (a Secret, ConfigMap or key the container's environment names does not exist,
  ``kubelet_pods.go`` ``makeEnvironmentVariables``; or a ``runAsNonRoot`` conflict) is terminal: the kubelet only
  tries again. Create a Secret an operator makes before waiting on the rollout that needs it.
- **Unschedulable** (``PodScheduled=False``, reason ``Unschedulable``): terminal only when every reason in the
  scheduler's message (``0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 ...``,
  ``pkg/scheduler/framework/types.go`` ``FitError``) is a mismatch between the pod and the nodes that nothing in the
  rollout changes: node affinity/selector, a taint the pod does not tolerate (except the ``node.kubernetes.io/*``
  condition taints the node lifecycle controller sets and clears), a volume node affinity conflict. Resources
  (``Insufficient cpu``, ``Too many pods``), host ports and pod (anti-)affinity free up as old pods end; cordoned
  nodes are uncordoned; volumes get bound; a cluster autoscaler (a ``TriggeredScaleUp`` event) adds nodes: those
  keep the wait going, and its timeout explains them.
"""

from __future__ import annotations

import re

from harness.podfacts import ContainerFacts, Obj, PodFacts

DEFAULT_RESTART_LIMIT = 3
"""Restarts of one container of the new revision during a rollout wait after which the crash loop is terminal."""

PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff"})
NEVER_PULLS = frozenset({"InvalidImageName", "ErrImageNeverPull"})

_TRANSIENT = (
    "i/o timeout",
    "connection refused",
    "connection reset",
    "no such host",
    "server misbehaving",
    "tls handshake timeout",
    "too many requests",
    "toomanyrequests",
    "429 ",
    "500 internal server error",
    "502 bad gateway",
    "503 service unavailable",
    "504 gateway timeout",
    "context deadline exceeded",
    "unexpected eof",
    ": eof",
    "temporary failure",
    "network is unreachable",
)
_NOT_FOUND = (": not found", "manifest unknown", "name unknown", "repository does not exist", "notfound desc")
_DENIED = (
    "pull access denied",
    "insufficient_scope",
    "authorization failed",
    "requested access to the resource is denied",
    "401 unauthorized",
    "403 forbidden",
)

_STATIC_UNSCHEDULABLE = (
    re.compile(r"didn't match pod's node affinity/selector"),
    re.compile(r"didn't match node selector"),
    re.compile(r"had volume node affinity conflict"),
    re.compile(r"had untolerated taint \{(?!node\.kubernetes\.io/)[^}]*\}"),
    re.compile(r"had taint \{(?!node\.kubernetes\.io/)[^}]*\}, that the pod didn't tolerate"),
)


def pull_verdict(message: str) -> str | None:
    """``"image not found"``, ``"pull access denied"``, ``"transient"`` or ``None`` (not known) for an image
    puller's error text (see the module docstring for the words read)."""
    lowered = message.lower()
    if any(word in lowered for word in _TRANSIENT):
        return "transient"
    if any(word in lowered for word in _DENIED):
        return "pull access denied"
    if any(word in lowered for word in _NOT_FOUND):
        return "image not found"
    return None


def pull_messages(pod: PodFacts, container: ContainerFacts) -> list[str]:
    """What the puller said about ``container``'s image: its waiting message and the kubelet's ``Failed to pull
    image`` events for this pod (newest last)."""
    said = [str(e.get("message") or "") for e in pod.events if e.get("reason") == "Failed"]
    said = [m for m in said if m.startswith("Failed to pull image")]
    return [*said, container.message or ""]


def container_terminal(pod: PodFacts, container: ContainerFacts) -> str | None:
    """Why ``container`` cannot start without a change (``"image not found"``, ``"pull access denied"``,
    ``"invalid image name"``, ``"configuration error"``), or ``None``. Restart counts are not judged here."""
    if container.state != "waiting":
        return None
    if container.reason in PULL_REASONS:
        for text in reversed(pull_messages(pod, container)):  # newest first: the waiting message, then the events
            verdict = pull_verdict(text)
            if verdict is not None:
                return None if verdict == "transient" else verdict
        return None
    if container.reason in NEVER_PULLS:
        return "image cannot be pulled" if container.reason == "ErrImageNeverPull" else "invalid image name"
    if container.reason == "CreateContainerConfigError":
        return "configuration error"
    return None


def unschedulable_terminal(message: str, events: list[Obj]) -> bool:
    """True when every reason in the scheduler's ``message`` is a static pod/node mismatch and no cluster autoscaler
    said it scales up (see the module docstring)."""
    if any(e.get("reason") == "TriggeredScaleUp" for e in events):
        return False
    match = re.search(r"nodes are available: (.*?)(?:\. preemption:|\.$|$)", message.strip(), re.IGNORECASE)
    if not match:
        return False
    reasons = [r.strip().lower() for r in re.split(r",\s+(?=\d+ )", match.group(1)) if r.strip()]
    return bool(reasons) and all(any(p.search(r) for p in _STATIC_UNSCHEDULABLE) for r in reasons)
