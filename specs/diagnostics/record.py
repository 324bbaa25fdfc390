"""Record a workload's rollout as a scenario of ``recorded/`` (what the real controllers wrote, read back by kubectl).

``python -m specs.diagnostics.record --kubeconfig K --context C --namespace N deployment/web NAME`` writes
``recorded/NAME.json``: the workload, its ReplicaSets, the namespace's pods and events, as ``kubectl get -o json``
prints them, without ``managedFields`` (bulk the explanations never read). The ``real_*`` scenarios came from the
real control plane (``python -m harness.controlplane run``), with the manifests their ``"source"`` key gives.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness import Kube
from specs.diagnostics.conftest import RECORDED


def read(kube: Kube, ref: str) -> dict[str, Any]:
    def items(*args: str) -> list[dict[str, Any]]:
        return [_trim(o) for o in (kube.kubectl_json("get", *args) or {}).get("items", [])]

    return {
        "workload": _trim(kube.kubectl_json("get", ref)),
        "replicasets": items("replicasets"),
        "pods": items("pods"),
        "events": items("events"),
        "previous_logs": {},
    }


def _trim(obj: dict[str, Any]) -> dict[str, Any]:
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--source", default="", help="the manifests and steps that made it, kept in the file")
    parser.add_argument("ref")
    parser.add_argument("name")
    args = parser.parse_args()
    kube = Kube(
        args.context, args.namespace, allowed=(args.context,), kubectl_path="kubectl", kubeconfig=args.kubeconfig
    )
    scenario = {"source": args.source, **read(kube, args.ref)}
    Path(RECORDED, f"{args.name}.json").write_text(json.dumps(scenario, indent=1) + "\n")


if __name__ == "__main__":
    main()
