"""A failed spec against a twin on the real control plane keeps the end of each component's log
(``specs.agent_controller.twin_plugin.control_plane_logs``, registered with the harness's target evidence)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specs.agent_controller import twin_plugin
from specs.agent_controller.twin import TwinInfo, TwinSession


def session_with_logs(logs: dict[str, str]) -> TwinSession:
    session = TwinSession.__new__(TwinSession)  # only what the evidence reads: its reported info
    session.info = TwinInfo("ctx", "kc", 1.0, logs=logs)
    return session


def test_each_component_log_is_kept_from_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "kube-apiserver.log"
    log.write_bytes(b"old line\n" * 100_000 + b"the last line\n")
    started = [session_with_logs({"kube-apiserver": str(log), "etcd": str(tmp_path / "gone.log")})]
    monkeypatch.setattr(twin_plugin, "_STARTED", started)
    extras = {extra.file: extra for extra in twin_plugin.control_plane_logs()}
    assert sorted(extras) == ["control-plane-etcd.log", "control-plane-kube-apiserver.log"]
    text = extras["control-plane-kube-apiserver.log"].read(None, 1.0)  # type: ignore[arg-type]
    assert text is not None
    assert text.endswith("the last line\n")
    assert len(text.encode()) == twin_plugin.LOG_TAIL_BYTES
    assert extras["control-plane-etcd.log"].read(None, 1.0) is None  # type: ignore[arg-type]


def test_a_twin_on_the_double_adds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(twin_plugin, "_STARTED", [session_with_logs({})])
    assert twin_plugin.control_plane_logs() == []
