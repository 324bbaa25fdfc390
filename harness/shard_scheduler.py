"""pytest-xdist's ``loadgroup`` scheduler, with each cluster shard on its own worker: shard ``i`` on worker ``i``.

xdist's :class:`~xdist.scheduler.LoadGroupScheduling` (``xdist/scheduler/loadscope.py``) makes one work unit per
``xdist_group`` and hands units out from the front of a queue: one to each worker, then one more to every worker with
at most two specs pending, then the next whenever a worker runs low. With ``loadscopereorder`` (the default) the
queue is sorted by unit size, largest first, ties in collection order. So two shards reach two workers only while
both are at the front of the queue and the first has more than two specs: a shard of one or two long specs, a shard
behind cluster-free specs of equal size (each cluster-free spec is a unit of one), or ``--no-loadscope-reorder``
can put two shards on one worker, which then runs them one after the other against its one target. And which worker
gets which shard follows the order the workers came up in, while each worker's kube context follows its number.

This subclass changes one step, which unit a worker gets next (``_assign_work_unit``): a worker first gets the shard
planned for it, and never a shard planned for another live worker. The plan, made once when the first unit is
handed out (the queue and the live workers are known then), gives shard ``i`` of ``N`` to a worker whose number is
``i`` modulo ``N`` (worker ``i`` runs against context ``i`` mod the number of contexts, and ``N`` is at most that
number, so this is the worker whose context is shard ``i``'s), else to any worker with no shard yet. A shard whose
worker is gone (crashed, or shut down by xdist for having no work) is an ordinary unit again, for whoever asks next.
Everything else (the queue, the low-water mark of two, collection checks, shutdown) is xdist's own.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadGroupScheduling

from harness.shards import shard_index


def worker_number(node: Any) -> int:
    """``3`` of the xdist worker ``gw3`` (``0`` when its id has no number)."""
    workerid = str(node.workerinput.get("workerid", ""))
    digits = workerid.removeprefix("gw")
    return int(digits) if digits.isdigit() else 0


class ShardScheduling(LoadGroupScheduling):  # type: ignore[misc]  # xdist ships no type information
    """``--dist loadgroup`` with the cluster shards planned onto distinct workers (see the module docstring)."""

    _plan: dict[Any, str] | None = None

    def _assign_work_unit(self, node: Any) -> None:
        scope = self._next_scope(node)
        if scope is not None:
            self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)

    def _next_scope(self, node: Any) -> str | None:
        """The unit ``node`` gets next: its planned shard, else the first unit not planned for another live worker
        (``None``: leave the queue's order as it is)."""
        plan = self._plan if self._plan is not None else self._make_plan()
        mine = plan.get(node)
        if mine is not None and mine in self.workqueue:
            return mine
        live = set(self.nodes)
        taken = {shard for owner, shard in plan.items() if owner is not node and owner in live}
        return next((scope for scope in self.workqueue if scope not in taken), None)

    def _make_plan(self) -> dict[Any, str]:
        shards = sorted(
            (scope for scope in self.workqueue if shard_index(scope) is not None), key=lambda s: shard_index(s) or 0
        )
        count = len(shards)
        free = sorted(self.nodes, key=worker_number)
        plan: dict[Any, str] = {}
        for shard in shards:  # each to the worker whose number is the shard's, modulo the number of shards
            own = next((n for n in free if worker_number(n) % count == shard_index(shard)), None)
            if own is not None:
                plan[own] = shard
                free.remove(own)
        for shard in [s for s in shards if s not in plan.values()]:
            if free:
                plan[free.pop(0)] = shard
        self._plan = plan
        return plan
