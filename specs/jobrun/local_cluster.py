"""A cluster for the sharded run on this machine: ``python -m specs.jobrun.local_cluster JOBRUN_ARGS...``.

Starts a real control plane (:mod:`harness.controlplane`, no kwok node) whose one node is a
:class:`fakes.kube.node.LocalNode`, so the scheduler binds every shard's pod to it and the pod's container (this
checkout's interpreter, :mod:`harness.jobrun.plan`) runs as a process here; then runs ``python -m harness.jobrun
--context <the plane's> --kubeconfig <its> JOBRUN_ARGS...`` in this process, and stops node and plane on every path
(Ctrl-C and SIGTERM included). Exit status: the run's.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

from fakes.kube.node import LocalNode
from harness.controlplane.plane import ControlPlane, Settings
from harness.errors import BinariesMissing
from harness.jobrun import __main__ as jobrun


def _sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _sigterm)
    plane = ControlPlane(Settings(nodes=0))
    try:
        plane.start_kept()
    except BinariesMissing as exc:
        print(f"local cluster: {exc}", file=sys.stderr)
        return 2
    try:
        with LocalNode(plane.kubeconfig):
            print(f"local cluster: control plane {plane.url} (context {plane.context}) with one local node", flush=True)
            return jobrun.main(["--context", plane.context, "--kubeconfig", str(plane.kubeconfig), *argv])
    except KeyboardInterrupt:
        return 130
    finally:
        plane.release()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
