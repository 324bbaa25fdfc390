"""Cluster specs: review routes hand their agent a read-only mode; triage routes do not.

Ported from upstream's bridged-agent-review-readonly spec. The only per-route signal that reaches a review agent is
its IntegrationRoute's ``spec.promptTemplate``: the review routes for labelled pull requests and issues
(``github-pr-labeled-review``, ``github-issue-labeled-review``) must start the agent in
``SWE-ENFORCED-MODE: review-only``, and no triage route may carry that sentinel (a triage agent told it may only
review would do nothing; a review agent not told would write). The routes are read from the API as the gateway
reads them at every delivery.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness import Kube

pytestmark = pytest.mark.cluster

INTEGRATION_ROUTES = "integrationroutes.core.controller-agent.dev"
SENTINEL = "SWE-ENFORCED-MODE: review-only"
REVIEW_ROUTES = ("github-pr-labeled-review", "github-issue-labeled-review")


def routes(kube: Kube) -> dict[str, dict[str, Any]]:
    """Every IntegrationRoute in the stack's namespace, by name."""
    items = kube.kubectl_json("get", INTEGRATION_ROUTES).get("items") or []
    return {str(item["metadata"]["name"]): item for item in items}


def prompt(route: dict[str, Any]) -> str:
    return str((route.get("spec") or {}).get("promptTemplate") or "")


@pytest.mark.parametrize("name", REVIEW_ROUTES)
def test_a_review_route_starts_its_agent_read_only(kube: Kube, name: str) -> None:
    found = routes(kube)
    assert name in found, f"IntegrationRoute {name} is missing; the stack has {sorted(found)}"
    assert SENTINEL in prompt(found[name]), f"{name}'s promptTemplate lacks {SENTINEL!r}: {prompt(found[name])!r}"


def test_no_triage_route_carries_the_review_sentinel(kube: Kube) -> None:
    triage = {name: route for name, route in routes(kube).items() if "triage" in name}
    assert triage, "no triage IntegrationRoute found: the check below would pass on nothing"
    carrying = sorted(name for name, route in triage.items() if SENTINEL in prompt(route))
    assert not carrying, f"triage routes carry {SENTINEL!r}, so their agents would only review: {carrying}"
