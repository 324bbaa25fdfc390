"""Specs of specs.agent_controller.rbac: kubebuilder markers and (Cluster)Roles as flat group/resource:verb triples."""

from __future__ import annotations

from pathlib import Path

import pytest

from specs.agent_controller.rbac import markers_in, missing, parse_marker, role_triples


def test_a_marker_becomes_its_triples() -> None:
    line = "// +kubebuilder:rbac:groups=core.controller-agent.dev,resources=agentruns;agentruns/status,verbs=get;patch"
    assert parse_marker(line) == {
        ("core.controller-agent.dev", r, v) for r in ("agentruns", "agentruns/status") for v in ("get", "patch")
    }


def test_the_core_group_is_the_empty_string() -> None:
    assert parse_marker('//+kubebuilder:rbac:groups="",resources=secrets,verbs=create') == {("", "secrets", "create")}
    assert parse_marker("// +kubebuilder:rbac:groups=core,resources=pods,verbs=list") == {("", "pods", "list")}


def test_other_lines_and_url_markers_grant_nothing() -> None:
    assert parse_marker("// an ordinary comment") == set()
    assert parse_marker("// +kubebuilder:rbac:urls=/metrics,verbs=get") == set()


def test_a_marker_without_verbs_is_an_error() -> None:
    with pytest.raises(ValueError, match="without resources or verbs"):
        parse_marker("// +kubebuilder:rbac:groups=batch,resources=jobs")


def test_markers_are_collected_from_the_controller_sources(tmp_path: Path) -> None:
    controller = tmp_path / "controllers" / "core-controller" / "internal"
    controller.mkdir(parents=True)
    marker = "// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create;delete"
    (controller / "agentrun.go").write_text(f"package x\n{marker}\n")
    (tmp_path / "other.go").write_text("// +kubebuilder:rbac:groups=x,resources=y,verbs=z\n")
    assert markers_in(tmp_path) == {("batch", "jobs", "create"), ("batch", "jobs", "delete")}


def test_missing_names_what_the_role_lacks_and_honours_wildcards() -> None:
    role = {
        "rules": [
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["*"], "verbs": ["get"]},
        ]
    }
    needed = {("batch", "jobs", "create"), ("batch", "jobs", "delete"), ("", "secrets", "get")}
    assert missing(needed, role_triples(role)) == ["batch/jobs:delete"]
