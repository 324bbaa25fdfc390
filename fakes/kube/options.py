"""Request options as the apiserver reads and validates them: ``DeleteOptions`` and the ``dryRun`` of every write.

``DeleteOptions`` (apiserver ``pkg/endpoints/handlers/delete.go``, both DELETE and deletecollection): a non-empty
request body is decoded as the options and the query is then not read at all; an empty body takes them from the query
(``gracePeriodSeconds``, ``propagationPolicy``, ``orphanDependents``, ``dryRun``; preconditions exist only in the
body). Both paths end in apimachinery's ``ValidateDeleteOptions`` (``pkg/apis/meta/v1/validation``): a 422 on the
kind ``DeleteOptions.meta.k8s.io``. ``dryRun`` on create, update and patch is validated the same way
(``ValidateCreateOptions``/``ValidateUpdateOptions``/``ValidatePatchOptions``: ``CreateOptions.meta.k8s.io`` ...).
Values are rendered as apiserver 1.32 renders them (``%#v`` of a Go slice: ``[]string{"x"}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fakes.kube.errors import ApiError, Cause, bad_request, invalid

META_GROUP = "meta.k8s.io"
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
#: The body kinds the decoder turns into ``DeleteOptions`` (any group's DeleteOptions is accepted for old clients).
DELETE_OPTIONS_KIND = "DeleteOptions"


@dataclass(frozen=True)
class DeleteOptions:
    """The options of one delete: ``grace_period_seconds`` (``None``: the object's own), ``propagation_policy``
    (``None`` when not sent), ``orphan_dependents`` (the deprecated boolean), ``dry_run``, and the
    ``preconditions`` (uid, resourceVersion) that must match the stored object."""

    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    dry_run: bool = False
    precondition_uid: str | None = None
    precondition_rv: str | None = None

    @property
    def propagation(self) -> str:
        """The effective policy: the one sent, else ``Orphan`` for ``orphanDependents: true``, else Background (the
        default of every group-version the double serves)."""
        if self.propagation_policy:
            return self.propagation_policy
        return "Orphan" if self.orphan_dependents else "Background"


def _go_slice(values: Sequence[Any]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def dry_run_causes(values: Sequence[Any]) -> list[Cause]:
    """``ValidateDryRun``: only ``All`` is a supported value."""
    if all(v == "All" for v in values):
        return []
    return [
        Cause("FieldValueNotSupported", f'Unsupported value: {_go_slice(values)}: supported values: "All"', "dryRun")
    ]


def dry_run(query: Any, options_kind: str) -> bool:
    """Whether a create/update/patch is a dry run (``?dryRun=All``); 422 on ``<options_kind>.meta.k8s.io`` for any
    other value, as ``ValidateCreateOptions`` and friends answer."""
    values = list(query.getall("dryRun", []))
    causes = dry_run_causes(values)
    if causes:
        raise invalid(options_kind, META_GROUP, "", causes)
    return bool(values)


def delete_options(body: Any | None, query: Any) -> DeleteOptions:
    """The options of a DELETE: from ``body`` (the decoded request body) when there is one, else from ``query``.

    Raises :class:`ApiError`: 400 for a body that is not DeleteOptions or a field of the wrong type (the decoder's
    complaint), 422 ``DeleteOptions.meta.k8s.io "" is invalid`` for what ``ValidateDeleteOptions`` refuses."""
    options = _from_body(body) if body is not None else _from_query(query)
    causes: list[Cause] = []
    if options.orphan_dependents is not None and options.propagation_policy is not None:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{options.propagation_policy}": orphanDependents and deletionPropagation cannot be '
                "both set",
                "propagationPolicy",
            )
        )
    if options.propagation_policy is not None and options.propagation_policy not in PROPAGATION_POLICIES:
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{options.propagation_policy}": supported values: "Foreground", "Background", '
                '"Orphan", "nil"',
                "propagationPolicy",
            )
        )
    return _checked(options, causes)


def _checked(options: DeleteOptions, causes: list[Cause]) -> DeleteOptions:
    if causes:
        raise invalid(DELETE_OPTIONS_KIND, META_GROUP, "", causes)
    return options


def _type_error(field: str, value: Any, go_type: str) -> ApiError:
    sent = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    return bad_request(
        f"json: cannot unmarshal {sent.get(type(value), 'value')} into Go struct field "
        f"DeleteOptions.{field} of type {go_type}"
    )


def _from_body(body: Any) -> DeleteOptions:
    if not isinstance(body, Mapping):
        raise bad_request("decoded object cannot be converted to DeleteOptions")
    kind = body.get("kind")
    if kind is not None and kind != DELETE_OPTIONS_KIND:
        raise bad_request("decoded object cannot be converted to DeleteOptions")
    grace = body.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise _type_error("gracePeriodSeconds", grace, "int64")
    policy = body.get("propagationPolicy")
    if policy is not None and not isinstance(policy, str):
        raise _type_error("propagationPolicy", policy, "v1.DeletionPropagation")
    orphan = body.get("orphanDependents")
    if orphan is not None and not isinstance(orphan, bool):
        raise _type_error("orphanDependents", orphan, "bool")
    dry = body.get("dryRun") or []
    if not isinstance(dry, list) or not all(isinstance(v, str) for v in dry):
        raise _type_error("dryRun", dry, "[]string")
    pre = body.get("preconditions") or {}
    if not isinstance(pre, Mapping):
        raise _type_error("preconditions", pre, "v1.Preconditions")
    uid, rv = pre.get("uid"), pre.get("resourceVersion")
    for name, value in (("uid", uid), ("resourceVersion", rv)):
        if value is not None and not isinstance(value, str):
            raise bad_request(
                f"json: cannot unmarshal {type(value).__name__} into Go struct field Preconditions.preconditions."
                f"{name} of type string"
            )
    causes = dry_run_causes(dry)
    options = DeleteOptions(grace, policy, orphan, bool(dry), uid, rv)
    return _checked(options, causes)


def _from_query(query: Any) -> DeleteOptions:
    grace_text = query.get("gracePeriodSeconds")
    grace: int | None = None
    if grace_text is not None:
        try:
            grace = int(grace_text)
        except ValueError:
            raise bad_request(f'strconv.ParseInt: parsing "{grace_text}": invalid syntax') from None
    orphan_text = query.get("orphanDependents")
    orphan: bool | None = None
    if orphan_text is not None:
        if orphan_text.lower() not in ("true", "false", "1", "0", "t", "f"):
            raise bad_request(f'strconv.ParseBool: parsing "{orphan_text}": invalid syntax')
        orphan = orphan_text.lower() in ("true", "1", "t")
    dry = list(query.getall("dryRun", []))
    causes = dry_run_causes(dry)
    options = DeleteOptions(grace, query.get("propagationPolicy") or None, orphan, bool(dry))
    return _checked(options, causes)


__all__ = ["DeleteOptions", "delete_options", "dry_run", "dry_run_causes", "PROPAGATION_POLICIES"]
