"""Cleanup that keeps evidence, through the real kubectl on both targets (specs/targets.py: the Kubernetes API double
and the real control plane): created objects carry the run's label, go newest first when their scope passes, and stay
(with the commands to inspect and delete them) after a failure in the module or with ``--keep-resources``."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness import Kube, Ledger, wait_for_sync
from harness.cleanup import label_manifest
from harness.timestamps import DEFAULT_GRANULARITY, DEFAULT_SKEW
from specs.agent_controller.cleanup import cleanup_agent_runs_since, sweep_agent_runs_since
from specs.targets import Target, skip_on_control_plane

from .cleanup_support import configmap, inner, kd, kube, names, printed_inspections_find

__all__ = ["kd", "kube"]  # fixtures, used by name

RUN = "20261130-140000-abcdef"
CRD_NAME = "agentruns.core.controller-agent.dev"
LABEL = f"stack-harness.dev/run={RUN}"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "agentruns.core.controller-agent.dev"},
    "spec": {
        "group": "core.controller-agent.dev",
        "scope": "Namespaced",
        "names": {"plural": "agentruns", "singular": "agentrun", "kind": "AgentRun", "listKind": "AgentRunList"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


def test_applied_objects_carry_the_run_label_and_go_newest_first(target: Target, kube: Kube) -> None:
    ledger = Ledger(kube, RUN, scope="spec", issue=1_000_123)
    for name in ("first", "second", "third"):
        assert ledger.apply(configmap(name)) == [f"configmap/{name}"]
    listed = kube.kubectl("get", "configmaps", "-l", LABEL, "-o", "name").stdout.split()
    assert listed == ["configmap/first", "configmap/second", "configmap/third"]
    issue = kube.kubectl_json("get", "configmap", "first")["metadata"]["labels"]["stack-harness.dev/issue"]
    assert issue == "1000123"
    mark = len(target.double.requests()) if target.on_double else 0
    result = ledger.delete()
    assert result.failed == []
    assert result.deleted == ["configmap/third", "configmap/second", "configmap/first"]
    if target.on_double:  # the order the API server saw: only the double keeps a request log to read
        deletes = [e.path.rsplit("/", 1)[-1] for e in target.double.requests()[mark:] if e.method == "DELETE"]
        assert deletes == ["third", "second", "first"]
    assert not {"first", "second", "third"} & set(names(kube, "configmaps"))


def test_deleting_what_is_already_gone_is_not_an_error(kube: Kube) -> None:
    ledger = Ledger(kube, RUN, scope="spec")
    ledger.apply(configmap("gone-already"))
    kube.kubectl("delete", "configmap", "gone-already")
    assert ledger.delete().failed == []
    assert ledger.delete().deleted == []  # idempotent


def test_workloads_label_their_pod_template_too() -> None:
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}}},
    }
    labelled = label_manifest(deployment, {"stack-harness.dev/run": RUN})
    assert labelled["spec"]["template"]["metadata"]["labels"] == {"app": "web", "stack-harness.dev/run": RUN}
    assert labelled["spec"]["selector"] == {"matchLabels": {"app": "web"}}


def agent_run(name: str) -> str:
    return json.dumps(
        {
            "apiVersion": "core.controller-agent.dev/v1alpha1",
            "kind": "AgentRun",
            "metadata": {"name": name},
            "spec": {},
        }
    )


def create_runs(kube: Kube, *runs: str) -> None:
    for name in runs:
        kube.kubectl("create", "-f", "-", input=agent_run(name))
        kube.kubectl("create", "secret", "generic", f"{name}-identity")


@contextlib.contextmanager
def earlier(target: Target, kube: Kube) -> Iterator[None]:
    """What is created inside was created before the window of a ``since`` taken after it: on the double, ten
    minutes ago by its clock; on the control plane, the spec waits until the server's clock has passed the window's
    widening (``DEFAULT_GRANULARITY`` + ``DEFAULT_SKEW``) and one more second of timestamp granularity."""
    if target.on_double:
        target.double.clock.set_offset(-600.0)
        try:
            yield
        finally:
            target.double.clock.set_offset(0.0)
        return
    yield
    after = kube.server_time() + timedelta(seconds=2 * DEFAULT_GRANULARITY + DEFAULT_SKEW)
    window = 2 * (2 * DEFAULT_GRANULARITY + DEFAULT_SKEW)
    wait_for_sync("the earlier runs to leave the window", lambda: kube.server_time() >= after or None, timeout=window)


@contextlib.contextmanager
def agent_runs_served(kube: Kube) -> Iterator[None]:
    """The AgentRun CRD, established, for the block; deleted after it (a CRD is cluster-wide: on the control plane
    the next spec would find it served)."""
    kube.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    try:
        kube.kubectl("wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=30s")
        yield
    finally:
        kube.kubectl("delete", "crd", CRD_NAME, "--ignore-not-found", timeout=60)


def test_agent_runs_since_and_their_identity_secrets_are_removed(target: Target, kube: Kube) -> None:
    with agent_runs_served(kube):
        _agent_runs_since_are_removed(target, kube)


def _agent_runs_since_are_removed(target: Target, kube: Kube) -> None:
    with earlier(target, kube):  # a previous turn's runs
        create_runs(kube, "old-run-1", "old-run-2")
    since = kube.server_time()
    create_runs(kube, "new-run-1", "new-run-2")
    kube.kubectl("create", "secret", "generic", "unrelated")
    result = cleanup_agent_runs_since(since, kube=kube, timeout=30)
    assert result.failed == []
    assert sorted(result.deleted) == sorted(
        [
            "agentrun.core.controller-agent.dev/new-run-1",
            "agentrun.core.controller-agent.dev/new-run-2",
            "secret/new-run-1-identity",
            "secret/new-run-2-identity",
        ]
    )
    assert names(kube, "agentruns.core.controller-agent.dev") == ["old-run-1", "old-run-2"]
    assert names(kube, "secrets") == ["old-run-1-identity", "old-run-2-identity", "unrelated"]


def test_a_naive_since_is_refused(kube: Kube) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        cleanup_agent_runs_since(datetime(2026, 1, 1), kube=kube)


def test_an_unreachable_cluster_is_reported_not_raised(target: Target, kube: Kube) -> None:
    skip_on_control_plane(target.name, "no API server fault answers a DELETE with 503 (the double's fault injection)")
    target.double.fault("status", "/api/v1/namespaces/*/configmaps/*", method="DELETE", status=503)
    ledger = Ledger(kube, RUN, scope="spec")
    ledger.apply(configmap("stuck"))
    result = ledger.delete(timeout=20)
    assert result.deleted == []
    assert len(result.failed) == 1
    assert "configmap/stuck" in result.failed[0][0]


# --- the plugin decides: delete after a pass, keep after a failure ---------------------------------------------------


def test_what_a_passing_spec_created_is_deleted_after_it(pytester: pytest.Pytester, kube: Kube, tmp_path: Any) -> None:
    inner(
        pytester,
        kube,
        """
def test_creates(cleanup):
    cleanup.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "scratch"}})
    cleanup.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "scratch-2"}})

def test_sees_it_gone(kube):
    assert "scratch" not in kube.kubectl("get", "configmaps", "-o", "name").stdout
""",
    )
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"))
    result.assert_outcomes(passed=2)
    assert "cluster resources kept" not in result.stdout.str()
    assert "scratch" not in names(kube, "configmaps")


MODULE_WITH_A_FAILURE = """
import pytest

@pytest.fixture(scope="module")
def shared(module_cleanup):
    module_cleanup.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared-config"}})
    return module_cleanup

def test_passes(shared, cleanup):
    cleanup.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-the-passing-spec"}})

def test_fails(shared, cleanup):
    cleanup.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "evidence"}})
    assert False, "the turn never produced a reply"
"""


def test_after_a_failure_in_the_module_nothing_more_is_deleted(
    pytester: pytest.Pytester, kube: Kube, tmp_path: Any
) -> None:
    inner(pytester, kube, MODULE_WITH_A_FAILURE)
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"))
    result.assert_outcomes(passed=1, failed=1)
    assert "from-the-passing-spec" not in names(kube, "configmaps")  # deleted before anything failed
    assert "shared-config" in names(kube, "configmaps")
    assert "evidence" in names(kube, "secrets")
    run = kube.kubectl_json("get", "secret", "evidence")["metadata"]["labels"]["stack-harness.dev/run"]
    at = f"kubectl --kubeconfig {kube.kubeconfig} --context {kube.context} -n {kube.namespace}"
    result.stdout.fnmatch_lines(
        [
            f"*cluster resources kept (2 scope(s), run {run})*",
            "test_inner.py::test_fails: kept secret/evidence (a spec in test_inner.py failed)",
            f"    {at} get secret -l stack-harness.dev/run={run}",
            f"    {at} delete secret/evidence --wait=false --ignore-not-found",
            "test_inner.py: kept configmap/shared-config (a spec in test_inner.py failed)",
            f"    {at} get configmap -l stack-harness.dev/run={run}",
        ]
    )
    assert printed_inspections_find(kube, result.stdout.lines) == ["configmap/shared-config", "secret/evidence"]


def test_a_failure_in_teardown_keeps_the_modules_resources(
    pytester: pytest.Pytester, kube: Kube, tmp_path: Any
) -> None:
    inner(
        pytester,
        kube,
        """
import pytest

@pytest.fixture
def restore_pacing():
    yield
    raise RuntimeError("pacing not restored")

def test_creates(module_cleanup, restore_pacing):
    module_cleanup.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept-after-teardown"}})
""",
    )
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"))
    result.assert_outcomes(passed=1, errors=1)
    assert "kept-after-teardown" in names(kube, "configmaps")
    result.stdout.fnmatch_lines(["test_inner.py: kept configmap/kept-after-teardown (a spec in test_inner.py failed)"])


def test_keep_resources_keeps_everything_and_says_so(pytester: pytest.Pytester, kube: Kube, tmp_path: Any) -> None:
    inner(
        pytester,
        kube,
        """
def test_creates(cleanup):
    cleanup.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept-on-request"}})
""",
    )
    result = pytester.runpytest("--artifacts", str(tmp_path / "art"), "--keep-resources")
    result.assert_outcomes(passed=1)
    assert "kept-on-request" in names(kube, "configmaps")
    result.stdout.fnmatch_lines(["test_inner.py::test_creates: kept configmap/kept-on-request (--keep-resources)"])


def test_the_run_id_is_a_valid_label_value(pytester: pytest.Pytester, kube: Kube, tmp_path: Any) -> None:
    inner(
        pytester,
        kube,
        """
import re

def test_id(harness_run_id):
    assert re.fullmatch(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{6}", harness_run_id)
""",
    )
    pytester.runpytest("--artifacts", str(tmp_path / "art")).assert_outcomes(passed=1)


def test_a_sweeps_inspect_command_is_printed_only_where_the_server_serves_its_type(kube: Kube) -> None:
    """Discovery decides: without the custom resource's CRD the sweep's inspect command is left out (kubectl would
    fail it: "the server doesn't have a resource type"), and every printed command runs as printed."""
    since = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
    ledger = Ledger(kube, RUN, scope="spec")
    ledger.track("configmap/kept")
    sweep_agent_runs_since(ledger, since)
    without = ledger.keep_commands()
    assert "get configmap -l" in without[0]
    assert not any("agentruns" in command for command in without)
    inspect = without[0].split(" ", 1)[1].split()
    assert kube.kubectl(*inspect[inspect.index("get") :], check=False).returncode == 0
    with agent_runs_served(kube):
        with_crd = Ledger(kube, RUN, scope="spec")
        sweep_agent_runs_since(with_crd, since)
        commands = with_crd.keep_commands()
    assert any(command.endswith("(and their <run>-identity Secrets)") for command in commands)
