"""Fixtures for the cluster-free guard specs: a scripted ``kubectl`` stand-in on PATH."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest


_STANDIN_SOURCE = Path(__file__).with_name("kubectl_standin.py")


@dataclass
class KubectlStandin:
    """Write a scenario, then read back every argv the stand-in was called with."""

    directory: Path
    current_context: str | None = "minikube"
    responses: list[dict] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.directory / "kubectl"

    @property
    def log(self) -> Path:
        return self.directory / "calls.jsonl"

    def answer(self, *match: str, stdout: str = "", stderr: str = "", exit: int = 0, sleep: float = 0, grandchild: bool = False) -> None:
        """Script the answer to the first argv containing ``match`` (in order)."""
        self.responses.append({"match": list(match), "stdout": stdout, "stderr": stderr, "exit": exit, "sleep": sleep, "grandchild": grandchild})
        self.write()

    def write(self) -> None:
        scenario = {"log": str(self.log), "current_context": self.current_context, "responses": self.responses}
        (self.directory / "scenario.json").write_text(json.dumps(scenario))

    def calls(self) -> list[dict]:
        """Each call as ``{"argv": [...], "pid": n, "pgid": n}``, in order."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def kubectl_standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KubectlStandin:
    """A scripted ``kubectl`` first on PATH (it answers ``config current-context`` with ``minikube`` by default)."""
    directory = tmp_path / "standin-bin"
    directory.mkdir()
    standin = KubectlStandin(directory)
    standin.path.write_text(f"#!{sys.executable}\n" + _STANDIN_SOURCE.read_text())
    standin.path.chmod(0o755)
    standin.write()
    monkeypatch.setenv("KUBECTL_STANDIN", str(directory / "scenario.json"))
    monkeypatch.setenv("PATH", f"{directory}:{Path(sys.executable).parent}:/usr/bin:/bin")
    return standin
