"""get, apply (create, update) and delete through each real kubectl build against a double claiming that build's
version: the discovery and OpenAPI requests differ by build (1.27 and 1.28 ask for OpenAPI v2 as protobuf and the
``v2beta1`` aggregated discovery), so every build must get what it asks for."""

from __future__ import annotations

import json

import fakes.kube
from fakes.kube.kubectl_builds import KubectlBuild
from specs.kube.conftest import manifest


def test_get_apply_delete(kubectl_build: KubectlBuild) -> None:
    with fakes.kube.serve(kubectl_version=kubectl_build.server_git_version()) as kd:

        def run(*args: str) -> str:
            done = kd.kubectl(*args, kubectl=kubectl_build.path, namespace="default")
            assert done.returncode == 0, (
                f"{kubectl_build}: kubectl {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}"
            )
            return done.stdout

        assert "deployment.apps/api created" in run("apply", "-f", manifest("api.yaml"))
        assert "deployment.apps/api configured" in run("apply", "-f", manifest("api-v2.yaml"))
        image = run("get", "deployment", "api", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
        assert image == "registry.local/api:1.1"
        listed = json.loads(run("get", "configmaps", "-l", "tier=web", "-o", "json"))
        assert [i["metadata"]["name"] for i in listed["items"]] == ["api-config"]
        table = run("get", "deployments").splitlines()
        assert table[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
        assert 'deployment.apps "api" deleted' in run("delete", "deployment", "api", "--wait=false")
        assert run("delete", "deployment", "api", "--ignore-not-found", "--wait=false").strip() == ""
        assert kd.store.get("deployments", "default", "api") is None
