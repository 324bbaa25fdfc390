"""``python -m harness diagnose deployment/NAME``: why a rollout is stuck, for a person at a terminal.

    python -m harness diagnose deployment/agent-orchestrator
    python -m harness diagnose statefulset/nats --namespace controller-agent
    python -m harness diagnose pod/agent-orchestrator-6d9f7c8b5-x2x7q --context minikube

Prints the same explanation a failed ``Kube.rollout_status`` raises (:mod:`harness.rollout`). The context goes
through the same guard as the specs: ``--context`` (or kubectl's current context) must be in ``[tool.harness]
allowed_contexts`` of the nearest ``pyproject.toml``, and is pinned on every kubectl call.

Exit status: 0 the workload is rolled out (or the pod ready), 1 it is not (or it was not found), 2 bad arguments or
the context guard refused (the reason on stderr).
"""

from __future__ import annotations

import argparse
import sys

from harness.errors import HarnessError
from harness.kube import Kube
from harness.rollout import DEFAULT_BUDGET, explain_workload, parse_ref


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness", description="stack-harness tools")
    commands = parser.add_subparsers(dest="command", required=True)
    diagnose = commands.add_parser("diagnose", help="explain a deployment's, statefulset's or pod's rollout")
    diagnose.add_argument("target", help="deployment/NAME, statefulset/NAME or pod/NAME")
    diagnose.add_argument("--context", default=None, help="kube context (default: kubectl's current one; guarded)")
    diagnose.add_argument("--namespace", "-n", default=None, help="namespace (default: [tool.harness] namespace)")
    diagnose.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: kubectl's)")
    diagnose.add_argument("--kubectl", default="kubectl", help="kubectl binary (default: the one on PATH)")
    diagnose.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        help=f"seconds all reads together may take (default {DEFAULT_BUDGET:.0f})",
    )
    args = parser.parse_args(argv)
    try:
        parse_ref(args.target)
        if not args.budget > 0:
            raise ValueError(f"--budget must be a positive number of seconds, got {args.budget}")
        kube = Kube.connect(args.context, args.namespace, kubectl=args.kubectl, kubeconfig=args.kubeconfig)
    except (ValueError, HarnessError) as exc:
        print(f"python -m harness diagnose: {exc}", file=sys.stderr)
        return 2
    try:
        explanation = explain_workload(kube, args.target, budget=args.budget)
    finally:
        kube.close()
    print(f"context {kube.context}, namespace {kube.namespace}")
    print(explanation.text())
    return 0 if explanation.healthy else 1


if __name__ == "__main__":
    sys.exit(main())
