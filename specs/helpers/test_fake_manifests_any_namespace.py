"""The fakes' own manifests (``fakes/<name>/manifests``) name no namespace and no stack: ``kubectl -n NS apply -f``
puts them in any namespace, the fake GitHub's URL fields then name its Service in that namespace (the downward API
and a dependent variable), and the twin's node builds that environment as a kubelet does
(:func:`fakes.kube.local_process.environment`, which the twin's node uses). The stack's own name for the fake Qdrant
lives in ``fakes/stack``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes.kube import KubeHandle
from fakes.kube.local_process import StoreSources, environment, expand
from harness import wait_for_sync

FAKES = Path(__file__).resolve().parents[2] / "fakes"
MANIFESTS = sorted(FAKES.glob("*/manifests/*.yaml"))


def test_the_fakes_own_manifests_exist_outside_the_stack_and_name_no_namespace() -> None:
    own = [m for m in MANIFESTS if m.parts[-3] != "stack"]
    assert len(own) == 7
    placed = [(m.relative_to(FAKES).as_posix(), d["metadata"]["namespace"]) for m in own for d in _docs(m)]
    assert [(name, ns) for name, ns in placed if ns is not None] == []


def test_the_fake_github_applied_into_a_namespace_answers_with_its_service_url_there(fake_kube: KubeHandle) -> None:
    assert fake_kube.kubectl("create", "namespace", "shop").returncode == 0
    applied = fake_kube.kubectl("-n", "shop", "apply", "-f", str(FAKES / "github" / "manifests"))
    assert applied.returncode == 0, applied.stderr

    shop = fake_kube.kube(namespace="shop")

    def pod() -> dict[str, Any] | None:
        pods = shop.kubectl_json("get", "pods", "-l", "app.kubernetes.io/name=fake-github")["items"]
        return pods[0] if pods else None

    found = wait_for_sync("the fake GitHub's pod", pod, timeout=30)
    (container,) = found["spec"]["containers"]
    env = environment(found, container, StoreSources(fake_kube.double.store), strict=False)
    assert env["POD_NAMESPACE"] == "shop"
    assert env["PUBLIC_BASE_URL"] == "http://fake-github.shop.svc.cluster.local"
    service = shop.kubectl_json("get", "service", "fake-github")
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "fake-github"}


@pytest.mark.parametrize(
    "value, expanded",
    [
        ("http://$(HOST):$(PORT)/", "http://example:80/"),
        ("$(LATER)", "$(LATER)"),  # defined after this entry: left as written, as the kubelet leaves it
        ("$(UNSET) and $()", "$(UNSET) and $()"),
        ("$$(HOST) costs $$5", "$(HOST) costs $5"),  # $$ escapes
        ("$HOST (HOST) $", "$HOST (HOST) $"),
    ],
)
def test_a_value_expands_references_to_variables_defined_before_it(value: str, expanded: str) -> None:
    assert expand(value, {"HOST": "example", "PORT": "80"}) == expanded


def test_the_stack_gives_the_fake_qdrant_its_own_service_name() -> None:
    (alias,) = _docs(FAKES / "stack" / "manifests" / "44-qdrant-service.yaml")
    (own,) = _docs(FAKES / "qdrant" / "manifests" / "service.yaml")
    assert (own["metadata"]["name"], alias["metadata"]["name"]) == ("fake-qdrant", "agent-controller-qdrant")
    assert alias["spec"]["selector"] == own["spec"]["selector"]
    assert alias["spec"]["ports"] == own["spec"]["ports"]


def _docs(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    for doc in docs:
        doc["metadata"].setdefault("namespace", None)
    return docs
