"""Specs of the stack twin itself: it comes up as the stack does, and restarting a pod restarts what the real
service would lose (and keeps what it would keep). One twin for the module; everything through kubectl and
port-forwards, as the cluster specs do."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import fakes.stack
from harness import ForwardPool, PortForwardDied, fetch_through_sync, unique_issue_number, wait_for_sync
from harness.webhooks import issues_labeled_payload, send_webhook
from specs.agent_controller import github_seed
from specs.agent_controller.bounce import bounce_pod
from specs.agent_controller.cluster_secrets import read_secret_value
from specs.agent_controller.github_journal import GitHubJournal
from specs.agent_controller.twin_bugs import switch_bugs, switched_bugs

pytestmark = [pytest.mark.twin, pytest.mark.timeout(300)]
GATEWAY = ("svc/agent-controller-integration-gateway", 8090)
ORCHESTRATOR = ("svc/agent-orchestrator-invoke", 8081)
GITHUB = ("svc/fake-github", 80)


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with fakes.stack.serve(str(tmp_path_factory.mktemp("twin") / "kubeconfig"), "stack-twin-spec") as handle:
        yield handle


@pytest.fixture(scope="module")
def pool() -> Iterator[ForwardPool]:
    pool = ForwardPool()
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def kube(twin: Any) -> Any:
    return twin.kube()


def test_the_stack_comes_up_in_the_set_up_order(twin: Any, kube: Any) -> None:
    assert [name for name, _ in twin.up_steps] == [
        "namespace",
        "CRDs",
        "secrets",
        "temporal",
        "fakes",
        "release",
        "catalog",
        "available",
    ]
    pods = kube.kubectl_json("get", "pods")["items"]
    assert all(p["status"]["phase"] == "Running" for p in pods), [p["metadata"]["name"] for p in pods]
    assert {p["metadata"]["labels"].get("app.kubernetes.io/name") for p in pods} >= {
        "integration-gateway",
        "agent-orchestrator",
        "core-controller",
        "agent-orchestrator-redis",
        "nats",
        "fake-github",
        "fake-qdrant",
        "temporal-dev-server",
    }


def test_the_gateway_refuses_an_unsigned_webhook(kube: Any, pool: ForwardPool) -> None:
    answer = fetch_through_sync(
        pool.get(kube, *GATEWAY),
        "POST",
        "/webhooks/github",
        content=b"{}",
        headers={"x-github-event": "issues", "x-hub-signature-256": "sha256=00"},
    )
    assert answer.status_code == 401


def test_an_unlisted_sender_is_dropped_silently(kube: Any, pool: ForwardPool) -> None:
    secret = read_secret_value(kube, "e2e-integration-gateway-secrets", "GITHUB_WEBHOOK_SECRET")
    github_seed.seed_world(
        pool.get(kube, *GITHUB), bot_token=read_secret_value(kube, "e2e-integration-gateway-secrets", "GITHUB_TOKEN")
    )
    before = {r["metadata"]["name"] for r in kube.kubectl_json("get", "agentruns.core.controller-agent.dev")["items"]}
    for sender, kind in (("mallory", "User"), ("e2e-bot", "User"), ("e2e-user", "Bot")):
        issue = unique_issue_number()
        github_seed.open_issue(pool.get(kube, *GITHUB), issue, title="t")
        payload = issues_labeled_payload(
            owner="e2e-org",
            repo="e2e-repo",
            number=issue,
            title="t",
            label="ai-triage",
            sender=sender,
            sender_type=kind,
        )
        assert send_webhook(pool.get(kube, *GATEWAY), "issues", payload, secret=secret).status == 202
    time.sleep(3.0)  # an absence: two gateway poll intervals for anything to show up
    after = {r["metadata"]["name"] for r in kube.kubectl_json("get", "agentruns.core.controller-agent.dev")["items"]}
    assert after == before
    assert GitHubJournal(pool.get(kube, *GITHUB)).calls(method="POST", path_prefix="/repos/") == []


def test_a_bug_switch_turns_on_and_off_while_the_twin_runs(twin: Any, kube: Any, pool: ForwardPool) -> None:
    """The ConfigMap decides at each webhook: with ``bot-events-not-dropped`` on, an unlisted sender's label starts a
    turn (the gateway answers on the issue); switched off again, the same webhook is dropped. One twin, no restart
    (the gateway pod keeps its uid)."""
    secret = read_secret_value(kube, "e2e-integration-gateway-secrets", "GITHUB_WEBHOOK_SECRET")
    github_seed.seed_world(
        pool.get(kube, *GITHUB), bot_token=read_secret_value(kube, "e2e-integration-gateway-secrets", "GITHUB_TOKEN")
    )
    gateway_pods = _pod_uids(kube, "integration-gateway")
    assert switched_bugs(kube) == frozenset(twin.bugs) == frozenset()

    def send_from_mallory() -> str:
        issue = unique_issue_number()
        github_seed.open_issue(pool.get(kube, *GITHUB), issue, title="t")
        payload = issues_labeled_payload(
            owner="e2e-org", repo="e2e-repo", number=issue, title="t", label="ai-triage", sender="mallory"
        )
        assert send_webhook(pool.get(kube, *GATEWAY), "issues", payload, secret=secret).status == 202
        return f"/repos/e2e-org/e2e-repo/issues/{issue}/"

    def posted(prefix: str) -> list[Any]:
        return list(GitHubJournal(pool.get(kube, *GITHUB)).calls(method="POST", path_prefix=prefix))

    switch_bugs(kube, ["bot-events-not-dropped"])
    try:
        assert switched_bugs(kube) == {"bot-events-not-dropped"} == set(twin.bugs)
        on = send_from_mallory()
        wait_for_sync(
            "the gateway's answer to mallory's label, with its sender filter switched off", lambda: posted(on)
        )
    finally:
        switch_bugs(kube, [])
    assert switched_bugs(kube) == frozenset(twin.bugs) == frozenset()
    off = send_from_mallory()
    time.sleep(3.0)  # an absence: two gateway poll intervals for anything to show up
    assert posted(off) == []
    assert _pod_uids(kube, "integration-gateway") == gateway_pods, "switching a bug restarted the gateway"


def _pod_uids(kube: Any, app: str) -> set[str]:
    pods = kube.kubectl_json("get", "pods", "-l", f"app.kubernetes.io/name={app}")["items"]
    return {p["metadata"]["uid"] for p in pods}


def test_an_orchestrator_restart_loses_its_invocation_records(kube: Any, pool: ForwardPool) -> None:
    headers = {"authorization": "Bearer e2e-gateway-token"}
    answer = fetch_through_sync(
        pool.get(kube, *ORCHESTRATOR),
        "POST",
        "/invoke",
        headers=headers,
        json={"session": "spec:restart", "input": "hello"},
    )
    assert answer.status_code == 202
    invocation = answer.json()["id"]
    assert (
        fetch_through_sync(pool.get(kube, *ORCHESTRATOR), "GET", f"/invoke/{invocation}", headers=headers).status_code
        == 200
    )
    bounce_pod(kube, "app.kubernetes.io/name=agent-orchestrator", new_name=True, timeout=60.0, interval=0.5)
    with pytest.raises(PortForwardDied, match="failed to find sandbox"):
        # kubectl stays pinned to the deleted pod until a connection fails, then exits: as on a cluster.
        fetch_through_sync(pool.get(kube, *ORCHESTRATOR), "GET", f"/invoke/{invocation}", headers=headers)
    gone = fetch_through_sync(pool.get(kube, *ORCHESTRATOR), "GET", f"/invoke/{invocation}", headers=headers)
    assert gone.status_code == 404
    assert fetch_through_sync(pool.get(kube, *ORCHESTRATOR), "GET", "/invoke/x").status_code == 401


def _sessions(kube: Any) -> list[str]:
    pod = kube.kubectl_json("get", "pods", "-l", "app.kubernetes.io/name=agent-orchestrator-redis")["items"][0]
    done = kube.kubectl("exec", pod["metadata"]["name"], "--", "redis-cli", "--scan", "--pattern", "sess:*")
    return done.stdout.split()


def test_a_redis_bounce_forgets_every_session(kube: Any) -> None:
    pod = kube.kubectl_json("get", "pods", "-l", "app.kubernetes.io/name=agent-orchestrator-redis")["items"][0]
    kube.kubectl("exec", pod["metadata"]["name"], "--", "redis-cli", "SET", "sess:spec", json.dumps({"run": "x"}))
    assert "sess:spec" in _sessions(kube)
    bounce_pod(kube, "app.kubernetes.io/name=agent-orchestrator-redis", new_name=True, timeout=60.0, interval=0.5)
    assert _sessions(kube) == []


def test_service_lines_are_in_kubectl_logs(kube: Any) -> None:
    pod = kube.kubectl_json("get", "pods", "-l", "app.kubernetes.io/name=core-controller")["items"][0]
    wait_for_sync(
        "the core-controller's start line in its logs",
        lambda: "started" in kube.kubectl("logs", pod["metadata"]["name"]).stdout or None,
        timeout=30.0,
    )


def test_runs_wait_for_a_stopped_core_controller_and_are_launched_when_it_returns(kube: Any) -> None:
    kube.kubectl("scale", "deployment/core-controller", "--replicas=0")
    wait_for_sync(
        "the core-controller's pod to be gone",
        lambda: not kube.kubectl_json("get", "pods", "-l", "app.kubernetes.io/name=core-controller")["items"] or None,
        timeout=60.0,
        interval=0.2,
    )
    run = {
        "apiVersion": "core.controller-agent.dev/v1alpha1",
        "kind": "AgentRun",
        "metadata": {"name": "spec-while-down"},
        "spec": {"agentRef": "stub-agent", "subject": "github:e2e-user", "secretEnv": ["AGENT_ACTOR_LOGIN"]},
    }
    kube.kubectl("apply", "-f", "-", input=json.dumps(run))
    time.sleep(2.0)  # an absence: nothing may act on the run while the controller is down
    assert "phase" not in (
        kube.kubectl_json("get", "agentruns.core.controller-agent.dev", "spec-while-down").get("status") or {}
    )
    assert kube.kubectl("get", "job", "spec-while-down", "--ignore-not-found", "-o", "name").stdout == ""
    kube.kubectl("scale", "deployment/core-controller", "--replicas=1")
    wait_for_sync(
        "the run to be launched after the controller's resync",
        lambda: kube.kubectl("get", "job", "spec-while-down", "--ignore-not-found", "-o", "name").stdout or None,
        timeout=60.0,
        interval=0.5,
    )
    phase = kube.kubectl_json("get", "agentruns.core.controller-agent.dev", "spec-while-down")["status"]["phase"]
    assert phase in ("Running", "Succeeded", "Failed")
    env = kube.kubectl_json("get", "job", "spec-while-down")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env].count("AGENT_ACTOR_LOGIN") == 1


def _manifest(kind: str, name: str) -> dict[str, Any]:
    """The object ``kind``/``name`` as the twin's release manifest holds it (one without profile templates)."""
    text = (Path(fakes.stack.__file__).parent / "manifests" / "40-release.yaml").read_text()
    for document in text.split("\n---\n"):
        if f"kind: {kind}\n" in document and f"  name: {name}\n" in document:
            return dict(yaml.safe_load(document))
    raise KeyError(f"no {kind} {name} in the twin's release manifest")


def test_the_orchestrator_calls_the_api_as_its_service_account_under_its_role(kube: Any, pool: ForwardPool) -> None:
    role = _manifest("Role", "agent-orchestrator")
    drifted = copy.deepcopy(role)
    drifted["rules"][0]["resources"].remove("agents")  # RBAC drift: the catalog's Agents no longer readable
    headers = {"authorization": "Bearer e2e-gateway-token"}
    kube.kubectl("apply", "-f", "-", input=json.dumps(drifted))
    try:
        answer = fetch_through_sync(
            pool.get(kube, *ORCHESTRATOR),
            "POST",
            "/invoke",
            headers=headers,
            json={"session": "spec:rbac", "input": "hi"},
        )
        assert answer.status_code == 202
        settled = wait_for_sync(
            "the invocation under the drifted Role to settle",
            lambda: (
                body
                if (
                    body := fetch_through_sync(
                        pool.get(kube, *ORCHESTRATOR), "GET", f"/invoke/{answer.json()['id']}", headers=headers
                    ).json()
                )["status"]
                != "pending"
                else None
            ),
            timeout=60.0,
            interval=0.2,
        )
    finally:
        kube.kubectl("apply", "-f", "-", input=json.dumps(role))
    assert settled["status"] == "failed"
    assert (
        'User "system:serviceaccount:controller-agent:agent-orchestrator" cannot get resource "agents" in API group '
        '"core.controller-agent.dev" in the namespace "controller-agent"'
    ) in settled["error"]
