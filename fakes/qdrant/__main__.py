"""``python -m fakes.qdrant --host H --port P [--api-key K] [--apply-delay S]``: the fake Qdrant standalone."""

from __future__ import annotations

import argparse
import os
import sys

from fakes.cli import run_main
from fakes.qdrant.app import QdrantFake


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api-key",
        default=os.environ.get("QDRANT__SERVICE__API_KEY"),
        help="require this key (api-key header or Bearer); default: $QDRANT__SERVICE__API_KEY",
    )
    parser.add_argument(
        "--apply-delay",
        type=float,
        default=None,
        help="seconds after which an update sent without wait=true is applied",
    )


def main(argv: list[str] | None = None) -> int:
    apps: list[QdrantFake] = []

    def make(args: argparse.Namespace) -> QdrantFake:
        apps.append(QdrantFake(api_key=args.api_key or None, apply_delay=args.apply_delay))
        return apps[0]

    try:
        return run_main(
            make,
            prog="python -m fakes.qdrant",
            description="Fake Qdrant REST server (fakes/qdrant/README.md)",
            add_arguments=_options,
            argv=argv,
        )
    finally:
        for app in apps:
            app.close()


if __name__ == "__main__":
    sys.exit(main())
