"""``python -m fakes.stack --kubeconfig PATH [--context NAME] [--bug NAME ...] [--time-scale K] [--set NAME=S ...]
[--on double|control-plane]``: run the stack twin.

``--on`` picks what it runs on: the API double (default; :func:`fakes.stack.serve`) or the real control plane of this
machine with a local node (:mod:`fakes.stack.on_plane`; its binaries built by ``make control-plane``; ``--kubeconfig``
must name a file that does not exist yet).

``--time-scale K`` (a number >= 1, default 1) divides every timing of the profile (``fakes/stack/profile.toml``) by K,
never below an entry's floor; the scaled deployed values are what the twin's objects carry. ``--set NAME=SECONDS``
(repeatable) deploys the deployed value NAME as given, in seconds at the effective scale (a mis-set stack); any
other name is a usage error (exit 2), as is K below 1.

Starts the API double, deploys the stack with kubectl and prints one JSON line to stdout once it is up:
``{"event": "ready", "context", "kubeconfig", "namespace", "bugs", "time_scale", "profile": {name: seconds or
count}, "start_seconds", "steps": {...}, "on", "logs": {component: log file}}`` (``logs``: the control plane's,
empty on the double). Runs until SIGINT or SIGTERM, then stops everything (the kubeconfig it
wrote goes too) and exits 0. When the start fails it prints ``{"event": "failed", "error": "..."}`` and exits 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

import fakes.stack
from fakes.stack.bugs import BUGS
from fakes.stack.profile import ProfileError, effective


def time_scale(text: str) -> float:
    """``--time-scale``'s value: a finite number >= 1 (argparse turns the error into a usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value >= 1 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"{text} is below 1 (1 is the stack's own cadence; the twin only runs faster)")
    return value


def setting(text: str) -> tuple[str, float]:
    """``--set``'s value: ``NAME=SECONDS``."""
    name, sep, seconds = text.partition("=")
    try:
        return name.strip(), float(seconds) if sep else float("nan")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=SECONDS (seconds a number)") from None


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
    parser.add_argument(
        "--time-scale",
        type=time_scale,
        default=1.0,
        metavar="K",
        help="divide every timing of the profile by K >= 1 (floors kept; default 1, the stack's own cadence)",
    )
    parser.add_argument(
        "--set",
        action="append",
        type=setting,
        default=[],
        metavar="NAME=SECONDS",
        help="deploy this deployed profile value as given, in seconds (repeatable): a mis-set stack",
    )
    parser.add_argument(
        "--on",
        choices=("double", "control-plane"),
        default="double",
        help="run on the API double (default) or on this machine's real control plane with a local node",
    )
    parser.add_argument("--verbose", action="store_true", help="log the services' lines to stderr")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    overrides = dict(args.set)
    try:
        timing = effective(args.time_scale, overrides)  # checked here, so a bad --set is a usage error
    except ProfileError as exc:
        parser.error(f"argument --set: {exc}")
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(message)s",
    )
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with _serve(args.on)(
            args.kubeconfig, args.context, bugs=args.bug, time_scale=args.time_scale, overrides=overrides
        ) as twin:
            print(
                json.dumps(
                    {
                        "event": "ready",
                        "context": twin.context,
                        "kubeconfig": twin.kubeconfig,
                        "namespace": twin.namespace,
                        "bugs": sorted(twin.bugs),
                        "time_scale": timing.scale,
                        "profile": twin.timing.as_json(),
                        "start_seconds": round(twin.start_seconds, 3),
                        "on": args.on,
                        "logs": getattr(twin, "logs", {}),
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


def _serve(on: str) -> Any:
    if on == "control-plane":
        from fakes.stack import on_plane

        return on_plane.serve
    return fakes.stack.serve


if __name__ == "__main__":
    sys.exit(main())
