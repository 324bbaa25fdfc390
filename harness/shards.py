"""Cluster specs split into shards by recorded duration, and the durations file the harness keeps between runs.

- **Durations file** (``[tool.harness] durations_file``, default ``.harness-durations.json`` beside the project's
  ``pyproject.toml``): JSON, ``{node id: seconds}``, one entry per cluster spec that ran (set-up + call + teardown,
  floats). After each run the specs that ran are merged in (:func:`merge_durations`): their entries replaced, every
  other entry kept, the file replaced atomically under a lock, so a partial run (``-k``, one file) refines the record
  instead of erasing it. Commit it: a clean clone then splits as well as the machine that measured it.
- **Split** (:func:`split_by_module`): the cluster specs' test modules go to ``N`` shards, longest first, each to the
  shard with the least total so far: the LPT rule (longest processing time first; Graham 1969, within 4/3 of the best
  split). The unit is the test module, so a module-scoped fixture runs once, on one target. A spec with no recorded
  duration counts as the median of the recorded ones among the specs being split (:data:`DEFAULT_SECONDS` when none
  is recorded). The rule itself is ``binpacking.to_constant_bin_number``: it takes ``{module: seconds}`` as it is;
  pytest-split's ``least_duration`` splits tests, not modules (it would run a module's fixtures on two targets).
- **Groups**: shard ``i`` of ``N`` is the ``xdist_group`` :func:`group_name` (``cluster`` alone when ``N`` is 1, as
  before sharding existed), so ``--dist loadgroup`` keeps each shard on one worker.

Every worker computes the split from the same inputs (the same collection, the durations the controller read, the
same ``N``), so all of them agree on it, as pytest-xdist requires of their collections.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import statistics
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from binpacking.to_constant_bin_number import to_constant_bin_number

from harness.errors import DurationsFileError as DurationsFileError  # re-exported: defined in harness.errors
from harness.ids import lock_within

DEFAULT_SECONDS = 10.0
"""Seconds a cluster spec counts for when no spec being split has a recorded duration."""
GROUP = "cluster"
"""The ``xdist_group`` of the cluster specs when there is one shard; ``cluster-<i>`` for shard ``i`` of several."""
LOCK_TIMEOUT = 10.0
"""Seconds :func:`merge_durations` waits for another run merging into the same file."""

_SHARD_GROUP = re.compile(rf"{GROUP}-(\d+)")
_GROUP_SUFFIX = re.compile(rf"@{GROUP}(?:-\d+)?$")


@dataclass(frozen=True)
class Split:
    """Which shard each test module goes to.

    ``shard_of`` maps a module's path (the node id's part before ``::``) to its shard (``0 <= i < shards``);
    ``seconds`` is each shard's expected total (seconds, from the record); ``estimated`` counts the specs that had no
    recorded duration and ``fallback`` is the seconds each of them counted for."""

    shards: int
    shard_of: Mapping[str, int]
    seconds: tuple[float, ...]
    estimated: int
    fallback: float

    def group_of(self, nodeid: str) -> str:
        """The ``xdist_group`` of the spec ``nodeid``."""
        return group_name(self.shard_of[module_of(nodeid)], self.shards)


def group_name(shard: int, shards: int) -> str:
    """``cluster`` for the only shard, else ``cluster-<shard>``."""
    return GROUP if shards == 1 else f"{GROUP}-{shard}"


def shard_index(group: str) -> int | None:
    """``i`` for the group ``cluster-<i>``, ``0`` for ``cluster``, ``None`` for any other group name."""
    if group == GROUP:
        return 0
    matched = _SHARD_GROUP.fullmatch(group)
    return int(matched.group(1)) if matched else None


def without_group(nodeid: str) -> str:
    """The node id without the ``@cluster`` / ``@cluster-<i>`` suffix that ``--dist loadgroup`` schedules by."""
    return _GROUP_SUFFIX.sub("", nodeid)


def module_of(nodeid: str) -> str:
    """The test module's path of a node id (``specs/x/test_y.py`` of ``specs/x/test_y.py::test_z[1]``)."""
    return without_group(nodeid).split("::", 1)[0]


def seconds_of(nodeids: Iterable[str], durations: Mapping[str, float]) -> tuple[dict[str, float], int, float]:
    """Each spec's seconds (recorded, else the median of the recorded ones among ``nodeids``, else
    :data:`DEFAULT_SECONDS`), how many were estimated, and the seconds an estimated one counts for."""
    ids = [without_group(nodeid) for nodeid in nodeids]
    known = [durations[nodeid] for nodeid in ids if nodeid in durations]
    fallback = statistics.median(known) if known else DEFAULT_SECONDS
    estimated = sum(1 for nodeid in ids if nodeid not in durations)
    return {nodeid: durations.get(nodeid, fallback) for nodeid in ids}, estimated, fallback


def split_by_module(nodeids: Iterable[str], durations: Mapping[str, float], shards: int) -> Split:
    """Split the specs ``nodeids`` into ``shards`` groups of whole test modules by the LPT rule (see the module
    docstring). Deterministic: the same inputs give the same split in every process. Raises ``ValueError`` when
    ``shards`` < 1. With fewer modules than shards, some shards are empty (their total is 0)."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    seconds, estimated, fallback = seconds_of(nodeids, durations)
    modules: dict[str, float] = {}
    for nodeid in sorted(seconds):  # sorted: ties between equal modules break the same way in every process
        modules[module_of(nodeid)] = modules.get(module_of(nodeid), 0.0) + seconds[nodeid]
    if shards == 1:
        return Split(1, dict.fromkeys(modules, 0), (sum(modules.values()),), estimated, fallback)
    bins = to_constant_bin_number(modules, shards)
    shard_of = {module: shard for shard, contents in enumerate(bins) for module in contents}
    totals = tuple(sum(contents.values()) for contents in bins)
    return Split(shards, shard_of, totals, estimated, fallback)


def shard_count(workers: int, targets: int) -> int:
    """How many shards: one per target a worker can have, ``min(workers, targets)``, at least 1 (``-n 0`` is one
    process, ``workers`` 0 or 1)."""
    return max(1, min(workers, targets))


# --- the durations file --------------------------------------------------------------------------------------------


def read_durations(path: Path) -> dict[str, float]:
    """``{node id: seconds}`` from ``path``; ``{}`` when it does not exist. Raises :class:`DurationsFileError` naming
    the file when it is not a JSON object of node ids to non-negative numbers."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise DurationsFileError(f"durations file {path} cannot be read: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DurationsFileError(
            f"durations file {path} is not JSON ({exc}): fix it or delete it (the next run writes it again)"
        ) from None
    if not isinstance(data, dict) or not all(_is_seconds(v) for v in data.values()):
        raise DurationsFileError(
            f"durations file {path} must be a JSON object of node ids to seconds (non-negative numbers): fix it or "
            "delete it (the next run writes it again)"
        )
    return {str(k): float(v) for k, v in data.items()}


def _is_seconds(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def merge_durations(path: Path, measured: Mapping[str, float], *, lock_dir: Path) -> dict[str, float]:
    """Merge ``measured`` (``{node id: seconds}``, group suffixes removed) into the file at ``path`` and return what
    it now holds.

    Read, merge and replace happen under an exclusive ``flock`` on a file in ``lock_dir`` (waiting at most
    :data:`LOCK_TIMEOUT` seconds, then :class:`DurationsFileError`), so two runs finishing together both land; the
    file is written to a temporary file in its own folder and renamed over the old one (``os.replace``), so a reader
    never sees half of it. Seconds are rounded to hundredths and keys sorted, so the committed file diffs by spec.
    A file that cannot be parsed is replaced, not merged (:func:`read_durations` says so when it is read first)."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    with _locked(lock_dir / "durations.lock"):
        try:
            merged = read_durations(path)
        except DurationsFileError:
            merged = {}
        merged.update({without_group(k): round(v, 2) for k, v in measured.items()})
        merged = dict(sorted(merged.items()))
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(merged, out, indent=1)
                out.write("\n")
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
    return merged


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            lock_within(fd, LOCK_TIMEOUT, path)
        except TimeoutError:
            raise DurationsFileError(
                f"durations lock {path} still held after {LOCK_TIMEOUT:.0f}s by another run"
            ) from None
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
