"""``python -m harness.controlplane build|run|where|prune``.

    python -m harness.controlplane build                    # build (or find current) every binary; progress printed
    python -m harness.controlplane run --kubeconfig /tmp/kc # start one, print a ready line, run until SIGINT/SIGTERM
    python -m harness.controlplane where                    # the cache's place, each release's size
    python -m harness.controlplane prune                    # remove every release but the one the modules pin

``run`` writes its own kubeconfig at PATH (one context, its own: a file that exists is refused, so the user's
``~/.kube/config`` is never touched), prints one JSON line once every Node is Ready and pods can be created
(``{"kubeconfig", "context", "server", "version", "components": {name: {pid, ready_after, log}}, "timings"}``),
and on SIGINT or SIGTERM stops every component and removes the file and its folder. ``--api-only`` starts etcd and
kube-apiserver alone (what an envtest assets folder holds). Exit 0 on a clean stop; 1 when it cannot build or start
(the reason, naming the component and quoting its log, on stderr); 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from harness.controlplane import build
from harness.controlplane.plane import ControlPlane, Settings
from harness.controlplane.release import ENVTEST_PAIR, NAMES
from harness.errors import ControlPlaneError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness.controlplane", description="a real control plane")
    verbs = parser.add_subparsers(dest="verb", required=True)
    made = verbs.add_parser("build", help="build the binaries from their Go modules (nothing when current)")
    made.add_argument("--force", action="store_true", help="build even when the cache is current")
    run = verbs.add_parser("run", help="start a control plane and keep it until SIGINT or SIGTERM")
    run.add_argument("--kubeconfig", required=True, type=Path, help="kubeconfig to write (must not exist)")
    run.add_argument("--nodes", type=int, default=1, help="Nodes kwok simulates (default 1)")
    run.add_argument("--api-only", action="store_true", help="etcd and kube-apiserver alone")
    run.add_argument("--kwok-config", type=Path, action="append", default=[], help="more of kwok's --config files")
    verbs.add_parser("where", help="the cache's place and size")
    verbs.add_parser("prune", help="remove releases the modules no longer pin")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.verb == "build":
            build.build(force=args.force, say=lambda line: print(line, flush=True))
        elif args.verb == "where":
            build.describe_cache()
        elif args.verb == "prune":
            build.prune()
        else:
            return _run(args)
    except ControlPlaneError as exc:
        print(f"control plane: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.kubeconfig.exists() or args.kubeconfig.is_symlink():  # a dangling link would be written through
        print(f"control plane: {args.kubeconfig} exists; give a path of its own", file=sys.stderr)
        return 2
    if not args.kubeconfig.parent.is_dir():
        print(f"control plane: {args.kubeconfig.parent} is not a folder; the kubeconfig goes in one", file=sys.stderr)
        return 2
    missing = [str(path) for path in args.kwok_config if not path.is_file()]
    if missing:
        print(f"control plane: --kwok-config {', '.join(missing)}: no such file", file=sys.stderr)
        return 2
    if args.nodes < 1:
        print("control plane: --nodes must be at least 1", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    settings = Settings(
        nodes=args.nodes, components=ENVTEST_PAIR if args.api_only else NAMES, kwok_configs=tuple(args.kwok_config)
    )
    plane = ControlPlane(settings, kubeconfig=args.kubeconfig)
    with plane:  # started and stopped from this (the main) thread, so every child lives exactly as long
        print(json.dumps(plane.ready_line()), flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
