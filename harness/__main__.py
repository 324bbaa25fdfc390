"""``python -m harness diagnose NAME``: why a rollout is stuck, for a person at a terminal.

    python -m harness diagnose web                                     # a bare name is deployment/NAME
    python -m harness diagnose statefulset/db --namespace shop
    python -m harness diagnose pod/web-6d9f7c8b5-x2x7q --context kind-dev

Prints the same explanation a failed ``Kube.rollout_status`` raises (:mod:`harness.rollout`). The context goes
through the same guard as the specs: ``--context`` (or the kubeconfig's current context) must be in ``[tool.harness]
allowed_contexts`` of ``--config PATH`` (a ``pyproject.toml`` or its folder) or else of the nearest ``pyproject.toml``
at or above the current folder, and is pinned on every kubectl call. With no ``[tool.harness]`` there, the command
says on stderr that it uses the defaults (:mod:`harness.config`), so it works from any folder. Before any kubectl call,
the API server gets the check the pytest plugin runs once per session (:meth:`Kube.check_api_server`), so a stopped
cluster or a paused VM is named as such. ``--budget`` bounds the whole command: the kubeconfig is read without
kubectl, and the check and the reads share the budget.

Exit status (:data:`EXIT_CODES`): 0 the workload is rolled out (or the pod ready); 1 it is not (or it was not
found); 2 bad arguments, or no context to use (the guard refused it, it is not in the kubeconfig, there is no
kubeconfig); 3 the cluster cannot be used (the API server refused the connection, did not answer, failed TLS,
rejected the credentials, the namespace is missing) or the workload could not be read within the budget. The
reason for 2 and 3 is on stderr. Output into a pipe whose reader stops early (``| head -1``) ends quietly, with the
same status: no ``BrokenPipeError`` traceback (the Python docs' recipe in "Note on SIGPIPE", :mod:`signal`), and the
status still tells the verdict, which was reached before the reader left.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from harness.config import HarnessConfig, load_config
from harness.errors import ApiServerUnusable, HarnessError
from harness.kube import ContextPick, Kube
from harness.rollout import DEFAULT_BUDGET, explain, gather, parse_ref

EXIT_ROLLED_OUT = 0
EXIT_NOT_ROLLED_OUT = 1
EXIT_USAGE = 2
EXIT_CLUSTER_UNUSABLE = 3
EXIT_CODES = {
    EXIT_ROLLED_OUT: "rolled out (a pod: ready)",
    EXIT_NOT_ROLLED_OUT: "did not roll out, or not found",
    EXIT_USAGE: "bad arguments, or no context to use (refused by the guard, not in the kubeconfig)",
    EXIT_CLUSTER_UNUSABLE: "the cluster cannot be used (API server down, paused, rejecting), or the workload "
    "could not be read within the budget",
}
"""Exit status of ``python -m harness diagnose`` and what it means."""

CLI_PICK = ContextPick("--context", "python -m harness diagnose NAME --context {context}")
"""How the guard's messages tell a person at the terminal to pick another context: this command's flag."""

_PROG = "python -m harness diagnose"


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    finally:
        _flush_quietly(sys.stdout)  # inside main: a closed pipe is noticed here, not in the interpreter's exit


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        ref = "/".join(parse_ref(args.target))  # a bare name is deployment/NAME, as Kube.rollout_status reads it
        if not args.budget > 0:
            raise ValueError(f"--budget must be a positive number of seconds, got {args.budget}")
        deadline = time.monotonic() + args.budget
        config = _config(args.config)
        kube = Kube.connect(
            args.context,
            args.namespace,
            config=config,
            kubectl=args.kubectl,
            kubeconfig=args.kubeconfig,
            pick=CLI_PICK,
            read_files=True,
        )
    except (ValueError, HarnessError) as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _diagnose(kube, ref, deadline)
    finally:
        kube.close()


def _config(path: str | None) -> HarnessConfig:
    """``--config PATH``'s ``[tool.harness]``, else the nearest one at or above the current folder; with none, the
    defaults, said on stderr (the guard's messages then name the default allow-list, never a file)."""
    config = load_config(path=Path(path)) if path else load_config()
    if config.source is None:
        print(
            f"{_PROG}: no [tool.harness] in a pyproject.toml at or above {Path.cwd()}: using the defaults "
            f"(allowed contexts {', '.join(config.allowed_contexts)}; the context's own namespace); "
            "pass --config PATH to use a project's",
            file=sys.stderr,
        )
    return config


def _diagnose(kube: Kube, ref: str, deadline: float) -> int:
    """The API server check, then the reads, all before ``deadline``; prints the explanation, returns the status."""
    try:
        kube.check_api_server(deadline=deadline)
    except ApiServerUnusable as exc:
        print(f"{_PROG}: cluster unusable: {exc}", file=sys.stderr)
        return EXIT_CLUSTER_UNUSABLE
    except HarnessError as exc:  # the kubernetes client cannot load the context the guard accepted
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    snap = gather(kube, ref, budget=max(0.0, deadline - time.monotonic()))
    explanation = explain(snap)
    _say(explanation.text())  # the headline first: `diagnose web | head -1` is the cause
    _say(f"(context {kube.context}, namespace {kube.namespace})")
    if snap.workload is None and not snap.missing:  # neither "rolled out" nor "did not": the reads failed
        return EXIT_CLUSTER_UNUSABLE
    return EXIT_ROLLED_OUT if explanation.healthy else EXIT_NOT_ROLLED_OUT


def _say(text: str) -> None:
    """Print a line of the report; a reader that has gone (``| head -1``) ends the output quietly."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _to_devnull(sys.stdout)


def _flush_quietly(stream: TextIO) -> None:
    try:
        stream.flush()
    except BrokenPipeError:
        _to_devnull(stream)


def _to_devnull(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null, so what is still buffered (flushed again at exit) goes nowhere
    instead of raising a second ``BrokenPipeError`` (the Python docs' SIGPIPE recipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description="stack-harness tools")
    commands = parser.add_subparsers(dest="command", required=True)
    statuses = "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items())
    diagnose = commands.add_parser(
        "diagnose",
        help="explain a deployment's, statefulset's or pod's rollout",
        description="Explain why a rollout is stuck, from the objects, events and previous logs.",
        epilog=f"exit status: {statuses}",
    )
    diagnose.add_argument("target", help="NAME (a deployment), deployment/NAME, statefulset/NAME or pod/NAME")
    diagnose.add_argument(
        "--context", default=None, help="kube context (default: the kubeconfig's current one; guarded)"
    )
    diagnose.add_argument(
        "--namespace", "-n", default=None, help="namespace (default: [tool.harness] namespace, else the context's)"
    )
    diagnose.add_argument(
        "--kubeconfig", default=None, help="kubeconfig file (default: [tool.harness] kubeconfig, else kubectl's)"
    )
    diagnose.add_argument(
        "--config",
        default=None,
        metavar="PATH",
        help="pyproject.toml (or its folder) whose [tool.harness] applies (default: the nearest at or above here)",
    )
    diagnose.add_argument("--kubectl", default="kubectl", help="kubectl binary (default: the one on PATH)")
    diagnose.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        help=f"seconds the whole command may take: API server check and reads (default {DEFAULT_BUDGET:.0f})",
    )
    return parser


if __name__ == "__main__":
    sys.exit(main())
