"""Which specs one shard of a sharded run keeps: ``--job-shard I/N``.

The cluster specs are split as the main job splits them over ``N`` targets (:func:`harness.shards.split_by_module`,
the same durations file, the same ``N``), so shard ``I`` of an Indexed Job runs exactly what xdist worker ``I`` would;
the other selected specs are split among themselves by the same rule. Every pod computes the split from the same
checkout, so the shards together run each selected spec exactly once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness import shards

_SPEC = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class JobShard:
    """Shard ``index`` (0-based) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> JobShard:
        """``"1/4"`` -> ``JobShard(1, 4)``. Raises ``ValueError`` naming what is wrong (not ``I/N``, ``N`` < 1,
        ``I`` outside ``0..N-1``)."""
        matched = _SPEC.fullmatch(text.strip())
        if matched is None:
            raise ValueError(f"--job-shard wants I/N (shard I of N, I from 0), got {text!r}")
        index, count = int(matched.group(1)), int(matched.group(2))
        if count < 1 or index >= count:
            raise ValueError(f"--job-shard {text}: I must be 0..N-1 and N at least 1")
        return cls(index, count)


def keep(
    nodeids: Sequence[str], cluster: set[str], durations: Mapping[str, float], shard: JobShard
) -> tuple[list[str], list[str]]:
    """``(kept, dropped)`` node ids of ``nodeids`` for ``shard``; ``cluster`` names the cluster specs among them."""
    kept: set[str] = set()
    for part in ([n for n in nodeids if n in cluster], [n for n in nodeids if n not in cluster]):
        if part:
            split = shards.split_by_module(part, durations, shard.count)
            kept |= {n for n in part if split.shard_of[shards.module_of(n)] == shard.index}
    return [n for n in nodeids if n in kept], [n for n in nodeids if n not in kept]
