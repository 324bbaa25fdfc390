"""``ObjectMeta`` validation as the apiserver applies it to every object, with apimachinery's messages.

Ported from apimachinery ``pkg/util/validation/validation.go`` (``IsQualifiedName``, ``IsValidLabelValue``,
``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsDNS1035Label`` and their messages), ``pkg/api/validation/
objectmeta.go`` (``ValidateObjectMetaAccessor``: generateName, name, namespace, labels, annotations with the 256 KiB
total ``TotalAnnotationSizeLimitB``, ownerReferences, finalizers) and ``pkg/api/validation/generic.go`` (the name
functions, ``maskTrailingDash`` included), as of Kubernetes 1.32. Every function returns ``Cause`` lists; the caller
raises one 422 for all of them, as ``errors.NewInvalid`` aggregates a validation's ``ErrorList``.

Which name rule each kind follows (``pkg/apis/*/validation``): Services are DNS-1035 labels (a letter first),
Namespaces DNS-1123 labels, every other served kind a DNS-1123 subdomain (custom resources included).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fakes.kube.errors import Cause, field_invalid, field_required

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character"
)
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character"
)
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character"
)
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
    "and end with an alphanumeric character"
)
#: ``TotalAnnotationSizeLimitB``: the sum of every annotation's key and value lengths, in bytes.
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

NameCheck = Callable[[str], list[str]]


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError`` wording (its double space between examples included)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _full(fmt: str, value: str) -> bool:
    return re.fullmatch(fmt, value) is not None


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = [max_len_error(253)] if len(value.encode()) > 253 else []
    if not _full(DNS1123_SUBDOMAIN_FMT, value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    errs = [max_len_error(63)] if len(value.encode()) > 63 else []
    if not _full(DNS1123_LABEL_FMT, value):
        if _full(DNS1123_SUBDOMAIN_FMT, value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = [max_len_error(63)] if len(value.encode()) > 63 else []
    if not _full(DNS1035_LABEL_FMT, value):
        errs.append(regex_error(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Label keys, annotation keys (lower-cased first) and finalizers: ``[prefix/]name``."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return [
            "a qualified name "
            + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part " + max_len_error(63))
    if not _full(QUALIFIED_NAME_FMT, name):
        errs.append("name part " + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = [max_len_error(63)] if len(value.encode()) > 63 else []
    if not _full(LABEL_VALUE_FMT, value):
        errs.append(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _mask_trailing_dash(name: str) -> str:
    """generic.go's ``maskTrailingDash``, quirk and all: it drops two characters before appending an ``a``."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def name_check(resource_key: str) -> NameCheck:
    """The name rule of a kind (``"/services"``, ``"apps/deployments"``, ...)."""
    if resource_key == "/services":
        return is_dns1035_label
    if resource_key == "/namespaces":
        return is_dns1123_label
    return is_dns1123_subdomain


def _string_map(value: Any, path: str) -> tuple[dict[str, str], list[Cause]]:
    if value is None:
        return {}, []
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return {}, [field_invalid(path, str(value), "must be a map of strings")]
    return value, []


def labels_causes(labels: Any, path: str = "metadata.labels") -> list[Cause]:
    """``ValidateLabels``: every key a qualified name, every value a label value."""
    found, out = _string_map(labels, path)
    for key, value in found.items():
        out += [_invalid(path, key, m) for m in is_qualified_name(key)]
        out += [_invalid(path, value, m) for m in is_valid_label_value(value)]
    return out


def annotations_causes(annotations: Any, path: str = "metadata.annotations") -> list[Cause]:
    """``ValidateAnnotations``: keys are qualified names (case ignored); the keys and values together hold at most
    256 KiB (``Too long: may not be more than 262144 bytes``)."""
    found, out = _string_map(annotations, path)
    for key in found:
        out += [_invalid(path, key, m) for m in is_qualified_name(key.lower())]
    total = sum(len(k.encode()) + len(v.encode()) for k, v in found.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        out.append(
            Cause("FieldValueTooLong", f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes", path)
        )
    return out


def _invalid(path: str, value: str, msg: str) -> Cause:
    return field_invalid(path, value, msg)


def finalizers_causes(finalizers: Any, path: str = "metadata.finalizers") -> list[Cause]:
    """``ValidateFinalizers``: each a qualified name; a duplicate is refused."""
    if not isinstance(finalizers, list):
        return []
    out: list[Cause] = []
    seen: set[str] = set()
    for i, value in enumerate(finalizers):
        if not isinstance(value, str):
            continue
        out += [_invalid(f"{path}[{i}]", value, m) for m in is_qualified_name(value)]
        if value in seen:
            out.append(Cause("FieldValueDuplicate", f'Duplicate value: "{value}"', f"{path}[{i}]"))
        seen.add(value)
    return out


def owner_references_causes(refs: Any, path: str = "metadata.ownerReferences") -> list[Cause]:
    """``ValidateOwnerReferences``: apiVersion, kind, name and uid required (the one-controller rule is not
    modelled: its message prints the whole list as Go source)."""
    if not isinstance(refs, list):
        return []
    out: list[Cause] = []
    for i, ref in enumerate(refs):
        if not isinstance(ref, dict):
            continue
        where = f"{path}[{i}]"
        api_version = ref.get("apiVersion") or ""
        if not api_version:
            out.append(field_required(f"{where}.apiVersion", "must not be empty"))
        elif api_version.count("/") > 1 or not api_version.rpartition("/")[2]:
            out.append(field_invalid(f"{where}.apiVersion", api_version, "must be <group>/<version> or <version>"))
        for name in ("kind", "name", "uid"):
            if not ref.get(name):
                out.append(field_required(f"{where}.{name}", "must not be empty"))
    return out


def object_meta_causes(resource_key: str, meta: dict[str, Any], *, namespaced: bool) -> list[Cause]:
    """``ValidateObjectMetaAccessor`` for a create or update: generateName and name by the kind's rule, namespace,
    labels, annotations, ownerReferences, finalizers (a missing name is the store's to report)."""
    check = name_check(resource_key)
    out: list[Cause] = []
    generate = meta.get("generateName")
    if isinstance(generate, str) and generate:
        out += [_invalid("metadata.generateName", generate, m) for m in check(_mask_trailing_dash(generate))]
    name = meta.get("name")
    if isinstance(name, str) and name:
        out += [_invalid("metadata.name", name, m) for m in check(name)]
    namespace = meta.get("namespace")
    if namespaced and isinstance(namespace, str) and namespace:
        out += [_invalid("metadata.namespace", namespace, m) for m in is_dns1123_label(namespace)]
    out += labels_causes(meta.get("labels"))
    out += annotations_causes(meta.get("annotations"))
    out += owner_references_causes(meta.get("ownerReferences"))
    out += finalizers_causes(meta.get("finalizers"))
    return out


__all__ = [
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "annotations_causes",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "labels_causes",
    "name_check",
    "object_meta_causes",
]
