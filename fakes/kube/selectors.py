"""Label and field selectors, parsed and matched as the API server does (apimachinery ``pkg/labels``, ``pkg/fields``).

Label selectors (``?labelSelector=``): comma-separated requirements ``k``, ``!k``, ``k=v``, ``k==v``, ``k!=v``,
``k in (a,b)``, ``k notin (a,b)``, ``k>n``, ``k<n``. ``!=`` and ``notin`` also match objects without the label, as
on a real server. :func:`from_label_selector` turns a ``LabelSelector`` object (``matchLabels`` /
``matchExpressions``, as in a Deployment's ``spec.selector``) into the same matcher.

Field selectors (``?fieldSelector=``): ``f=v``, ``f==v``, ``f!=v`` over ``metadata.name``, ``metadata.namespace``
and the per-kind fields a real server indexes (``status.phase`` for pods, ``involvedObject.*`` for events, ...).
Anything else is a 400 ``BadRequest`` with the real wording. Parse errors raise :class:`~fakes.kube.errors.ApiError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fakes.kube.errors import ApiError, bad_request

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True)
class Requirement:
    """One label requirement: ``op`` is ``exists``, ``!``, ``=``, ``!=``, ``in``, ``notin``, ``gt`` or ``lt``."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if not present:
            return False
        try:
            number = int(str(value))
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if self.op == "gt" else number < bound


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: all requirements must hold (the empty selector matches everything)."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def __bool__(self) -> bool:
        return bool(self.requirements)


_TOKEN = re.compile(r"\s*(\(|\)|,|==|=|!=|!|>|<|[^\s(),=!<>]+)")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - the pattern accepts any non-space character
            raise bad_request(f"unable to parse requirement: unexpected {text[pos:]!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _check_key(key: str) -> None:
    name = key.rpartition("/")[2]
    if not _KEY.match(key) or len(name) > 63 or len(key.rpartition("/")[0]) > 253:
        raise bad_request(
            f'unable to parse requirement: values[0][{key}]: Invalid value: "{key}": name part must '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise bad_request(
            f'unable to parse requirement: values[0][]: Invalid value: "{value}": a valid label must '
            "be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character"
        )


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse ``?labelSelector=``; raises ``ApiError`` 400 on a syntax error."""
    if not text or not text.strip():
        return LabelSelector()
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def expect(what: str) -> str:
        nonlocal i
        if i >= len(toks):
            raise bad_request(f"unable to parse requirement: found '', expected: {what}")
        tok = toks[i]
        i += 1
        return tok

    while i < len(toks):
        tok = expect("identifier")
        if tok == "!":
            key = expect("identifier")
            _check_key(key)
            reqs.append(Requirement(key, "!"))
        else:
            key = tok
            if key in ("(", ")", ",", "=", "==", "!=", ">", "<"):
                raise bad_request(
                    f"unable to parse requirement: found '{key}', expected: !, identifier, or 'end of string'"
                )
            _check_key(key)
            if i >= len(toks) or toks[i] == ",":
                reqs.append(Requirement(key, "exists"))
            else:
                op = expect("operator")
                if op in ("=", "==", "!="):
                    value = toks[i] if i < len(toks) and toks[i] != "," else ""
                    if value:
                        i += 1
                    _check_value(value)
                    reqs.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
                elif op in (">", "<"):
                    value = expect("integer")
                    if not re.fullmatch(r"-?\d+", value):
                        raise bad_request(
                            "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer"
                        )
                    reqs.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
                elif op in ("in", "notin"):
                    if expect("'('") != "(":
                        raise bad_request(f"unable to parse requirement: found '{toks[i - 1]}', expected: '('")
                    values: list[str] = []
                    while True:
                        item = expect("identifier or ')'")
                        if item == ")":
                            break
                        if item == ",":
                            continue
                        _check_value(item)
                        values.append(item)
                    if not values and op == "in":
                        raise bad_request(
                            "unable to parse requirement: for 'in', 'notin' operators, values set can't be empty"
                        )
                    reqs.append(Requirement(key, op, tuple(values)))
                else:
                    raise bad_request(
                        f"unable to parse requirement: found '{op}', expected: in, notin, =, ==, !=, gt, lt"
                    )
        if i < len(toks):
            sep = expect("','")
            if sep != ",":
                raise bad_request(f"unable to parse requirement: found '{sep}', expected: ',' or 'end of string'")
            if i >= len(toks):
                raise bad_request("unable to parse requirement: found '', expected: identifier")
    return LabelSelector(tuple(reqs))


def from_label_selector(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A matcher for a ``LabelSelector`` object (``matchLabels`` + ``matchExpressions``). ``None`` or ``{}``
    matches everything (as ``metav1.LabelSelectorAsSelector`` does for an empty, non-nil selector)."""
    if not selector:
        return LabelSelector()
    reqs = [Requirement(k, "=", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in selector.get("matchExpressions") or []:
        op = ops.get(str(expr.get("operator")))
        if op is None:
            raise bad_request(f"{expr.get('operator')!r} is not a valid label selector operator")
        reqs.append(Requirement(str(expr.get("key")), op, tuple(str(v) for v in expr.get("values") or ())))
    return LabelSelector(tuple(reqs))


def label_selector_string(selector: Mapping[str, Any] | None) -> str:
    """``app=x,tier in (a,b)``: a LabelSelector object in query form (``status.selector`` of a Scale)."""
    parts = [f"{k}={v}" for k, v in sorted(((selector or {}).get("matchLabels") or {}).items())]
    for expr in (selector or {}).get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), ",".join(expr.get("values") or ())
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": str(key),
                "DoesNotExist": f"!{key}",
            }.get(str(op), "")
        )
    return ",".join(p for p in parts if p)


# --- field selectors ------------------------------------------------------------------------------------------


def _pod_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.restartPolicy": spec.get("restartPolicy", ""),
        "spec.schedulerName": spec.get("schedulerName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "spec.hostNetwork": str(bool(spec.get("hostNetwork"))).lower(),
        "status.phase": status.get("phase", ""),
        "status.podIP": status.get("podIP", ""),
        "status.nominatedNodeName": status.get("nominatedNodeName", ""),
    }


def _event_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    inv = obj.get("involvedObject") or {}
    source = obj.get("source") or {}
    out = {
        f"involvedObject.{k}": str(inv.get(k, ""))
        for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    }
    out.update(
        {
            "reason": obj.get("reason", ""),
            "reportingComponent": obj.get("reportingComponent", ""),
            "source": source.get("component", ""),
            "type": obj.get("type", ""),
        }
    )
    return out


FieldGetter = Callable[[Mapping[str, Any]], dict[str, str]]
#: Extra selectable fields per resource key, beyond metadata.name / metadata.namespace.
FIELDS: dict[str, FieldGetter] = {
    "/pods": _pod_fields,
    "/events": _event_fields,
    "/secrets": lambda o: {"type": str(o.get("type", ""))},
    "/namespaces": lambda o: {"status.phase": str((o.get("status") or {}).get("phase", ""))},
    "batch/jobs": lambda o: {"status.successful": str((o.get("status") or {}).get("successful", 0))},
    "apps/replicasets": lambda o: {"status.replicas": str((o.get("status") or {}).get("replicas", 0))},
}


@dataclass(frozen=True)
class FieldSelector:
    """Parsed field requirements ``(field, op, value)`` with op ``=`` or ``!=``."""

    requirements: tuple[tuple[str, str, str], ...] = ()

    def matches(self, obj: Mapping[str, Any], resource_key: str) -> bool:
        if not self.requirements:
            return True
        fields = field_values(obj, resource_key)
        for name, op, value in self.requirements:
            actual = fields.get(name, "")
            if (actual == value) != (op == "="):
                return False
        return True

    def __bool__(self) -> bool:
        return bool(self.requirements)

    def get(self, name: str) -> str | None:
        """The value required by an ``=`` term on ``name`` (e.g. ``metadata.name``), or ``None``."""
        return next((v for f, op, v in self.requirements if f == name and op == "="), None)


def field_values(obj: Mapping[str, Any], resource_key: str) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    out = {"metadata.name": str(meta.get("name", "")), "metadata.namespace": str(meta.get("namespace", ""))}
    getter = FIELDS.get(resource_key)
    if getter is not None:
        out.update(getter(obj))
    return out


def parse_field_selector(text: str | None, resource_key: str, *, custom: bool = False) -> FieldSelector:
    """Parse ``?fieldSelector=`` for the collection ``resource_key``; 400 for an unknown field or bad syntax."""
    if not text or not text.strip():
        return FieldSelector()
    known = set(field_values({}, resource_key))
    reqs: list[tuple[str, str, str]] = []
    for term in _split_terms(text):
        m = re.fullmatch(r"\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*", term)
        if m is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        name, op, value = m.group(1), m.group(2), m.group(3)
        if name not in known:
            if custom:
                raise bad_request(f'"{name}" is not a known field selector: only "metadata.name", "metadata.namespace"')
            raise bad_request(f"field label not supported: {name}")
        reqs.append((name, "!=" if op == "!=" else "=", value.replace("\\,", ",").replace("\\=", "=")))
    return FieldSelector(tuple(reqs))


def _split_terms(text: str) -> list[str]:
    terms, current, escaped = [], "", False
    for ch in text:
        if escaped:
            current += "\\" + ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    return [t for t in terms if t.strip()]


def check(ok: bool, message: str) -> None:
    """Raise a 400 ``ApiError`` with ``message`` unless ``ok``."""
    if not ok:
        raise ApiError(400, "BadRequest", message)
