"""``python -m fakes.openai --host H --port P [--rules FILE] [--api-key K ...] [--model NAME ...]``: the fake model
endpoint standalone or in its pod.

Defaults come from the environment so a manifest can set them: ``FAKE_OPENAI_RULES`` (a JSON rules file, see
``fakes/openai/rules.py``), ``FAKE_OPENAI_API_KEYS`` (comma-separated accepted keys; unset: any non-empty key),
``FAKE_OPENAI_MODELS`` (comma-separated extra chat model names). A bad rules file stops the start with exit code 2
and a message naming the file and the key.
"""

from __future__ import annotations

import argparse
import os
import sys

from fakes.cli import run_main
from fakes.openai.app import OpenAIFake
from fakes.openai.rules import RuleSpecError, Script


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules",
        default=os.environ.get("FAKE_OPENAI_RULES") or None,
        help="JSON rules file (default: $FAKE_OPENAI_RULES); reset returns to it",
    )
    parser.add_argument(
        "--api-key",
        action="append",
        default=_split(os.environ.get("FAKE_OPENAI_API_KEYS")),
        help="an accepted bearer key (repeatable; default: $FAKE_OPENAI_API_KEYS, else any key)",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=_split(os.environ.get("FAKE_OPENAI_MODELS")),
        help="an extra chat model name to serve (repeatable; default: $FAKE_OPENAI_MODELS)",
    )


def main(argv: list[str] | None = None) -> int:
    def make(args: argparse.Namespace) -> OpenAIFake:
        try:
            script = Script.load(args.rules) if args.rules else None
        except (OSError, RuleSpecError) as exc:
            print(f"fake openai: cannot load rules: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
        return OpenAIFake(api_keys=args.api_key or None, rules=script, models=args.model)

    return run_main(
        make,
        prog="python -m fakes.openai",
        add_arguments=_options,
        argv=argv,
        description="A fake OpenAI-compatible model endpoint: scripted answers, capture, faults.",
    )


if __name__ == "__main__":
    sys.exit(main())
