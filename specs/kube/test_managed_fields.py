"""Field sets and ``managedFields`` entries, checked against structured-merge-diff directly (no server): the
``FieldsV1`` format round-trips (``fieldpath/serialize.go``), paths print as ``fieldpath/element.go`` prints them,
and Update operations move ownership as ``merge/update.go`` and apimachinery's ``managedfieldsupdater.go`` and
``fieldmanager.go`` say (an update takes what it changes; removed fields leave everyone; ``managedFields: [{}]``
resets them; a status write owns only ``status``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes.kube import defaults, managed
from fakes.kube.errors import ApiError
from fakes.kube.managed import Schema, Write

DEPLOYMENTS = Schema("apps/deployments")


def _write(subresource: str = "", api_version: str = "apps/v1") -> Write:
    return Write(DEPLOYMENTS, api_version, subresource, "2026-01-01T00:00:00Z", status_subresource=True)


def _deployment(image: str = "nginx:1", env: list[dict[str, str]] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": image, "ports": [{"containerPort": 80}]}
    if env is not None:
        container["env"] = env
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "u", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
    }


def _stored(config: dict[str, Any]) -> dict[str, Any]:
    """What the store keeps after a create by server-side apply: the object with the kind's defaults."""
    obj = managed.apply(None, config, "ci", _write(), force=False)
    defaults.deployment(obj)
    return obj


_ELEMENTS = st.one_of(
    st.from_regex(r"f:[a-zA-Z]{1,8}", fullmatch=True),
    st.builds(lambda n: 'k:{"name":"' + n + '"}', st.from_regex(r"[a-z]{1,5}", fullmatch=True)),
    st.builds(lambda v: f'v:"{v}"', st.from_regex(r"[a-z]{1,5}", fullmatch=True)),
)


# No per-example deadline or too-slow check: on a loaded 2-core runner an example took 256 ms against hypothesis's
# default 200 ms; what this spec checks is the round trip, not its speed.
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(st.lists(_ELEMENTS, min_size=1, max_size=4).map(tuple), max_size=12))
def test_fields_v1_round_trips(fields: set[tuple[str, ...]]) -> None:
    encoded = managed.encode_fields(fields)
    decoded = managed.decode([{"manager": "m", "operation": "Apply", "fieldsV1": encoded}])
    assert decoded is not None
    assert decoded[managed.Manager("m", "Apply")].fields == fields


def test_an_owned_node_with_children_is_marked_with_a_dot_and_fields_come_before_keys() -> None:
    fields = {("f:spec", "f:x"), ("f:spec", 'k:{"name":"a"}'), ("f:spec", 'k:{"name":"a"}', "f:name")}
    encoded = managed.encode_fields(fields)
    assert list(encoded["f:spec"]) == ["f:x", 'k:{"name":"a"}']
    assert encoded["f:spec"]['k:{"name":"a"}'] == {".": {}, "f:name": {}}


def test_paths_print_as_structured_merge_diff_prints_them() -> None:
    path = ("f:spec", "f:containers", 'k:{"name":"app"}', "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}')
    assert managed.path_string(path) == '.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"]'
    assert managed.path_string(("f:metadata", "f:finalizers", 'v:"x"')) == '.metadata.finalizers[="x"]'


def test_container_ports_are_keyed_by_port_and_defaulted_protocol() -> None:
    fields = managed.field_set(_deployment(), DEPLOYMENTS)
    container = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"app"}')
    assert (*container, "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}', "f:containerPort") in fields
    assert not any(p[:2] == ("f:metadata", "f:name") for p in fields)  # stripped: nobody owns the name


def test_an_update_takes_what_it_changes_from_the_applier() -> None:
    applied = _stored(_deployment(env=[{"name": "A", "value": "1"}]))
    edited = _deployment(image="nginx:2")  # and env removed
    edited["metadata"]["managedFields"] = applied["metadata"]["managedFields"]
    managed.record_update(applied, edited, "kubectl-edit", _write())
    entries = {e["manager"]: e for e in edited["metadata"]["managedFields"]}
    assert entries["kubectl-edit"]["operation"] == "Update"
    assert entries["kubectl-edit"]["apiVersion"] == "apps/v1"
    container = entries["kubectl-edit"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert container == {'k:{"name":"app"}': {"f:image": {}}}
    ci = entries["ci"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"app"}']
    assert "f:image" not in ci
    assert "f:env" not in ci  # removed fields leave every manager


def test_managed_fields_reset_with_one_empty_entry() -> None:
    applied = _stored(_deployment())
    edited = _deployment()
    edited["metadata"]["managedFields"] = [{}]
    managed.record_update(applied, edited, "someone", _write())
    assert "managedFields" not in edited["metadata"]


def test_a_status_write_owns_only_status() -> None:
    applied = _stored(_deployment())
    reported = _deployment(image="ignored:9")
    reported["status"] = {"replicas": 1}
    managed.record_update(applied, reported, "controller", _write("status"))
    entries = {e["manager"]: e for e in reported["metadata"]["managedFields"]}
    assert entries["controller"]["subresource"] == "status"
    assert entries["controller"]["fieldsV1"] == {"f:status": {"f:replicas": {}}}


def test_status_in_an_apply_to_the_main_resource_is_not_owned() -> None:
    config = _deployment()
    config["status"] = {"replicas": 5}
    applied = managed.apply(None, config, "ci", _write(), force=False)
    [entry] = applied["metadata"]["managedFields"]
    assert "f:status" not in entry["fieldsV1"]


def test_an_applied_list_repeating_a_key_is_refused_as_the_typed_conversion_refuses_it() -> None:
    config = _deployment()
    containers = config["spec"]["template"]["spec"]["containers"]
    containers.append(dict(containers[0]))
    with pytest.raises(ApiError) as caught:
        managed.apply(None, config, "ci", _write(), force=False)
    assert caught.value.code == 500
    assert caught.value.message.endswith('.spec.template.spec.containers: duplicate entries for key [name="app"]')
