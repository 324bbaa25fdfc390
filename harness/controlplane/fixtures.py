"""Pytest fixtures for the real control plane (their bodies; :mod:`harness.pytest_plugin` declares them and registers
this module once a run uses the harness; nothing starts until used).

- ``control_plane`` (session): the run's control plane, a :class:`~harness.controlplane.target.ControlPlaneTarget`
  (``kube``, ``kubeconfig``, ``context``, ``logs()``). Under ``--target control-plane`` it is the target's own, one
  per run; otherwise this process starts one for its session. Skips, naming the binaries and the build command,
  when they are not there; fails with the component and its log's tail when the start fails.
- ``control_plane_namespace`` (function): a namespace of its own for the spec on that plane, deleted after it
  (without waiting for its finalizers); yields a :class:`~harness.kube.Kube` pinned to it.
- every spec that used either, or ran under ``--target control-plane``, keeps each component's log tail in its
  evidence when it fails.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.controlplane.target import ControlPlaneTarget
    from harness.kube import Kube

LOG_EVIDENCE_BYTES = 256 * 1024
"""The end of each component's log a failed spec keeps."""
DELETE_TIMEOUT = 30.0
"""Seconds ``kubectl delete namespace --wait=false`` may take."""
_OWN = pytest.StashKey["ControlPlaneTarget"]()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Under ``--target control-plane``, make the session's stand-in (after :mod:`harness.targets` chose the
    target)."""
    from harness import targets

    choice = targets.target_choice(config)
    if choice is None or choice.kind != "control-plane":
        return
    from harness.config import load_config
    from harness.controlplane.target import make_target
    from harness.errors import BinariesMissing, HarnessError

    namespace = config.getoption("--namespace") or load_config(config.rootpath).namespace or "default"
    try:
        targets.set_stand_in(config, make_target(config, namespace))
    except BinariesMissing as exc:  # no binaries: the cluster specs skip, naming what provides them
        targets.set_stand_in(config, None, why_not=f"--target control-plane, but it cannot run here: {exc}")
    except HarnessError as exc:  # a setting that is wrong (a start timeout that is no duration): never a green run
        raise pytest.UsageError(f"--target control-plane: {exc}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: a worker attaches to the run's one control plane (it never starts its own)."""
    from harness.controlplane.target import ControlPlaneTarget, ship

    target = _session_target(node.config)
    if isinstance(target, ControlPlaneTarget) and target.owner:
        ship(target, node.workerinput)


def _session_target(config: pytest.Config) -> ControlPlaneTarget | None:
    from harness import targets
    from harness.controlplane.target import ControlPlaneTarget

    target = targets.stand_in(config)
    return target if isinstance(target, ControlPlaneTarget) else config.stash.get(_OWN, None)


def session_control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlaneTarget]:
    """The ``control_plane`` fixture's body: the session's control plane, started (skips without binaries)."""
    from harness.controlplane.target import make_target
    from harness.errors import BinariesMissing, ControlPlaneError

    config = request.config
    target = _session_target(config)
    own = target is None
    if target is None:
        try:
            target = make_target(config, "default", background=False)
        except BinariesMissing as exc:
            pytest.skip(str(exc))
        config.stash[_OWN] = target
    try:
        target.start()
    except ControlPlaneError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield target
    if own:
        target.stop()
        del config.stash[_OWN]


def fresh_namespace(control_plane: ControlPlaneTarget, request: pytest.FixtureRequest) -> Iterator[Kube]:
    """The ``control_plane_namespace`` fixture's body: a new namespace on ``control_plane``, deleted after."""
    from harness.artifacts import safe_name

    name = f"{safe_name(request.node.name.lower(), 40).strip('-_.').replace('_', '-') or 'spec'}-{uuid.uuid4().hex[:6]}"
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in name).strip("-")[:63]
    kube = control_plane.kube.in_namespace("default")
    kube.kubectl("create", "namespace", name)
    try:
        yield kube.in_namespace(name)
    finally:
        kube.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", timeout=DELETE_TIMEOUT)
        kube.close()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A failure of a spec that ran on the control plane keeps the end of every component's log."""
    if "control_plane" not in getattr(item, "fixturenames", ()) and item.get_closest_marker("cluster") is None:
        return
    from harness import targets

    choice = targets.target_choice(item.config)
    if "control_plane" not in getattr(item, "fixturenames", ()) and (choice is None or choice.kind != "control-plane"):
        return
    from harness.diagnostics_plugin import spec_interest
    from harness.evidence import ExtraEvidence

    logs = ExtraEvidence("control plane: component logs", "control-plane-logs.txt", _tails(item.config))
    spec_interest(item).add_extra(logs)


def _tails(config: pytest.Config) -> Any:
    def read(_kube: Any, _timeout: float) -> str | None:
        target = _session_target(config)  # read when the evidence is: a plane this spec's fixture started counts
        logs = target.logs() if target is not None else {}
        return "\n".join(f"==> {name}: {log}\n{_tail(log)}" for name, log in logs.items()) or None

    return read


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - LOG_EVIDENCE_BYTES))
            return f.read().decode(errors="replace")
    except OSError as exc:
        return f"(cannot read it: {exc})"
