"""``python -m harness.jobrun --shards N [--context C] [options] -- PYTEST_ARGS...``: the specs as an Indexed Job.

Each of the ``N`` shards runs ``pytest PYTEST_ARGS --job-shard I/N`` in a pod of the Job (:mod:`harness.jobrun.plan`),
the run follows them and collects their results (:mod:`harness.jobrun.run`). The context must be on the
``[tool.harness] allowed_contexts`` list, as for every cluster spec. Exit status: 0 when every shard passed, 1 when a
shard failed or no spec ran, 2 for bad arguments or a refused context, 130 on Ctrl-C or SIGTERM (after cleaning up).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from types import FrameType

from harness.artifacts import new_run_id
from harness.config import load_config
from harness.errors import HarnessError
from harness.jobrun.plan import Plan
from harness.jobrun.run import run
from harness.kube import ContextPick, Kube

PICK = ContextPick("--context", "python -m harness.jobrun --context {context} --shards N -- ...")
DEFAULT_DEADLINE = 3600.0


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="python -m harness.jobrun", description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, required=True, help="number of shards (pods), at least 1")
    parser.add_argument("--context", default=None, help="kube context (default: the current one); must be allowed")
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: as kubectl picks it)")
    parser.add_argument(
        "--image",
        default=None,
        help="the runner image (a build of this checkout); without it, each pod runs this "
        "checkout as a local process (a node of this machine under the local-process contract)",
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="environment for every shard (repeatable)"
    )
    parser.add_argument(
        "--in-cluster",
        action="store_true",
        help="shards run pytest --in-cluster (harness.incluster): the ServiceAccount's token, a Lease for the "
        "cluster lock, Services dialled directly; the specs' [tool.harness] must allow harness-in-cluster",
    )
    parser.add_argument(
        "--grants",
        type=Path,
        default=None,
        metavar="FILE",
        help="a JSON list of Role rules the shards' ServiceAccount gets in the run's namespace (default: none)",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=DEFAULT_DEADLINE,
        help=f"seconds the whole Job may take (activeDeadlineSeconds; default {DEFAULT_DEADLINE:.0f})",
    )
    parser.add_argument(
        "--artifacts", type=Path, default=Path("artifacts"), help="where the run's folder goes (default: artifacts/)"
    )
    own, _, rest = _split(argv)
    return parser.parse_args(own), rest


def _split(argv: list[str]) -> tuple[list[str], str, list[str]]:
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], "--", argv[at + 1 :]
    return argv, "", []


def _env(pairs: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"--env wants NAME=VALUE, got {pair!r}")
        out.append((name, value))
    return tuple(out)


def _grants(path: Path | None) -> tuple[dict[str, object], ...]:
    if path is None:
        return ()
    try:
        rules = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"--grants {path}: {exc}") from None
    if not isinstance(rules, list) or not all(isinstance(rule, dict) and rule.get("verbs") for rule in rules):
        raise ValueError(f"--grants {path}: want a JSON list of Role rules, each with verbs")
    return tuple(rules)


def _sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    args, pytest_args = parse(argv)
    try:
        root = Kube.connect(args.context, "default", config=load_config(), kubeconfig=args.kubeconfig, pick=PICK)
        plan = Plan(
            new_run_id(),
            args.shards,
            tuple(pytest_args),
            args.deadline,
            args.image,
            Path.cwd(),
            _env(args.env),
            _grants(args.grants),
            in_cluster=args.in_cluster,
            api_server=root.server_url() if args.in_cluster else None,
        )
    except (ValueError, HarnessError) as exc:
        print(f"harness jobrun: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _sigterm)
    try:
        return run(root, plan, args.artifacts.resolve())
    except HarnessError as exc:
        print(f"harness jobrun: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("harness jobrun: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
