"""Cluster specs: the stack is up as the set-up leaves it, and its clocks agree well enough for time windows.

Each check names the failure mode it catches (README §3 and §7), so a red spec here points at the set-up step to
re-run rather than reading as a product bug later.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import pytest

from harness import ForwardPool, Kube, KubectlError, fetch_through_sync, wait_for_sync
from harness.timestamps import DEFAULT_SKEW
from specs.agent_controller.agentruns import agent_runs_since
from specs.agent_controller.bounce import is_ready, matching_pods
from specs.agent_controller.timing import Profile
from specs.cluster.pacing import reply_hold_ms, wait_interval
from specs.cluster.stack import AVAILABLE, CONNECT, PROBE, timeout_for

pytestmark = pytest.mark.cluster

GROUP = "core.controller-agent.dev"
CRD_KINDS = [
    "agentruns",
    "agents",
    "tools",
    "skills",
    "integrationroutes",
    "corpora",
    "connections",
    "knowledgebases",
    "mcpservers",
    "mcptools",
]
DEPLOYMENTS = [
    "agent-orchestrator",
    "agent-controller-integration-gateway",
    "core-controller",
    "fake-github",
    "temporal-dev-server",
]
CATALOG_KINDS = [f"{kind}.{GROUP}" for kind in ("tools", "skills", "agents", "integrationroutes")]
SELECTORS = {
    "NATS server": "app.kubernetes.io/component=nats",
    "Redis": "app.kubernetes.io/name=agent-orchestrator-redis",
}
COLLECTIONS = {"tools", "skills", "agents", "caller_tools"}


def test_agentrun_crd_is_served(kube: Kube) -> None:
    # Install-only Helm CRDs left older releases without newer kinds (a bare "404 page not found", failure mode 35).
    crd = kube.kubectl_json("get", "crd", f"agentruns.{GROUP}")
    assert "v1alpha1" in [v["name"] for v in crd["spec"]["versions"] if v.get("served")]


def test_every_stack_kind_is_served(kube: Kube) -> None:
    served = set(kube.kubectl("api-resources", f"--api-group={GROUP}", "-o", "name").stdout.split())
    absent = [kind for kind in CRD_KINDS if f"{kind}.{GROUP}" not in served]
    assert not absent, f"kinds not served by the API server: {', '.join(absent)} (apply the CRDs server-side)"


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
@pytest.mark.timeout(timeout_for(AVAILABLE))
def test_deployment_is_available(kube: Kube, profile: Profile, deployment: str) -> None:
    def available() -> bool | None:
        conditions = kube.kubectl_json("get", "deployment", deployment).get("status", {}).get("conditions", [])
        return True if any(c["type"] == "Available" and c["status"] == "True" for c in conditions) else None

    assert wait_for_sync(
        f"deployment/{deployment} to be Available",
        available,
        timeout=AVAILABLE,
        interval=wait_interval(profile),
        probe_timeout=PROBE,
    )


@pytest.mark.parametrize("kind", CATALOG_KINDS)
def test_catalog_is_not_empty(kube: Kube, kind: str) -> None:
    # Zero Tool/Skill/Agent CRs make every turn time out silently (the set-up's catalog check).
    try:
        items = kube.kubectl_json("get", kind).get("items", [])
    except KubectlError as exc:
        pytest.fail(f"cannot list {kind}: {exc}", pytrace=False)
    assert items, f"no {kind} in namespace {kube.namespace}: is the community-components release deployed?"


@pytest.mark.parametrize("what", sorted(SELECTORS))
def test_disruption_selectors_match_exactly_one_ready_pod(kube: Kube, what: str) -> None:
    # Wrong selectors match nothing (exit 0) or also nats-box, so a bounce would test nothing (failure mode 20).
    pods = matching_pods(kube, SELECTORS[what])
    names = [p["metadata"]["name"] for p in pods]
    assert len(pods) == 1, f"{SELECTORS[what]} matches {names} ({what}): a bounce needs exactly one pod"
    assert is_ready(pods[0]), f"the {what} pod {names[0]} is not Ready"


def test_stub_agent_keeps_its_reply_hold(kube: Kube, profile: Profile) -> None:
    # Pacing that replaced spec.env wholesale dropped the reply hold and never put it back (failure mode 44): the
    # hold must still be the one the session's profile read (or, before that is read from the cluster, committed).
    env = (kube.kubectl_json("get", f"agents.{GROUP}", "stub-agent").get("spec") or {}).get("env") or []
    holds = [e.get("value") for e in env if e.get("name") == "AGENT_REPLY_ACK_TIMEOUT_MS"]
    expected = [reply_hold_ms(profile)]
    assert holds == expected, (
        f"stub-agent's AGENT_REPLY_ACK_TIMEOUT_MS is {holds or 'missing'}, not {expected} "
        f"(the reply hold, from {profile.source('reply_hold')})"
    )
    leftovers = [e["name"] for e in env if str(e.get("name", "")).startswith("STUB_")]
    assert not leftovers, f"stub-agent still carries pacing from an earlier spec: {leftovers} (failure mode 26)"


def test_qdrant_collections_exist(kube: Kube, forwards: ForwardPool) -> None:
    # Qdrant was once silently never deployed; the orchestrator sets its collections up when it starts.
    answer = fetch_through_sync(forwards.get(kube, "svc/agent-controller-qdrant", 6333), "GET", "/collections")
    assert answer.status_code == 200, f"GET /collections answered {answer.status_code}: {answer.text[:200]}"
    names = {c["name"] for c in answer.json()["result"]["collections"]}
    assert names >= COLLECTIONS, f"Qdrant lacks the collections {sorted(COLLECTIONS - names)}"


def test_temporal_grpc_port_accepts_tcp(kube: Kube, forwards: ForwardPool) -> None:
    # gRPC never answers an HTTP probe: readiness is a TCP connect through the forward (failure mode 12).
    forward = forwards.get(kube, "svc/temporal-dev-server", 7233)
    with socket.create_connection(("127.0.0.1", forward.local_port), timeout=CONNECT):
        pass


def test_clock_skew_fits_the_window_allowance(kube: Kube) -> None:
    # Host/minikube drift past the allowance hides runs from agent_runs_since (failure mode 4).
    skew = kube.clock_skew()
    assert abs(skew) < DEFAULT_SKEW, (
        f"host clock is {skew:+.1f}s off the API server's, beyond the {DEFAULT_SKEW:.0f}s skew allowance; "
        "anchor `since` on the server clock (the `since` fixture does) or resync the VM "
        "(`minikube ssh -- sudo date -s @$(date +%s)`)"
    )


def test_agent_runs_listing_is_readable(kube: Kube) -> None:
    # Every run must carry a readable creationTimestamp and a known phase; one that does not breaks every window.
    runs = agent_runs_since(datetime(1970, 1, 1, 0, 0, 10, tzinfo=UTC), kube=kube)  # all of them
    assert all(run.created.tzinfo is not None for run in runs)
    unknown = [
        (run.name, run.phase) for run in runs if run.phase not in (None, "Pending", "Running", "Succeeded", "Failed")
    ]
    assert not unknown, f"AgentRuns with a phase the specs do not know: {unknown}"
