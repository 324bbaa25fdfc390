"""One shard of a sharded run, inside its pod: ``python -m harness.jobrun.shard -- PYTEST_ARGS...``.

Runs pytest in this process with ``--job-shard I/N`` (``I`` from ``JOB_COMPLETION_INDEX``, which the Job controller
sets in an Indexed Job's pods; ``N`` from ``HARNESS_JOB_SHARDS``), its artifacts and JUnit file in a folder of its
own, and writes each spec's result, then the folder, then pytest's exit code to its log (:mod:`harness.jobrun.wire`).
Exits with pytest's exit code. Raises nothing: a shard that cannot start says why on stderr and exits 4 (pytest's
usage error).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

import pytest

from harness.jobrun import wire

INDEX_ENV = "JOB_COMPLETION_INDEX"
SHARDS_ENV = "HARNESS_JOB_SHARDS"
USAGE = 4


class Results:
    """pytest plugin: one ``result`` record per spec (its call phase, or the phase that failed or skipped it)."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and report.outcome == "passed":
            return
        outcome = "error" if report.when != "call" and report.outcome == "failed" else report.outcome
        write(self.out, wire.record("result", {"nodeid": report.nodeid, "outcome": outcome}))


def write(out: IO[str], line: str) -> None:
    out.write("\n" + line + "\n")
    out.flush()


def main(argv: list[str]) -> int:
    args = argv[1:] if argv[:1] == ["--"] else argv
    try:
        index, count = int(os.environ[INDEX_ENV]), int(os.environ[SHARDS_ENV])
    except (KeyError, ValueError) as exc:
        print(f"harness.jobrun.shard: {INDEX_ENV} and {SHARDS_ENV} must be integers ({exc})", file=sys.stderr)
        return USAGE
    # A copy of the log's stdout taken before pytest captures fd 1: records reach the log whatever pytest does.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    with tempfile.TemporaryDirectory(prefix=f"harness-shard-{index}-") as folder:
        artifacts = Path(folder)
        code = int(
            pytest.main(
                [
                    *args,
                    f"--job-shard={index}/{count}",
                    "-W",
                    "ignore::pytest.PytestAssertRewriteWarning",
                    f"--artifacts={artifacts / 'evidence'}",
                    f"--junitxml={artifacts / 'junit.xml'}",
                ],
                plugins=[Results(out)],
            )
        )
        for line in wire.bundle_lines(artifacts):
            out.write(line + "\n")
        write(out, wire.record("exit", {"code": code}))
    out.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
