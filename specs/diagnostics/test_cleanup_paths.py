"""Nothing a spec created through a ledger is left unlisted, however the run ends: inner pytest processes (the real
kubectl, on each target of specs/targets.py) interrupted by Ctrl-C or SIGTERM, ended by pytest-timeout's ``thread``
method (``os._exit``), or killed with SIGKILL, alone or as a pytest-xdist worker; and every object of every manifest
shape ``kubectl apply`` expands carries the run label."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness import Kube, Ledger, process
from harness.cleanup_journal import FOLDER

from .cleanup_support import configmap, inner, kd, kube, names, printed_inspections_find

__all__ = ["kd", "kube"]  # fixtures, used by name

RUN = "20261203-070000-c0ffee"
LABEL = f"stack-harness.dev/run={RUN}"
RUN_BOUND = 120.0  # seconds an inner pytest may take, end to end: far above what it needs on a loaded machine

BLOCKS_AFTER_CREATING = """
import os, time
from pathlib import Path

def test_creates_then_blocks(cleanup):
    cleanup.apply({{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "made-before-the-end"}}}})
    Path({ready!r}).write_text(str(os.getpid()))
    {end}
"""
BLOCK = "time.sleep(600)  # ended from outside"
ENDINGS = {  # how the process ends, and the inner pytest's arguments
    "sigkill": ("os.kill(os.getpid(), 9)", ()),
    "os._exit": ("os._exit(3)", ()),
    "pytest-timeout-thread": (BLOCK, ("--timeout", "6", "--timeout-method", "thread")),  # os._exit after the dump
}


def inner_pytest(pytester: pytest.Pytester, *args: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--artifacts", "art", *args]
    return process.spawn(argv, cwd=str(pytester.path), env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def finished(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=RUN_BOUND)
    finally:
        process.kill_group(proc)
    return proc.returncode, out.decode(errors="replace")


def wait_for_file(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + RUN_BOUND
    while not path.exists():
        assert proc.poll() is None, finished(proc)[1]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_lists_what_the_running_spec_created(
    pytester: pytest.Pytester, kube: Kube, sig: signal.Signals
) -> None:
    # Was: the spec's ledger was torn down by pytest after the plugin had settled the spec, so its objects stayed
    # in the cluster with no "kept" line (Ctrl-C), or pytest died at once with no teardown at all (SIGTERM).
    ready = pytester.path / "ready"
    inner(pytester, kube, BLOCKS_AFTER_CREATING.format(ready=str(ready), end=BLOCK))
    proc = inner_pytest(pytester)
    wait_for_file(ready, proc)
    os.kill(proc.pid, sig)
    status, out = finished(proc)
    assert status == pytest.ExitCode.INTERRUPTED, out
    assert "test_inner.py::test_creates_then_blocks: kept configmap/made-before-the-end (the run was interrupted" in out
    assert "made-before-the-end" in names(kube, "configmaps")  # listed, not deleted: the spec never finished
    assert printed_inspections_find(kube, out.splitlines()) == ["configmap/made-before-the-end"]


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_a_process_that_dies_inside_a_scope_is_listed_by_the_next_run_and_only_once(
    pytester: pytest.Pytester, kube: Kube, ending: str
) -> None:
    # Was: nothing anywhere said the ConfigMap was left behind.
    ready = pytester.path / "ready"
    end, args = ENDINGS[ending]
    inner(pytester, kube, BLOCKS_AFTER_CREATING.format(ready=str(ready), end=end))
    status, out = finished(inner_pytest(pytester, *args))
    assert status != 0, out
    assert "kept" not in out, out  # the process died: it could say nothing itself
    pid = ready.read_text()
    pytester.makepyfile(test_inner="def test_unrelated():\n    pass\n")
    status, out = finished(inner_pytest(pytester))
    assert status == 0, out
    why = f"(its process (main, pid {pid}) died inside the scope; run "
    assert f"test_inner.py::test_creates_then_blocks: kept configmap/made-before-the-end {why}" in out, out
    assert printed_inspections_find(kube, out.splitlines()) == ["configmap/made-before-the-end"]
    status, out = finished(inner_pytest(pytester))
    assert status == 0, out
    assert "made-before-the-end" not in out, out  # claimed by the run that listed it


def test_a_spec_stopped_by_pytest_timeouts_signal_method_keeps_and_lists_its_objects(
    pytester: pytest.Pytester, kube: Kube
) -> None:
    ready = pytester.path / "ready"
    inner(pytester, kube, BLOCKS_AFTER_CREATING.format(ready=str(ready), end=BLOCK))
    status, out = finished(inner_pytest(pytester, "--timeout", "6", "--timeout-method", "signal"))
    assert status == pytest.ExitCode.TESTS_FAILED, out
    assert "kept configmap/made-before-the-end (a spec in test_inner.py failed)" in out, out
    assert printed_inspections_find(kube, out.splitlines()) == ["configmap/made-before-the-end"]


def test_a_worker_that_dies_inside_a_scope_is_listed_by_the_controller(pytester: pytest.Pytester, kube: Kube) -> None:
    ready = pytester.path / "ready"
    inner(pytester, kube, BLOCKS_AFTER_CREATING.format(ready=str(ready), end=ENDINGS["sigkill"][0]))
    status, out = finished(inner_pytest(pytester, "-n", "1"))
    assert status == pytest.ExitCode.TESTS_FAILED, out  # xdist reports the crashed worker's spec as failed
    pid = ready.read_text()
    assert f"kept configmap/made-before-the-end (its process (gw0, pid {pid}) died inside the scope)" in out, out
    assert "made-before-the-end" in names(kube, "configmaps")


DELETED_THEN_DIES = """
import os

def test_creates_then_blocks(cleanup, kube):
    cleanup.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made-before-the-end"}})
    kube.kubectl("delete", "configmap", "made-before-the-end")  # as another worker's ledger of the module would
    os.kill(os.getpid(), 9)
"""


def test_what_another_ledger_deleted_before_the_process_died_is_not_listed(
    pytester: pytest.Pytester, kube: Kube
) -> None:
    # Was: under xdist a module fixture's object, made on two workers and deleted by the one that finished, was
    # listed as kept from the journal of the one that died.
    inner(pytester, kube, DELETED_THEN_DIES)
    assert finished(inner_pytest(pytester))[0] != 0
    pytester.makepyfile(test_inner="def test_unrelated():\n    pass\n")
    status, out = finished(inner_pytest(pytester))
    assert status == 0, out
    assert "made-before-the-end" not in out, out
    assert "made-before-the-end" not in names(kube, "configmaps")


def test_kept_commands_name_the_kubeconfig_that_kubeconfig_named(pytester: pytest.Pytester, kube: Kube) -> None:
    """Pasted into a shell without the run's ``KUBECONFIG``, each printed command still reaches the cluster."""
    # Was: `kubectl --context C ...` alone, which a shell without the variable reads from ~/.kube/config.
    assert kube.kubeconfig is not None
    inner(pytester, kube, "def test_keeps(cleanup):\n    cleanup.apply({'apiVersion': 'v1', 'kind': 'ConfigMap', "
          "'metadata': {'name': 'kept-by-env'}})\n    assert False\n")  # fmt: skip
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace(f"kubeconfig={kube.kubeconfig!r}", "kubeconfig=None"))
    empty = pytester.path / "empty-kubeconfig"
    empty.write_text("")
    env = {**os.environ, "KUBECONFIG": os.pathsep.join([str(empty), kube.kubeconfig])}
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--artifacts", "art"]
    done = process.run_bounded(argv, timeout=RUN_BOUND, cwd=str(pytester.path), env=env)
    commands = [line.strip() for line in done.stdout.splitlines() if "kubectl" in line and " get " in line]
    assert commands, done.stdout
    shell = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"} | {"HOME": str(pytester.path)}
    for command in commands:
        listed = process.run_bounded(["bash", "-c", command + " -o name"], timeout=60.0, env=shell)
        assert listed.stdout.split() == ["configmap/kept-by-env"], (command, listed.stderr)


def test_a_journal_of_a_live_process_is_never_claimed(pytester: pytest.Pytester, kube: Kube) -> None:
    """Two runs at once in one checkout: the one that ends first must not list the other's open ledgers."""
    ready = pytester.path / "ready"
    inner(pytester, kube, BLOCKS_AFTER_CREATING.format(ready=str(ready), end=BLOCK))
    blocked = inner_pytest(pytester)
    try:
        wait_for_file(ready, blocked)
        pytester.makepyfile(test_other="def test_unrelated():\n    pass\n")
        status, out = finished(inner_pytest(pytester, "test_other.py"))
        assert status == 0, out
        assert "made-before-the-end" not in out, out
        assert not list((pytester.path / "art").glob(f"*/{FOLDER}/*.claimed*"))
    finally:
        process.kill_group(blocked)


LIST = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [configmap("in-a-list"), configmap("in-a-typed-list")],
}


@pytest.mark.parametrize(
    "manifest",
    [
        json.dumps(LIST),
        "apiVersion: v1\nkind: ConfigMapList\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: in-a-list}}\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: in-a-typed-list}}\n",
        json.dumps(configmap("in-a-list")) + "\n" + json.dumps(configmap("in-a-typed-list")),  # a JSON stream
    ],
    ids=["List", "ConfigMapList", "json-stream"],
)
def test_every_object_a_list_or_stream_expands_to_carries_the_run_label(kube: Kube, manifest: str) -> None:
    # Was: a List's own metadata got the label and kubectl created its items without it; a JSON stream was refused.
    ledger = Ledger(kube, RUN, scope="spec")
    assert sorted(ledger.apply(manifest)) == ["configmap/in-a-list", "configmap/in-a-typed-list"]
    listed = kube.kubectl("get", "configmaps", "-l", LABEL, "-o", "name").stdout.split()
    assert sorted(listed) == ["configmap/in-a-list", "configmap/in-a-typed-list"]
    assert ledger.delete().failed == []


def test_a_list_inside_a_list_is_refused_as_kubectl_refuses_it(kube: Kube) -> None:
    """kubectl's resource builder flattens one level and refuses the whole file for a list inside a list
    ("is not a list: no Items field"); flattening one level ourselves would hand kubectl a list it accepts."""
    nested: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": [LIST]}
    done = kube.kubectl("apply", "-f", "-", "-o", "name", input=json.dumps(nested), check=False)
    assert done.returncode != 0  # the real kubectl decides
    assert "not a list" in done.stderr
    with pytest.raises(ValueError, match="a list inside a list"):
        Ledger(kube, RUN, scope="spec").apply(nested)
    assert names(kube, "configmaps") == [n for n in names(kube, "configmaps") if not n.startswith("in-a-")]
