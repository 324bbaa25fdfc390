"""``python -m fakes.stack --kubeconfig PATH [--context NAME] [--bug NAME ...]``: run the stack twin.

Starts the API double, deploys the stack with kubectl and prints one JSON line to stdout once it is up:
``{"event": "ready", "context", "kubeconfig", "namespace", "bugs", "start_seconds", "steps": {...}}``. Runs until
SIGINT or SIGTERM, then stops everything (the kubeconfig it wrote goes too) and exits 0. When the start fails it
prints ``{"event": "failed", "error": "..."}`` and exits 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence

import fakes.stack
from fakes.stack.bugs import BUGS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fakes.stack", description="a twin of the agent-controller stack")
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig to write (created, or merged into)")
    parser.add_argument("--context", default=fakes.stack.DEFAULT_CONTEXT)
    parser.add_argument(
        "--bug",
        action="append",
        default=[],
        choices=sorted(BUGS),
        help="switch a known product bug back on (repeatable)",
    )
    parser.add_argument("--verbose", action="store_true", help="log the services' lines to stderr")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(message)s",
    )
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with fakes.stack.serve(args.kubeconfig, args.context, bugs=args.bug) as twin:
            print(
                json.dumps(
                    {
                        "event": "ready",
                        "context": twin.context,
                        "kubeconfig": twin.kubeconfig,
                        "namespace": twin.namespace,
                        "bugs": sorted(twin.bugs),
                        "start_seconds": round(twin.start_seconds, 3),
                        "steps": {name: round(seconds, 3) for name, seconds in twin.up_steps},
                    }
                ),
                flush=True,
            )
            while not stop.wait(0.5):
                pass
    except Exception as exc:  # one readable line for the harness, not a traceback
        print(json.dumps({"event": "failed", "error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
