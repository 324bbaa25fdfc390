"""``Table`` answers (``meta.k8s.io/v1``), what ``kubectl get`` prints without ``-o``.

kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` first. Each row carries the cells the real
server's printers compute (``pkg/printers/internalversion/printers.go``: pod READY/STATUS/RESTARTS, deployment
READY/UP-TO-DATE/AVAILABLE, ...; CRDs' ``additionalPrinterColumns`` plus ``Age``) and, per ``includeObject``,
``PartialObjectMetadata`` (the default), the full object (``Object``: what ``--sort-by`` needs) or nothing
(``None``). Ages are computed against the double's clock with apimachinery's ``duration.HumanDuration`` rules.
Columns with ``priority: 1`` are the ``-o wide`` ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fakes.kube.clock import parse_rfc3339
from fakes.kube.resources import ResourceType

Obj = dict[str, Any]
Column = tuple[str, str, int, str]  # name, type, priority, description
NONE = "<none>"


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: ``45s``, ``5m3s``, ``3h20m``, ``2d4h``, ``3y20d``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y{rest}d" if rest else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _since(timestamp: Any, now: float) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        return human_duration(now - parse_rfc3339(str(timestamp)))
    except ValueError:
        return "<unknown>"


def _age(obj: Obj, now: float) -> str:
    return _since(obj.get("metadata", {}).get("creationTimestamp"), now)


def _containers(spec: Obj) -> tuple[str, str]:
    containers = (spec.get("template") or {}).get("spec", {}).get("containers") or []
    return (",".join(str(c.get("name", "")) for c in containers), ",".join(str(c.get("image", "")) for c in containers))


def _selector(selector: Any) -> str:
    if not selector:
        return NONE
    if "matchLabels" in selector or "matchExpressions" in selector:
        from fakes.kube.selectors import label_selector_string

        return label_selector_string(selector) or NONE
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or NONE


# --- pods -------------------------------------------------------------------------------------------------


def pod_status_reason(pod: Obj) -> tuple[str, int, int]:
    """``(STATUS, ready containers, total containers)`` as ``kubectl get pods`` shows them (printPod)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    total = len(spec.get("containers") or [])
    reason = status.get("reason") or status.get("phase") or "Pending"
    ready = 0
    init_statuses = status.get("initContainerStatuses") or []
    initializing = False
    for i, cs in enumerate(init_statuses):
        state = cs.get("state") or {}
        term, wait = state.get("terminated"), state.get("waiting")
        if term and term.get("exitCode") == 0:
            continue
        if term:
            reason = "Init:" + (
                term.get("reason")
                or (f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode')}")
            )
        elif wait and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        initializing = True
        break
    if not initializing:
        running = False
        for cs in reversed(status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            term, wait = state.get("terminated"), state.get("waiting")
            if wait and wait.get("reason"):
                reason = wait["reason"]
            elif term and term.get("reason"):
                reason = term["reason"]
            elif term:
                reason = f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode')}"
            elif state.get("running") and cs.get("ready"):
                running = True
                ready += 1
        if reason == "Completed" and running:
            conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
            reason = "Running" if conditions.get("Ready") == "True" else "NotReady"
    if pod.get("metadata", {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason, ready, total


def _restarts(pod: Obj, now: float) -> str:
    count, last = 0, ""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        count += int(cs.get("restartCount") or 0)
        finished = ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        if finished and (not last or finished > last):
            last = finished
    return f"{count} ({_since(last, now)} ago)" if count and last else str(count)


def _pod_row(pod: Obj, now: float) -> list[Any]:
    reason, ready, total = pod_status_reason(pod)
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    gates = spec.get("readinessGates") or []
    conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    gate_text = f"{sum(conds.get(g.get('conditionType')) == 'True' for g in gates)}/{len(gates)}" if gates else NONE
    return [
        pod["metadata"]["name"],
        f"{ready}/{total}",
        reason,
        _restarts(pod, now),
        _age(pod, now),
        status.get("podIP") or NONE,
        spec.get("nodeName") or NONE,
        status.get("nominatedNodeName") or NONE,
        gate_text,
    ]


POD_COLUMNS: list[Column] = [
    ("Name", "string", 0, "name"),
    ("Ready", "string", 0, "ready containers"),
    ("Status", "string", 0, "pod status"),
    ("Restarts", "string", 0, "restarts"),
    ("Age", "string", 0, "age"),
    ("IP", "string", 1, "pod IP"),
    ("Node", "string", 1, "node"),
    ("Nominated Node", "string", 1, "nominated node"),
    ("Readiness Gates", "string", 1, "readiness gates"),
]


# --- other built-ins --------------------------------------------------------------------------------------


def _service_row(svc: Obj, now: float) -> list[Any]:
    spec = svc.get("spec") or {}
    ports = []
    for p in spec.get("ports") or []:
        text = f"{p.get('port')}:{p['nodePort']}" if p.get("nodePort") else str(p.get("port"))
        ports.append(f"{text}/{p.get('protocol', 'TCP')}")
    external = spec.get("externalIPs") or []
    ingress = [
        i.get("ip") or i.get("hostname") for i in (svc.get("status") or {}).get("loadBalancer", {}).get("ingress") or []
    ]
    ext = ",".join(external + [i for i in ingress if i]) or (
        spec.get("externalName")
        if spec.get("type") == "ExternalName"
        else "<pending>"
        if spec.get("type") == "LoadBalancer"
        else NONE
    )
    return [
        svc["metadata"]["name"],
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or NONE,
        ext,
        ",".join(ports) or NONE,
        _age(svc, now),
        _selector(spec.get("selector")),
    ]


def _endpoints_row(ep: Obj, now: float) -> list[Any]:
    addrs = []
    for subset in ep.get("subsets") or []:
        for a in subset.get("addresses") or []:
            for p in subset.get("ports") or [{}]:
                addrs.append(f"{a.get('ip')}:{p.get('port')}" if p.get("port") else str(a.get("ip")))
    shown = ",".join(addrs[:3]) + (f" + {len(addrs) - 3} more..." if len(addrs) > 3 else "")
    return [ep["metadata"]["name"], shown or NONE, _age(ep, now)]


def _event_row(ev: Obj, now: float) -> list[Any]:
    inv = ev.get("involvedObject") or {}
    last = ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("metadata", {}).get("creationTimestamp")
    first = ev.get("firstTimestamp") or ev.get("eventTime") or last
    count = int(ev.get("count") or 1)
    last_seen = _since(last, now)
    if count > 1:
        last_seen = f"{last_seen} (x{count} over {_since(first, now)})"
    source = ev.get("source") or {}
    src = ", ".join(x for x in (source.get("component") or ev.get("reportingComponent"), source.get("host")) if x)
    obj_name = f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}"
    return [
        last_seen,
        ev.get("type", ""),
        ev.get("reason", ""),
        obj_name,
        inv.get("fieldPath", ""),
        src,
        str(ev.get("message", "")).strip(),
        _since(first, now),
        count,
        ev["metadata"]["name"],
    ]


def _deployment_row(d: Obj, now: float) -> list[Any]:
    spec, status = d.get("spec") or {}, d.get("status") or {}
    names, images = _containers(spec)
    return [
        d["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        _age(d, now),
        names,
        images,
        _selector(spec.get("selector")),
    ]


def _replicaset_row(r: Obj, now: float) -> list[Any]:
    spec, status = r.get("spec") or {}, r.get("status") or {}
    names, images = _containers(spec)
    return [
        r["metadata"]["name"],
        spec.get("replicas", 0),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _age(r, now),
        names,
        images,
        _selector(spec.get("selector")),
    ]


def _statefulset_row(s: Obj, now: float) -> list[Any]:
    spec, status = s.get("spec") or {}, s.get("status") or {}
    names, images = _containers(spec)
    return [
        s["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
        _age(s, now),
        names,
        images,
    ]


def _job_row(j: Obj, now: float) -> list[Any]:
    spec, status = j.get("spec") or {}, j.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    state = (
        "Complete"
        if conds.get("Complete") == "True"
        else "Failed"
        if conds.get("Failed") == "True"
        else "Suspended"
        if conds.get("Suspended") == "True"
        else "FailureTarget"
        if conds.get("FailureTarget") == "True"
        else "Running"
    )
    completions = (
        f"{status.get('succeeded', 0)}/{spec['completions']}"
        if spec.get("completions") is not None
        else f"{status.get('succeeded', 0)}/1 of {spec.get('parallelism', 1)}"
    )
    duration = ""
    if status.get("startTime"):
        end = status.get("completionTime")
        try:
            start_s = parse_rfc3339(status["startTime"])
            duration = human_duration((parse_rfc3339(end) if end else now) - start_s)
        except ValueError:
            duration = ""
    names, images = _containers(spec)
    return [
        j["metadata"]["name"],
        state,
        completions,
        duration,
        _age(j, now),
        names,
        images,
        _selector(spec.get("selector")),
    ]


def _cronjob_row(c: Obj, now: float) -> list[Any]:
    spec, status = c.get("spec") or {}, c.get("status") or {}
    last = status.get("lastScheduleTime")
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = _containers(job_spec)
    return [
        c["metadata"]["name"],
        spec.get("schedule", ""),
        spec.get("timeZone") or NONE,
        str(bool(spec.get("suspend"))),
        len(status.get("active") or []),
        _since(last, now) if last else NONE,
        _age(c, now),
        names,
        images,
        _selector(job_spec.get("selector")),
    ]


S, INT = "string", "integer"
PRINTERS: dict[str, tuple[list[Column], Callable[[Obj, float], list[Any]]]] = {
    "/pods": (POD_COLUMNS, _pod_row),
    "/services": (
        [
            ("Name", S, 0, "name"),
            ("Type", S, 0, "type"),
            ("Cluster-IP", S, 0, "cluster IP"),
            ("External-IP", S, 0, "external IPs"),
            ("Port(s)", S, 0, "ports"),
            ("Age", S, 0, "age"),
            ("Selector", S, 1, "selector"),
        ],
        _service_row,
    ),
    "/endpoints": ([("Name", S, 0, "name"), ("Endpoints", S, 0, "endpoints"), ("Age", S, 0, "age")], _endpoints_row),
    "/configmaps": (
        [("Name", S, 0, "name"), ("Data", INT, 0, "keys"), ("Age", S, 0, "age")],
        lambda o, now: [o["metadata"]["name"], len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o, now)],
    ),
    "/secrets": (
        [("Name", S, 0, "name"), ("Type", S, 0, "type"), ("Data", INT, 0, "keys"), ("Age", S, 0, "age")],
        lambda o, now: [o["metadata"]["name"], o.get("type", "Opaque"), len(o.get("data") or {}), _age(o, now)],
    ),
    "/serviceaccounts": (
        [("Name", S, 0, "name"), ("Secrets", INT, 0, "secrets"), ("Age", S, 0, "age")],
        lambda o, now: [o["metadata"]["name"], len(o.get("secrets") or []), _age(o, now)],
    ),
    "/namespaces": (
        [("Name", S, 0, "name"), ("Status", S, 0, "phase"), ("Age", S, 0, "age")],
        lambda o, now: [o["metadata"]["name"], (o.get("status") or {}).get("phase", "Active"), _age(o, now)],
    ),
    "/events": (
        [
            ("Last Seen", S, 0, "last seen"),
            ("Type", S, 0, "type"),
            ("Reason", S, 0, "reason"),
            ("Object", S, 0, "object"),
            ("Subobject", S, 1, "field path"),
            ("Source", S, 1, "source"),
            ("Message", S, 0, "message"),
            ("First Seen", S, 1, "first seen"),
            ("Count", INT, 1, "count"),
            ("Name", S, 1, "name"),
        ],
        _event_row,
    ),
    "apps/deployments": (
        [
            ("Name", S, 0, "name"),
            ("Ready", S, 0, "ready"),
            ("Up-to-date", INT, 0, "updated"),
            ("Available", INT, 0, "available"),
            ("Age", S, 0, "age"),
            ("Containers", S, 1, "containers"),
            ("Images", S, 1, "images"),
            ("Selector", S, 1, "selector"),
        ],
        _deployment_row,
    ),
    "apps/replicasets": (
        [
            ("Name", S, 0, "name"),
            ("Desired", INT, 0, "desired"),
            ("Current", INT, 0, "current"),
            ("Ready", INT, 0, "ready"),
            ("Age", S, 0, "age"),
            ("Containers", S, 1, "containers"),
            ("Images", S, 1, "images"),
            ("Selector", S, 1, "selector"),
        ],
        _replicaset_row,
    ),
    "apps/statefulsets": (
        [
            ("Name", S, 0, "name"),
            ("Ready", S, 0, "ready"),
            ("Age", S, 0, "age"),
            ("Containers", S, 1, "containers"),
            ("Images", S, 1, "images"),
        ],
        _statefulset_row,
    ),
    "batch/jobs": (
        [
            ("Name", S, 0, "name"),
            ("Status", S, 0, "status"),
            ("Completions", S, 0, "completions"),
            ("Duration", S, 0, "duration"),
            ("Age", S, 0, "age"),
            ("Containers", S, 1, "containers"),
            ("Images", S, 1, "images"),
            ("Selector", S, 1, "selector"),
        ],
        _job_row,
    ),
    "batch/cronjobs": (
        [
            ("Name", S, 0, "name"),
            ("Schedule", S, 0, "schedule"),
            ("Timezone", S, 0, "time zone"),
            ("Suspend", S, 0, "suspend"),
            ("Active", INT, 0, "active"),
            ("Last Schedule", S, 0, "last"),
            ("Age", S, 0, "age"),
            ("Containers", S, 1, "containers"),
            ("Images", S, 1, "images"),
            ("Selector", S, 1, "selector"),
        ],
        _cronjob_row,
    ),
    "apiextensions.k8s.io/customresourcedefinitions": (
        [("Name", S, 0, "name"), ("Created At", "date", 0, "creation time")],
        lambda o, now: [o["metadata"]["name"], o["metadata"].get("creationTimestamp", "")],
    ),
}


# --- the other built-in kinds (printers.go's handlers for them) ----------------------------------------------


def _created(o: Obj, now: float) -> list[Any]:
    return [o["metadata"]["name"], o["metadata"].get("creationTimestamp", "")]


CREATED_COLUMNS: list[Column] = [("Name", S, 0, "name"), ("Created At", "date", 0, "creation time")]


def _node_row(n: Obj, now: float) -> list[Any]:
    status = n.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Unknown" if ready is None else {"True": "Ready", "False": "NotReady"}.get(ready.get("status"), "Unknown")
    if (n.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = n["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k)
    if labels.get("kubernetes.io/role"):
        roles.append(labels["kubernetes.io/role"])
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    info = status.get("nodeInfo") or {}
    return [
        n["metadata"]["name"],
        state,
        ",".join(r for r in roles if r) or NONE,
        _age(n, now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP") or NONE,
        addresses.get("ExternalIP") or NONE,
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _daemonset_row(d: Obj, now: float) -> list[Any]:
    spec, status = d.get("spec") or {}, d.get("status") or {}
    names, images = _containers(spec)
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    return [
        d["metadata"]["name"],
        status.get("desiredNumberScheduled", 0),
        status.get("currentNumberScheduled", 0),
        status.get("numberReady", 0),
        status.get("updatedNumberScheduled", 0),
        status.get("numberAvailable", 0),
        _selector(node_selector),
        _age(d, now),
        names,
        images,
        _selector(spec.get("selector")),
    ]


def _binding_row(b: Obj, now: float) -> list[Any]:
    subjects = b.get("subjects") or []
    ref = b.get("roleRef") or {}

    def of(kind: str) -> str:
        return ", ".join(
            (f"{s.get('namespace')}/{s.get('name')}" if kind == "ServiceAccount" else str(s.get("name")))
            for s in subjects
            if s.get("kind") == kind
        )

    return [
        b["metadata"]["name"],
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _age(b, now),
        of("User"),
        of("Group"),
        of("ServiceAccount"),
    ]


def _hpa_targets(h: Obj) -> str:
    """TARGETS of ``kubectl get hpa`` (``cpu: 40%/70%``; ``<unknown>`` for a metric the status lacks)."""
    spec, status = h.get("spec") or {}, h.get("status") or {}
    metrics = spec.get("metrics")
    if metrics is None and "targetCPUUtilizationPercentage" in spec:
        metrics = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]},
                },
            }
        ]
    current = {
        (m.get("resource") or {}).get("name"): (m.get("resource") or {}).get("current") or {}
        for m in status.get("currentMetrics") or []
        if m.get("type") == "Resource"
    }
    shown = []
    for m in metrics or []:
        resource = m.get("resource") or {}
        if m.get("type") != "Resource":
            shown.append("<unknown type>" if m.get("type") not in ("Pods", "Object", "External") else "<unknown>")
            continue
        target = resource.get("target") or {}
        now_value = current.get(resource.get("name"), {})
        if target.get("type") == "Utilization":
            have = now_value.get("averageUtilization")
            text = f"{have if have is not None else '<unknown>'}{'%' if have is not None else ''}"
            goal = target.get("averageUtilization")
            shown.append(f"{resource.get('name')}: {text}/{f'{goal}%' if goal is not None else '<auto>'}")
        else:
            have = now_value.get("averageValue")
            shown.append(f"{resource.get('name')}: {have or '<unknown>'}/{target.get('averageValue')}")
    if len(shown) > 2:  # formatHPAMetrics shows two
        return f"{', '.join(shown[:2])} + {len(shown) - 2} more..."
    return ", ".join(shown) or NONE


def _hpa_row(h: Obj, now: float) -> list[Any]:
    spec, status = h.get("spec") or {}, h.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    return [
        h["metadata"]["name"],
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _hpa_targets(h),
        spec.get("minReplicas", "<unset>"),
        spec.get("maxReplicas", 0),
        status.get("currentReplicas", 0),
        _age(h, now),
    ]


def _pdb_row(p: Obj, now: float) -> list[Any]:
    spec, status = p.get("spec") or {}, p.get("status") or {}
    return [
        p["metadata"]["name"],
        str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
        str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
        status.get("disruptionsAllowed", 0),
        _age(p, now),
    ]


_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def _modes(spec: Obj) -> str:
    return ",".join(_MODES.get(m, m) for m in spec.get("accessModes") or [])


def _pvc_row(c: Obj, now: float) -> list[Any]:
    spec, status = c.get("spec") or {}, c.get("status") or {}
    bound = bool(spec.get("volumeName"))
    phase = "Terminating" if c["metadata"].get("deletionTimestamp") else status.get("phase", "Pending")
    return [
        c["metadata"]["name"],
        phase,
        spec.get("volumeName", ""),
        (status.get("capacity") or {}).get("storage", "") if bound else "",
        _modes(status) if bound else "",
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or "<unset>",
        _age(c, now),
        spec.get("volumeMode", "Filesystem"),
    ]


def _pv_row(v: Obj, now: float) -> list[Any]:
    spec, status = v.get("spec") or {}, v.get("status") or {}
    claim = spec.get("claimRef") or {}
    phase = "Terminating" if v["metadata"].get("deletionTimestamp") else status.get("phase", "Pending")
    return [
        v["metadata"]["name"],
        (spec.get("capacity") or {}).get("storage", ""),
        _modes(spec),
        spec.get("persistentVolumeReclaimPolicy", "Retain"),
        phase,
        f"{claim.get('namespace')}/{claim.get('name')}" if claim else "",
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason", ""),
        _age(v, now),
        spec.get("volumeMode", "Filesystem"),
    ]


def _ingress_row(i: Obj, now: float) -> list[Any]:
    spec, status = i.get("spec") or {}, i.get("status") or {}
    hosts = [r.get("host") for r in spec.get("rules") or [] if r.get("host")]
    addresses = [a.get("ip") or a.get("hostname") for a in (status.get("loadBalancer") or {}).get("ingress") or []]
    return [
        i["metadata"]["name"],
        spec.get("ingressClassName") or NONE,
        ",".join(hosts) or "*",
        ",".join(a for a in addresses if a),
        "80, 443" if spec.get("tls") else "80",
        _age(i, now),
    ]


def _ingressclass_row(c: Obj, now: float) -> list[Any]:
    spec = c.get("spec") or {}
    params = spec.get("parameters") or {}
    shown = f"{params.get('kind')}.{params.get('apiGroup')}/{params.get('name')}" if params else NONE
    return [c["metadata"]["name"], spec.get("controller", ""), shown, _age(c, now)]


def _storageclass_row(c: Obj, now: float) -> list[Any]:
    name = c["metadata"]["name"]
    annotations = c["metadata"].get("annotations") or {}
    if "true" in (
        annotations.get("storageclass.kubernetes.io/is-default-class"),
        annotations.get("storageclass.beta.kubernetes.io/is-default-class"),
    ):
        name += " (default)"
    return [
        name,
        c.get("provisioner", ""),
        c.get("reclaimPolicy", "Delete"),
        c.get("volumeBindingMode", "Immediate"),
        bool(c.get("allowVolumeExpansion", False)),
        _age(c, now),
    ]


def _apiservice_row(a: Obj, now: float) -> list[Any]:
    spec, status = a.get("spec") or {}, a.get("status") or {}
    svc = spec.get("service")
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Available"), None)
    available = "Unknown"
    if cond is not None:
        available = str(cond.get("status"))
        if cond.get("status") != "True" and cond.get("reason"):
            available += f" ({cond['reason']})"
    return [
        a["metadata"]["name"],
        f"{svc.get('namespace')}/{svc.get('name')}" if svc else "Local",
        available,
        _age(a, now),
    ]


def _revision_row(r: Obj, now: float) -> list[Any]:
    ref = next((o for o in r["metadata"].get("ownerReferences") or [] if o.get("controller")), None)
    owner = NONE
    if ref:
        group = str(ref.get("apiVersion", "")).rpartition("/")[0]
        owner = f"{str(ref.get('kind', '')).lower()}{'.' + group if group else ''}/{ref.get('name')}"
    return [r["metadata"]["name"], owner, r.get("revision", 0), _age(r, now)]


def _endpointslice_row(e: Obj, now: float) -> list[Any]:
    ports = ",".join(str(p.get("port")) for p in e.get("ports") or [] if p.get("port") is not None)
    addresses = [a for ep in e.get("endpoints") or [] for a in ep.get("addresses") or []]
    shown = ",".join(addresses[:3]) + (f" + {len(addresses) - 3} more..." if len(addresses) > 3 else "")
    return [e["metadata"]["name"], e.get("addressType", ""), ports or "<unset>", shown or "<unset>", _age(e, now)]


def _rc_row(r: Obj, now: float) -> list[Any]:
    spec, status = r.get("spec") or {}, r.get("status") or {}
    names, images = _containers(spec)
    return [
        r["metadata"]["name"],
        spec.get("replicas", 0),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _age(r, now),
        names,
        images,
        _selector(spec.get("selector")),
    ]


MORE_PRINTERS: dict[str, tuple[list[Column], Callable[[Obj, float], list[Any]]]] = {
    "/nodes": (
        [
            ("Name", S, 0, "name"),
            ("Status", S, 0, "The status of the node"),
            ("Roles", S, 0, "The roles of the node"),
            ("Age", S, 0, "age"),
            ("Version", S, 0, "kubelet version"),
            ("Internal-IP", S, 1, "addresses"),
            ("External-IP", S, 1, "addresses"),
            ("OS-Image", S, 1, "OS image"),
            ("Kernel-Version", S, 1, "kernel version"),
            ("Container-Runtime", S, 1, "container runtime version"),
        ],
        _node_row,
    ),
    "/replicationcontrollers": (
        [
            ("Name", S, 0, "name"),
            ("Desired", INT, 0, "desired"),
            ("Current", INT, 0, "current"),
            ("Ready", INT, 0, "ready"),
            ("Age", S, 0, "age"),
            ("Containers", S, 1, "containers"),
            ("Images", S, 1, "images"),
            ("Selector", S, 1, "selector"),
        ],
        _rc_row,
    ),
    "/persistentvolumeclaims": (
        [
            ("Name", S, 0, "name"),
            ("Status", S, 0, "phase"),
            ("Volume", S, 0, "volume name"),
            ("Capacity", S, 0, "capacity"),
            ("Access Modes", S, 0, "access modes"),
            ("StorageClass", S, 0, "storage class"),
            ("VolumeAttributesClass", S, 0, "volume attributes class"),
            ("Age", S, 0, "age"),
            ("VolumeMode", S, 1, "volume mode"),
        ],
        _pvc_row,
    ),
    "/persistentvolumes": (
        [
            ("Name", S, 0, "name"),
            ("Capacity", S, 0, "capacity"),
            ("Access Modes", S, 0, "access modes"),
            ("Reclaim Policy", S, 0, "reclaim policy"),
            ("Status", S, 0, "phase"),
            ("Claim", S, 0, "claim"),
            ("StorageClass", S, 0, "storage class"),
            ("VolumeAttributesClass", S, 0, "volume attributes class"),
            ("Reason", S, 0, "reason"),
            ("Age", S, 0, "age"),
            ("VolumeMode", S, 1, "volume mode"),
        ],
        _pv_row,
    ),
    "/limitranges": (CREATED_COLUMNS, _created),
    "apps/daemonsets": (
        [
            ("Name", S, 0, "name"),
            ("Desired", INT, 0, "desired"),
            ("Current", INT, 0, "current"),
            ("Ready", INT, 0, "ready"),
            ("Up-to-date", INT, 0, "updated"),
            ("Available", INT, 0, "available"),
            ("Node Selector", S, 0, "node selector"),
            ("Age", S, 0, "age"),
            ("Containers", S, 1, "containers"),
            ("Images", S, 1, "images"),
            ("Selector", S, 1, "selector"),
        ],
        _daemonset_row,
    ),
    "apps/controllerrevisions": (
        [
            ("Name", S, 0, "name"),
            ("Controller", S, 0, "controller"),
            ("Revision", INT, 0, "revision"),
            ("Age", S, 0, "age"),
        ],
        _revision_row,
    ),
    "rbac.authorization.k8s.io/roles": (CREATED_COLUMNS, _created),
    "rbac.authorization.k8s.io/clusterroles": (CREATED_COLUMNS, _created),
    "rbac.authorization.k8s.io/rolebindings": (
        [
            ("Name", S, 0, "name"),
            ("Role", S, 0, "role"),
            ("Age", S, 0, "age"),
            ("Users", S, 1, "users"),
            ("Groups", S, 1, "groups"),
            ("ServiceAccounts", S, 1, "service accounts"),
        ],
        _binding_row,
    ),
    "autoscaling/horizontalpodautoscalers": (
        [
            ("Name", S, 0, "name"),
            ("Reference", S, 0, "scale target"),
            ("Targets", S, 0, "metrics"),
            ("MinPods", S, 0, "min replicas"),
            ("MaxPods", INT, 0, "max replicas"),
            ("Replicas", INT, 0, "current replicas"),
            ("Age", S, 0, "age"),
        ],
        _hpa_row,
    ),
    "policy/poddisruptionbudgets": (
        [
            ("Name", S, 0, "name"),
            ("Min Available", S, 0, "min available"),
            ("Max Unavailable", S, 0, "max unavailable"),
            ("Allowed Disruptions", INT, 0, "disruptions allowed"),
            ("Age", S, 0, "age"),
        ],
        _pdb_row,
    ),
    "networking.k8s.io/ingresses": (
        [
            ("Name", S, 0, "name"),
            ("Class", S, 0, "ingress class"),
            ("Hosts", S, 0, "hosts"),
            ("Address", S, 0, "address"),
            ("Ports", S, 0, "ports"),
            ("Age", S, 0, "age"),
        ],
        _ingress_row,
    ),
    "networking.k8s.io/ingressclasses": (
        [
            ("Name", S, 0, "name"),
            ("Controller", S, 0, "controller"),
            ("Parameters", S, 0, "parameters"),
            ("Age", S, 0, "age"),
        ],
        _ingressclass_row,
    ),
    "networking.k8s.io/networkpolicies": (
        [("Name", S, 0, "name"), ("Pod-Selector", S, 0, "pod selector"), ("Age", S, 0, "age")],
        lambda o, now: [o["metadata"]["name"], _selector((o.get("spec") or {}).get("podSelector")), _age(o, now)],
    ),
    "scheduling.k8s.io/priorityclasses": (
        [
            ("Name", S, 0, "name"),
            ("Value", INT, 0, "value"),
            ("Global-Default", "boolean", 0, "global default"),
            ("Age", S, 0, "age"),
            ("PreemptionPolicy", S, 0, "preemption policy"),
        ],
        lambda o, now: [
            o["metadata"]["name"],
            o.get("value", 0),
            bool(o.get("globalDefault")),
            _age(o, now),
            o.get("preemptionPolicy", ""),
        ],
    ),
    "coordination.k8s.io/leases": (
        [("Name", S, 0, "name"), ("Holder", S, 0, "holder"), ("Age", S, 0, "age")],
        lambda o, now: [o["metadata"]["name"], (o.get("spec") or {}).get("holderIdentity", ""), _age(o, now)],
    ),
    "apiregistration.k8s.io/apiservices": (
        [("Name", S, 0, "name"), ("Service", S, 0, "service"), ("Available", S, 0, "available"), ("Age", S, 0, "age")],
        _apiservice_row,
    ),
    "storage.k8s.io/storageclasses": (
        [
            ("Name", S, 0, "name"),
            ("Provisioner", S, 0, "provisioner"),
            ("ReclaimPolicy", S, 0, "reclaim policy"),
            ("VolumeBindingMode", S, 0, "volume binding mode"),
            ("AllowVolumeExpansion", S, 0, "allow volume expansion"),
            ("Age", S, 0, "age"),
        ],
        _storageclass_row,
    ),
    "discovery.k8s.io/endpointslices": (
        [
            ("Name", S, 0, "name"),
            ("AddressType", S, 0, "address type"),
            ("Ports", S, 0, "ports"),
            ("Endpoints", S, 0, "endpoints"),
            ("Age", S, 0, "age"),
        ],
        _endpointslice_row,
    ),
    "node.k8s.io/runtimeclasses": (
        [("Name", S, 0, "name"), ("Handler", S, 0, "handler"), ("Age", S, 0, "age")],
        lambda o, now: [o["metadata"]["name"], o.get("handler", ""), _age(o, now)],
    ),
}
MORE_PRINTERS["rbac.authorization.k8s.io/clusterrolebindings"] = MORE_PRINTERS["rbac.authorization.k8s.io/rolebindings"]
PRINTERS.update(MORE_PRINTERS)


def json_path(obj: Any, path: str) -> Any:
    """The value at a simple JSONPath (``.status.phase``, ``.spec.items[0].name``, ``{.a.b}``), or ``None``."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path.lstrip(".")):
        if part.startswith("["):
            index = int(part[1:-1])
            obj = obj[index] if isinstance(obj, list) and index < len(obj) else None
        else:
            obj = obj.get(part) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


def _custom_columns(rt: ResourceType) -> tuple[list[Column], Callable[[Obj, float], list[Any]]]:
    declared = list(rt.printer_columns)
    if not declared:
        declared = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    columns: list[Column] = [("Name", S, 0, "name")] + [
        (
            str(c.get("name", "")),
            str(c.get("type", "string")),
            int(c.get("priority", 0) or 0),
            str(c.get("description", "")),
        )
        for c in declared
    ]

    def row(obj: Obj, now: float) -> list[Any]:
        cells: list[Any] = [obj["metadata"]["name"]]
        for c in declared:
            value = json_path(obj, str(c.get("jsonPath", "")))
            if value is None:
                cells.append(None)
            elif c.get("type") == "date":
                cells.append(_since(value, now))
            elif isinstance(value, (dict, list)):
                import json

                cells.append(json.dumps(value, separators=(",", ":")))
            else:
                cells.append(value)
        return cells

    return columns, row


def _generic(rt: ResourceType) -> tuple[list[Column], Callable[[Obj, float], list[Any]]]:
    """The apiserver's default table (``rest.NewDefaultTableConvertor``) for a kind without a printer."""
    return CREATED_COLUMNS, _created


def printer_for(rt: ResourceType) -> tuple[list[Column], Callable[[Obj, float], list[Any]]]:
    if rt.custom:
        return _custom_columns(rt)
    return PRINTERS.get(rt.key) or _generic(rt)


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def table(
    rt: ResourceType, items: list[Obj], *, now: float, include: str = "Metadata", list_meta: Obj | None = None
) -> Obj:
    """A ``Table`` for ``items`` of type ``rt``; ``include`` is ``includeObject`` (None, Metadata, Object)."""
    columns, row = printer_for(rt)
    rows = []
    for obj in items:
        entry: Obj = {"cells": row(obj, now)}
        shown = _row_object(obj, include)
        if shown is not None:
            entry["object"] = shown
        rows.append(entry)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": [
            {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": d, "priority": p}
            for n, t, p, d in columns
        ],
        "rows": rows,
    }


def wants_table(accept: str | None) -> str | None:
    """``"v1"``/``"v1beta1"`` when the first acceptable media type in ``accept`` is a Table, else ``None``."""
    for part in (accept or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
            return params["v"]
        if fields[0].lower() in ("application/json", "*/*") and not params.get("as"):
            return None
    return None
