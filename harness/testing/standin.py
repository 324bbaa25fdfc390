"""Install and script the ``kubectl`` stand-in (:mod:`harness.testing.kubectl_standin`) in a directory.

The ``kubectl_standin`` fixture (harness.forward_fixtures) puts one on PATH per test; benchmarks use
:class:`KubectlStandIn` directly.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from harness.kube import Kube

_SCRIPT = Path(__file__).with_name("kubectl_standin.py")
DEFAULT_CONTEXT = "standin"
"""The kubeconfig context the stand-in reports (and :meth:`KubectlStandIn.kube` pins) unless told another."""
DEFAULT_NAMESPACE = "default"


class KubectlStandIn:
    """A ``kubectl`` executable in ``directory``; ``path`` is its absolute path.

    :meth:`script` sets the port-forward scenario (see :mod:`harness.testing.kubectl_standin` for the keys),
    :meth:`answer` scripts other commands, :meth:`set_current_context` and :meth:`set_contexts` the
    kubeconfig's contexts; :meth:`argvs` and
    :meth:`pids` read back what each invocation recorded (each pid leads its own process group). ``context`` and
    ``namespace``: what it reports and what :meth:`kube` pins (a project passes its own).
    """

    def __init__(self, directory: Path, *, context: str = DEFAULT_CONTEXT, namespace: str = DEFAULT_NAMESPACE) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.scenario_file = directory / "scenario.json"
        self.path = str(directory / "kubectl")
        # Cheap to start, as specs run it hundreds of times: -S skips site-packages (the script needs the standard
        # library only), and the script is loaded through the import system, which keeps its compiled bytecode
        # (runpy.run_path compiled it again on every run).
        wrapper = (
            f"#!{sys.executable} -S\n"
            "import importlib.util, os, sys\n"
            f"os.environ['KUBECTL_STANDIN_SCENARIO'] = {str(self.scenario_file)!r}\n"
            f"spec = importlib.util.spec_from_file_location('__main__', {str(_SCRIPT)!r})\n"
            "main = sys.modules['__main__'] = importlib.util.module_from_spec(spec)\n"
            "spec.loader.exec_module(main)\n"
        )
        Path(self.path).write_text(wrapper)
        os.chmod(self.path, os.stat(self.path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self._port_forward: dict[str, Any] = {}
        self._answers: list[dict[str, Any]] = []
        self.context, self.namespace = context, namespace
        self._context: str | None = context
        self._contexts: list[str] = [context]
        self.script(mode="relay", target_port=9)

    def script(self, **scenario: Any) -> KubectlStandIn:
        """Replace the port-forward scenario (``mode``, ``target_port``, ``after``, ``exit_code``, ``delay``, ...)."""
        self._port_forward = scenario
        return self._write()

    def answer(
        self,
        *match: str,
        stdout: str = "",
        stderr: str = "",
        exit: int = 0,
        sleep: float = 0.0,
        grandchild: bool = False,
    ) -> KubectlStandIn:
        """Script the answer to the first other command whose argv contains the words ``match``, in order."""
        self._answers.append(
            {
                "match": list(match),
                "stdout": stdout,
                "stderr": stderr,
                "exit": exit,
                "sleep": sleep,
                "grandchild": grandchild,
            }
        )
        return self._write()

    def set_current_context(self, name: str | None) -> KubectlStandIn:
        """What ``config current-context`` answers; ``None``: kubectl's "current-context is not set" (exit 1)."""
        self._context = name
        return self._write()

    def set_contexts(self, *names: str) -> KubectlStandIn:
        """The contexts the kubeconfig defines (``config get-contexts -o name``); default: the stand-in's context."""
        self._contexts = list(names)
        return self._write()

    def _write(self) -> KubectlStandIn:
        scenario = {
            **self._port_forward,
            "current_context": self._context,
            "contexts": self._contexts,
            "responses": self._answers,
        }
        self.scenario_file.write_text(json.dumps(scenario))
        return self

    def kube(self) -> Kube:
        """A :class:`Kube` pinned to the stand-in's context and namespace (that context alone allowed), whose kubectl
        is this stand-in."""
        return Kube(self.context, self.namespace, allowed=(self.context,), kubectl_path=self.path)

    def argvs(self) -> list[list[str]]:
        """The argv (without the program) of every invocation so far, in order."""
        log = self.dir / "argv.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def envs(self) -> list[dict[str, Any]]:
        """What each invocation saw of its environment: ``names`` (every variable) and the values of
        ``KUBECONFIG``, ``KUBERC``, ``KUBECTL_KUBERC`` and the proxy variables (``None`` when unset)."""
        log = self.dir / "env.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def pids(self) -> list[int]:
        """The pid of every invocation so far."""
        log = self.dir / "pids"
        return [int(line) for line in log.read_text().split()] if log.exists() else []
