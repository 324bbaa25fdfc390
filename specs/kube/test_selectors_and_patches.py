"""Label/field selectors and the three patch types, checked on their own (the kubectl specs exercise them end to
end): the operator semantics of ``pkg/labels``, and strategic merge as ``pkg/util/strategicpatch`` applies it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes.kube import patch
from fakes.kube.errors import ApiError
from fakes.kube.selectors import from_label_selector, parse_field_selector, parse_label_selector

LABELS = {"app": "api", "tier": "web", "version": "3"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("app=api", True),
        ("app==api", True),
        ("app=web", False),
        ("app!=web", True),
        ("missing!=x", True),
        ("tier in (web,db)", True),
        ("tier in (db)", False),
        ("tier notin (db)", True),
        ("missing notin (x)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("version>2", True),
        ("version<3", False),
        ("app=api,tier=db", False),
        ("app = api , tier in ( web )", True),
        ("", True),
    ],
)
def test_label_operators(selector: str, matches: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is matches


@pytest.mark.parametrize("bad", ["app in web", "app=", "=x", "app in ()", "a b", "app=a,", "tier>x", "a=b c"])
def test_malformed_label_selectors_are_400(bad: str) -> None:
    if bad == "app=":  # an empty value is legal: app has the empty value
        assert not parse_label_selector(bad).matches(LABELS)
        return
    with pytest.raises(ApiError) as caught:
        parse_label_selector(bad)
    assert caught.value.code == 400
    assert "unable to parse requirement" in caught.value.message


def test_label_selector_objects() -> None:
    selector = {
        "matchLabels": {"app": "api"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["web"]},
            {"key": "gone", "operator": "DoesNotExist"},
        ],
    }
    assert from_label_selector(selector).matches(LABELS)
    assert not from_label_selector({"matchLabels": {"app": "db"}}).matches(LABELS)


def test_field_selectors_known_fields_and_refusals() -> None:
    event = {
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u1"},
    }
    fields = parse_field_selector("involvedObject.name=p,involvedObject.uid=u1,involvedObject.kind!=Node", "/events")
    assert fields.matches(event, "/events")
    assert not parse_field_selector("involvedObject.name=q", "/events").matches(event, "/events")
    pod = {"metadata": {"name": "p"}, "status": {"phase": "Running"}}
    assert parse_field_selector("status.phase==Running", "/pods").matches(pod, "/pods")
    with pytest.raises(ApiError) as builtin:
        parse_field_selector("spec.foo=x", "/pods")
    assert builtin.value.message == "field label not supported: spec.foo"
    with pytest.raises(ApiError) as custom:
        parse_field_selector("spec.agentRef=x", "g/agentruns", custom=True)
    assert '"spec.agentRef" is not a known field selector' in custom.value.message


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_selector_text_parses_or_is_a_400(text: str) -> None:
    for parse in (lambda: parse_label_selector(text), lambda: parse_field_selector(text, "/pods")):
        code = 400
        try:
            parse()
        except ApiError as exc:
            code = exc.code
        assert code == 400


DEPLOYMENT: dict[str, Any] = {
    "metadata": {"name": "api", "finalizers": ["a"]},
    "spec": {
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "api",
                        "image": "api:1",
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "ports": [{"containerPort": 8080}],
                    },
                    {"name": "sidecar", "image": "side:1"},
                ],
                "volumes": [{"name": "data", "emptyDir": {}}],
            }
        },
    },
}


def _smp(body: dict) -> dict:
    return patch.apply_patch(patch.STRATEGIC, DEPLOYMENT, body, resource_key="apps/deployments", custom=False)


def test_strategic_merge_merges_lists_by_their_merge_keys() -> None:
    out = _smp(
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "api",
                                "image": "api:2",
                                "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                            }
                        ]
                    }
                }
            }
        }
    )
    api, sidecar = out["spec"]["template"]["spec"]["containers"]
    assert api["image"] == "api:2"
    assert api["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]
    assert api["ports"] == [{"containerPort": 8080}]
    assert sidecar == {"name": "sidecar", "image": "side:1"}
    assert DEPLOYMENT["spec"]["template"]["spec"]["containers"][0]["image"] == "api:1"  # input untouched


def test_strategic_merge_directives() -> None:
    out = _smp(
        {
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
            "spec": {
                "template": {
                    "spec": {
                        "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "api"}],
                        "containers": [{"name": "api", "env": [{"name": "A", "$patch": "delete"}]}],
                        "volumes": [{"$patch": "replace"}, {"name": "cache", "emptyDir": {}}],
                    }
                },
                "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            },
        }
    )
    containers = out["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["sidecar", "api"]
    assert containers[1]["env"] == [{"name": "B", "value": "2"}]
    assert out["spec"]["template"]["spec"]["volumes"] == [{"name": "cache", "emptyDir": {}}]
    assert out["spec"]["strategy"] == {"type": "Recreate"}
    assert out["metadata"]["finalizers"] == []
    replaced = _smp({"spec": {"template": {"$patch": "replace", "spec": {"containers": []}}}})
    assert replaced["spec"]["template"] == {"spec": {"containers": []}}


def test_strategic_merge_on_a_custom_resource_is_415() -> None:
    with pytest.raises(ApiError) as caught:
        patch.apply_patch(patch.STRATEGIC, {"spec": {}}, {"spec": {"a": 1}}, resource_key="g/things", custom=True)
    assert caught.value.code == 415
    assert caught.value.reason == "UnsupportedMediaType"


def test_merge_patch_replaces_lists_and_null_deletes() -> None:
    out = patch.apply_patch(
        patch.MERGE_PATCH,
        DEPLOYMENT,
        {"metadata": {"finalizers": None}, "spec": {"template": {"spec": {"volumes": []}}}},
        resource_key="apps/deployments",
        custom=False,
    )
    assert "finalizers" not in out["metadata"]
    assert out["spec"]["template"]["spec"]["volumes"] == []


def test_json_patch_operations_and_failures() -> None:
    ops = [
        {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "api:9"},
        {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
        {"op": "remove", "path": "/metadata/finalizers/0"},
        {"op": "test", "path": "/metadata/name", "value": "api"},
        {"op": "copy", "from": "/metadata/name", "path": "/metadata/labels/name"},
    ]
    out = patch.apply_patch(patch.JSON_PATCH, DEPLOYMENT, ops, resource_key="apps/deployments", custom=False)
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "api:9"
    assert out["metadata"]["labels"] == {"a": "b", "name": "api"}
    assert out["metadata"]["finalizers"] == []
    for bad in (
        [{"op": "test", "path": "/metadata/name", "value": "x"}],
        [{"op": "remove", "path": "/nope"}],
        [{"op": "frob", "path": "/a"}],
        {"op": "add"},
        [{"op": "add", "path": "no-slash", "value": 1}],
    ):
        with pytest.raises(ApiError) as caught:
            patch.apply_patch(patch.JSON_PATCH, DEPLOYMENT, bad, resource_key="apps/deployments", custom=False)
        assert caught.value.code in (400, 422)
