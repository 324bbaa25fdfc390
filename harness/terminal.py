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
- **Refused at admission** (:func:`admission_refusal`: the API server's words a controller quotes in its
  ``FailedCreate`` event or ``ReplicaFailure`` condition): a LimitRange, Pod Security, a webhook's or policy's denial
  and a missing ServiceAccount are terminal (the controller retries the same template). An exceeded ResourceQuota is
  terminal only when the rollout's own leaving pods cannot free what it exceeds (:func:`refusal_terminal`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

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


# --- pods refused at admission ---------------------------------------------------------------------------------

_QUOTA_EXCEEDED = re.compile(
    r"exceeded quota: (?P<name>[^,\s]+), requested: (?P<requested>\S+), used: (?P<used>\S+), limited: (?P<limited>\S+)"
)
_QUOTA_UNSPECIFIED = re.compile(r"failed quota: (?P<name>[^:\s]+): must specify (?P<what>[^\"]+)")
_LIMIT_RANGE = re.compile(
    r"(?:maximum|minimum) \S+ usage per (?:Container|Pod|PersistentVolumeClaim) is|"
    r"max limit to request ratio per (?:Container|Pod) is"
)
_WEBHOOK_DENIED = re.compile(r'admission webhook "(?P<name>[^"]+)" denied the request')
_POLICY_DENIED = re.compile(r"ValidatingAdmissionPolicy '(?P<name>[^']+)' with binding '[^']*' denied request")


@dataclass(frozen=True)
class AdmissionRefusal:
    """What refused a pod at admission, read from the API server's own words (as a controller quotes them):
    ``kind`` (``"quota"``, ``"limit range"``, ``"pod security"``, ``"webhook"``, ``"service account"``), ``fix``
    (what to change, one phrase) and, for an exceeded quota, its ``quota`` name and the ``requested`` / ``used`` /
    ``limited`` quantities it printed (resource name to quantity text)."""

    kind: str
    fix: str
    quota: str | None = None
    requested: dict[str, str] = field(default_factory=dict)
    used: dict[str, str] = field(default_factory=dict)
    limited: dict[str, str] = field(default_factory=dict)


def admission_refusal(message: str) -> AdmissionRefusal | None:
    """The refusal in ``message`` (a ``FailedCreate`` event's or a ``ReplicaFailure`` condition's text), or ``None``
    for one these words do not name, or a webhook that could not be called (``failed calling webhook``: transient).

    Words read: ``exceeded quota: Q, requested: r=1, used: r=0, limited: r=0`` and ``failed quota: Q: must specify
    r`` (``plugin/pkg/admission/resourcequota/controller.go``), ``maximum cpu usage per Container is X, but limit is
    Y`` and the other LimitRange bounds (``plugin/pkg/admission/limitranger/admission.go``), ``violates PodSecurity
    "level:version"`` (``staging/src/k8s.io/pod-security-admission/admission/admission.go``), ``admission webhook
    "w" denied the request`` and a ValidatingAdmissionPolicy's ``denied request``, ``error looking up service
    account`` (``plugin/pkg/admission/serviceaccount/admission.go``)."""
    if "failed calling webhook" in message:
        return None
    exceeded = _QUOTA_EXCEEDED.search(message)
    if exceeded:
        name = exceeded["name"]
        requested = _quantities(exceeded["requested"])
        return AdmissionRefusal(
            "quota",
            f"raise the {', '.join(requested) or 'hard'} limit of ResourceQuota {name} or ask for less",
            name,
            requested,
            _quantities(exceeded["used"]),
            _quantities(exceeded["limited"]),
        )
    unspecified = _QUOTA_UNSPECIFIED.search(message)
    if unspecified:
        what = unspecified["what"].strip().rstrip(".")
        return AdmissionRefusal(
            "quota", f"set {what} in the pod template (ResourceQuota {unspecified['name']} requires it)"
        )
    if _LIMIT_RANGE.search(message):
        return AdmissionRefusal("limit range", "fit the pod template's resources to the namespace's LimitRange")
    if 'violates PodSecurity "' in message:
        return AdmissionRefusal(
            "pod security",
            "make the pod template meet that Pod Security level (or change the namespace's "
            "pod-security.kubernetes.io/enforce label)",
        )
    denied = _WEBHOOK_DENIED.search(message) or _POLICY_DENIED.search(message)
    if denied:
        return AdmissionRefusal("webhook", f"change the pod template to what {denied['name']} admits")
    if "error looking up service account" in message:
        return AdmissionRefusal("service account", "create the ServiceAccount the pod template names")
    return None


def refusal_terminal(
    refusal: AdmissionRefusal, freeable: list[Obj], quota: Obj | None = None, counted: list[Obj] | None = None
) -> bool:
    """True when waiting cannot admit the refused pod. Only an exceeded quota can clear by itself: when the pods in
    ``freeable`` (the rollout's own pods that are leaving or that its controller may still remove) free enough of
    every resource it exceeded. ``quota`` (the ResourceQuota as read now) gives the current ``status.used`` and
    ``hard``; else the refusal's own numbers count. ``counted`` (the namespace's pods as read now, ``None``: not
    read) bounds a ``status.used`` its controller has not recounted since a pod went away (see :func:`quota_usage`).
    A resource the pods' usage cannot be computed for (``count/*`` but pods) is never judged terminal while some
    pod may leave; the others are."""
    if refusal.kind != "quota":
        return True
    if not refusal.requested:  # "must specify": the pod template itself lacks what the quota requires
        return True
    status = (quota or {}).get("status") or {}
    hard = status.get("hard") or ((quota or {}).get("spec") or {}).get("hard") or {}
    used_now = status.get("used") or {}
    for resource, asked in refusal.requested.items():
        wanted, used = quantity(asked), quantity(str(used_now.get(resource, refusal.used.get(resource, ""))))
        limit = quantity(str(hard.get(resource, refusal.limited.get(resource, ""))))
        if wanted is None or used is None or limit is None:
            continue
        recounted = quota_usage(quota, counted, resource)
        if recounted is not None:
            used = min(used, recounted)
        freed = pods_usage(freeable, resource) if freeable else Fraction(0)
        if freed is None:
            continue
        if used - freed + wanted > limit:
            return True
    return False


def quota_usage(quota: Obj | None, pods: list[Obj] | None, resource: str) -> Fraction | None:
    """What ``pods`` (a namespace's pods as read now) count against ``quota``'s ``resource``, or ``None`` when it
    cannot be told: pods not read, a quota with ``scopes`` or a ``scopeSelector``, a resource not computed from pods.
    A pod counts unless its phase is ``Succeeded`` or ``Failed`` (``pkg/quota/v1/evaluator/core/pods.go``
    ``QuotaV1Pod``; a terminating pod keeps counting: it is the caller's to call freeable). Admission checks the
    stored ``status.used``, which the quota controller recounts only after a pod's deletion reaches it, so for a
    moment it still holds a pod that has gone: the smaller of the two is what the next try will meet."""
    spec = (quota or {}).get("spec") or {}
    if pods is None or spec.get("scopes") or spec.get("scopeSelector"):
        return None
    live = [p for p in pods if ((p.get("status") or {}).get("phase")) not in ("Succeeded", "Failed")]
    return pods_usage(live, resource)


def quantity(text: str) -> Fraction | None:
    """A Kubernetes quantity (``500m``, ``1.5Gi``, ``2e3``) as an exact number, or ``None`` if it is not one
    (parsed by the kubernetes client's ``parse_quantity``)."""
    from kubernetes.utils.quantity import parse_quantity  # loads the client: only when a quota refusal is judged

    try:
        return Fraction(parse_quantity(text.strip()))  # type: ignore[no-untyped-call]
    except (ValueError, ArithmeticError):
        return None


def pods_usage(pods: list[Obj], resource: str) -> Fraction | None:
    """What ``pods`` count against a quota's ``resource`` (``pods``, ``requests.cpu``, ``limits.memory``, ``cpu``
    ...: containers' requests or limits summed, an init container's when larger), or ``None`` for one not known."""
    if resource in ("pods", "count/pods"):
        return Fraction(len(pods))
    if resource.startswith("count/") or resource in ("services", "secrets", "configmaps", "persistentvolumeclaims"):
        return None
    which, _, name = resource.partition(".") if resource.startswith(("requests.", "limits.")) else ("requests", "", "")
    name = name or resource
    total = Fraction(0)
    for pod in pods:
        spec = pod.get("spec") or {}
        each = [_amount(c, which, name) for c in spec.get("containers") or []]
        init = [_amount(c, which, name) for c in spec.get("initContainers") or []]
        known = [a for a in each + init if a is not None]
        if len(known) < len(each) + len(init):
            return None
        total += max([sum(known[: len(each)], Fraction(0)), *known[len(each) :]])
    return total


def _amount(container: Obj, which: str, name: str) -> Fraction | None:
    value = ((container.get("resources") or {}).get(which) or {}).get(name)
    return Fraction(0) if value is None else quantity(str(value))


def _quantities(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(",") if "=" in part)
