"""``python -m fakes.github --host 0.0.0.0 --port 8080 [--public-base-url URL] [--token-ttl S]``: the fake GitHub,
standalone or in its pod. ``PUBLIC_BASE_URL`` (the Service URL in a cluster) is the default for ``--public-base-url``;
without either, URL fields follow each request's ``Host`` header."""

import argparse
import os
import sys

from fakes.cli import run_main
from fakes.github.app import FakeGitHub
from fakes.github.auth import INSTALLATION_TOKEN_TTL


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--public-base-url",
        default=os.environ.get("PUBLIC_BASE_URL") or None,
        help="base of every URL field in responses (default: $PUBLIC_BASE_URL, else the Host header)",
    )
    parser.add_argument(
        "--token-ttl",
        type=float,
        default=INSTALLATION_TOKEN_TTL,
        help="installation token lifetime in seconds (GitHub: 3600)",
    )


def _make(args: argparse.Namespace) -> FakeGitHub:
    return FakeGitHub(public_base_url=args.public_base_url, token_ttl=args.token_ttl)


if __name__ == "__main__":
    sys.exit(
        run_main(
            _make,
            prog="python -m fakes.github",
            add_arguments=_options,
            description="A fake GitHub REST API with App tokens and signed webhooks.",
        )
    )
