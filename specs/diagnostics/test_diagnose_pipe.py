"""``python -m harness diagnose ... | head -1`` ends quietly when its reader stops early.

Python ignores SIGPIPE, so a write into a pipe nobody reads raises ``BrokenPipeError``; before, about 3 runs in 8 of
``diagnose ... | head -1`` ended in that traceback with exit 1 (which also reads as "did not roll out"). Now the
output ends quietly (the Python docs' recipe, "Note on SIGPIPE") and the status is still the verdict.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.kube.objects import bare_double

from .conftest import load_into

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kd() -> Iterator[Any]:
    if not os.environ.get("PATH") or subprocess.run(["which", "kubectl"], capture_output=True).returncode:
        pytest.skip("no kubectl on PATH: these specs need the real binary")
    with bare_double() as handle:
        yield handle


def _diagnose_argv(kd: Any, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\nallowed_contexts = ["fake-kube"]\nnamespace = "shop"\n')
    argv = [sys.executable, "-m", "harness", "diagnose", "deployment/web"]
    argv += ["--kubeconfig", kd.kubeconfig, "--context", kd.context]
    return argv, dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(tmp_path))  # kubectl's discovery cache: ~/.kube/cache


def test_a_reader_that_is_gone_before_the_first_line_gets_a_quiet_exit_with_the_verdict(
    kd: Any, tmp_path: Path
) -> None:
    kd.reset()
    load_into(kd, "imagepull")
    argv, env = _diagnose_argv(kd, tmp_path)
    reading, writing = os.pipe()
    os.close(reading)  # every write meets a closed pipe: the case that `head -1` makes a race of
    try:
        done = subprocess.run(
            argv, cwd=tmp_path, env=env, stdout=writing, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(writing)
    assert done.stderr == ""  # no BrokenPipeError traceback, no "Exception ignored" at the interpreter's exit
    assert done.returncode == 1  # the verdict: did not roll out (ImagePullBackOff)


def test_head_minus_one_gets_the_first_line_and_the_verdict(kd: Any, tmp_path: Path) -> None:
    kd.reset()
    load_into(kd, "imagepull")
    argv, env = _diagnose_argv(kd, tmp_path)
    with subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        first = proc.stdout.readline().decode()
        proc.stdout.close()  # what head does after its one line
        try:
            status = proc.wait(timeout=60)
        finally:
            proc.kill()
        stderr = proc.stderr.read().decode()
    assert first.startswith("deployment/web did not roll out: the new pod is stuck in ImagePullBackOff")  # cause first
    assert stderr == ""
    assert status == 1
