"""What starting a child costs a pytest-sized process: ``harness.process.spawn`` (util-linux's ``setpriv`` sets the
parent-death signal, the child is started by ``vfork``) against the same start with the signal set from Python
between ``fork`` and ``exec`` (``preexec_fn``, which forces a full ``fork``). Nothing is asserted.

Run: ``python benchmarks/bench_spawn.py``. The process first imports the fakes and touches 150 MB, about the size of
a pytest-xdist worker of this suite (300 MB resident), since a ``fork``'s cost grows with the parent's memory.
Printed per way: the parent's CPU (user + system) and the child's, per start, over ``/bin/true``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import process

STARTS = 200 if os.environ.get("HARNESS_BENCH") == "long" else 50


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _with_preexec_fn() -> None:
    proc = subprocess.Popen(
        ["/bin/true"], start_new_session=True, preexec_fn=process._die_with_parent, stdout=subprocess.DEVNULL
    )
    proc.wait(timeout=30.0)


def _with_spawn() -> None:
    proc = process.spawn(["/bin/true"])
    proc.communicate(timeout=30.0)
    process.kill_group(proc)


def main() -> int:
    import fakes.kube
    import fakes.openai
    import fakes.qdrant  # noqa: F401  (imported for their size: a worker-sized interpreter)

    ballast = [bytearray(1 << 20) for _ in range(150)]
    for block in ballast:
        block[:: 1 << 12] = b"x" * len(block[:: 1 << 12])
    print(f"parent resident: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; {STARTS} starts each")
    if process._pdeathsig_launcher() is None:
        print("(no setpriv with --pdeathsig here: spawn uses preexec_fn too)")
    for label, start in (("spawn (setpriv, vfork)", _with_spawn), ("preexec_fn (fork)", _with_preexec_fn)):
        own0, children0 = _cpu()
        began = time.monotonic()
        for _ in range(STARTS):
            start()
        own1, children1 = _cpu()
        parent, child = (own1 - own0) / STARTS * 1e3, (children1 - children0) / STARTS * 1e3
        wall = (time.monotonic() - began) / STARTS * 1e3
        print(f"{label:24} parent {parent:6.2f} ms CPU, child {child:6.2f} ms CPU, {wall:6.2f} ms wall per start")
    return 0


if __name__ == "__main__":
    sys.exit(main())
