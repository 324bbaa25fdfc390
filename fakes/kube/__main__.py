"""``python -m fakes.kube --kubeconfig PATH [--context NAME] [--namespace NS] [--kubectl-version 1.32.4]``.

Serves a Kubernetes API double on 127.0.0.1 (``--port 0``: an OS-chosen port), writes the kubeconfig at PATH (mode
0600) with a context pointing at it, or merges its cluster, user and context into the kubeconfig already there
without changing anything else in it (layout, comments, current-context, mode), prints ``fake kube listening on URL``
and the kubectl command line to stdout once serving, and runs until SIGINT or SIGTERM. Then it stops the server,
gives the file back as it was (or deletes it, if it created it) and exits 0. Exit 1 when it cannot start, e.g. when
the existing file already has entries of the double's name or a layout it cannot merge into (the reason on stderr).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

import fakes.kube


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fakes.kube", description="Kubernetes API server double")
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig to write (created, or merged into)")
    parser.add_argument("--context", default=fakes.kube.DEFAULT_CONTEXT, help="context/cluster/user name")
    parser.add_argument("--namespace", default="default", help="the context's namespace (created if missing)")
    parser.add_argument(
        "--kubectl-version",
        default=fakes.kube.DEFAULT_KUBECTL_VERSION,
        help="gitVersion /version reports (the kubectl dispatcher picks its build from it)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 lets the OS choose")
    parser.add_argument(
        "--tls", action="store_true", help="serve https and require the token (over http kubectl never sends it)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with fakes.kube.serve(
            kubeconfig=args.kubeconfig,
            context=args.context,
            namespace=args.namespace,
            kubectl_version=args.kubectl_version,
            host=args.host,
            port=args.port,
            tls=args.tls,
        ) as kd:
            print(f"fake kube listening on {kd.url}", flush=True)
            print(f"kubectl --kubeconfig {kd.kubeconfig} --context {kd.context} get pods", flush=True)
            while not stop.wait(0.5):
                pass
    except Exception as exc:  # a clear one-line reason, not a traceback, for a standalone tool
        print(f"fake kube: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
