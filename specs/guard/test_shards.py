"""The split of cluster specs into shards (harness.shards): whole test modules, longest first, each to the shard with
the least total (LPT); specs with no record; the durations file merged after a run; and the loadgroup scheduler that
puts each shard on its own worker (harness.shard_scheduler), against xdist's own scheduler on the same collection.

Process-level behaviour (real xdist workers, several kube contexts) is in specs/guard/test_cluster_shards.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling

from harness.shard_scheduler import ShardScheduling
from harness.shards import (
    DEFAULT_SECONDS,
    DurationsFileError,
    group_name,
    merge_durations,
    read_durations,
    seconds_of,
    shard_count,
    shard_index,
    split_by_module,
    without_group,
)


def _specs(**modules: list[float]) -> dict[str, float]:
    """``{node id: seconds}`` for modules ``test_<name>.py`` with one spec per given duration."""
    return {f"test_{name}.py::test_{i}": seconds for name, times in modules.items() for i, seconds in enumerate(times)}


def test_modules_stay_whole_and_the_longest_go_first_to_the_least_loaded_shard() -> None:
    # In collection order, filling the least-loaded shard would end 6 s / 2 s (the 4 s module comes last);
    # longest first gives 4 s / 4 s.
    durations = _specs(a=[1.0], b=[0.5, 0.5], c=[1.0], d=[1.0], e=[2.0, 2.0])
    split = split_by_module(list(durations), durations, 2)
    assert sorted(split.seconds) == [4.0, 4.0]
    assert split.shard_of["test_e.py"] != split.shard_of["test_a.py"]
    for nodeid in durations:  # every spec of a module in its module's shard
        assert split.group_of(nodeid) == group_name(split.shard_of[nodeid.split("::")[0]], 2)
    assert {split.group_of(n) for n in durations} == {"cluster-0", "cluster-1"}


def test_three_shards_of_a_lopsided_suite() -> None:
    durations = _specs(rollout=[95.0, 90.0], idle=[60.0], happy=[20.0, 10.0], rbac=[1.0] * 30, chat=[40.0])
    split = split_by_module(list(durations), durations, 3)
    by_shard: dict[int, set[str]] = {}
    for module, shard in split.shard_of.items():
        by_shard.setdefault(shard, set()).add(module)
    # Longest first: rollout 185, idle 60, chat 40 open the three shards; happy 30 joins chat (40, the least), then
    # rbac 30 joins idle (60 < 70).
    assert sorted(map(sorted, by_shard.values())) == [
        ["test_chat.py", "test_happy.py"],
        ["test_idle.py", "test_rbac.py"],
        ["test_rollout.py"],  # 185: one module, never split
    ]
    assert sorted(split.seconds) == [70.0, 90.0, 185.0]


def test_one_shard_is_the_single_cluster_group_as_before_sharding() -> None:
    durations = _specs(a=[3.0], b=[4.0])
    split = split_by_module(list(durations), durations, 1)
    assert {split.group_of(n) for n in durations} == {"cluster"}
    assert split.seconds == (7.0,)


def test_more_shards_than_modules_leaves_some_empty() -> None:
    durations = _specs(a=[3.0])
    split = split_by_module(list(durations), durations, 3)
    assert sorted(split.seconds) == [0.0, 0.0, 3.0]


def test_specs_with_no_record_count_as_the_median_of_the_recorded_ones_being_split() -> None:
    recorded = {"test_a.py::test_0": 2.0, "test_a.py::test_1": 4.0, "test_b.py::test_0": 90.0, "gone.py::t": 1000.0}
    collected = ["test_a.py::test_0", "test_a.py::test_1", "test_b.py::test_0", "test_new.py::test_0@cluster-1"]
    seconds, estimated, fallback = seconds_of(collected, recorded)
    assert (estimated, fallback) == (1, 4.0)  # median of 2, 4, 90: a spec no longer collected does not count
    assert seconds["test_new.py::test_0"] == 4.0
    split = split_by_module(collected, recorded, 2)
    assert (split.estimated, split.fallback) == (1, 4.0)
    assert sorted(split.seconds) == [10.0, 90.0]


def test_with_nothing_recorded_every_spec_counts_the_same() -> None:
    collected = [f"test_{m}.py::test_{i}" for m, n in (("a", 3), ("b", 1), ("c", 2)) for i in range(n)]
    split = split_by_module(collected, {}, 2)
    assert split.fallback == DEFAULT_SECONDS
    assert sorted(split.seconds) == [3 * DEFAULT_SECONDS, 3 * DEFAULT_SECONDS]  # a alone; b and c together


def test_the_split_is_the_same_whatever_the_collection_order() -> None:
    durations = _specs(a=[5.0], b=[5.0], c=[5.0], d=[5.0])  # ties everywhere
    one = split_by_module(list(durations), durations, 2)
    other = split_by_module(list(reversed(durations)), durations, 2)
    assert one.shard_of == other.shard_of


def test_shards_must_be_positive() -> None:
    with pytest.raises(ValueError, match="shards must be >= 1, got 0"):
        split_by_module(["a.py::t"], {}, 0)


@pytest.mark.parametrize(
    "workers, targets, expected",
    [(1, 1, 1), (0, 3, 1), (2, 2, 2), (4, 2, 2), (2, 5, 2), (3, 0, 1)],
    ids=["one-process", "n0", "two-twins", "more-workers", "more-contexts", "no-target"],
)
def test_one_shard_per_target_a_worker_can_have(workers: int, targets: int, expected: int) -> None:
    assert shard_count(workers, targets) == expected


def test_group_names_and_suffixes() -> None:
    assert (group_name(0, 1), group_name(0, 2), group_name(1, 2)) == ("cluster", "cluster-0", "cluster-1")
    assert [shard_index(g) for g in ("cluster", "cluster-3", "clusters-1", "db", "cluster-x")] == [
        0,
        3,
        None,
        None,
        None,
    ]
    assert without_group("specs/x/test_y.py::test_z[a@b]@cluster-12") == "specs/x/test_y.py::test_z[a@b]"
    assert without_group("specs/x/test_y.py::test_z@cluster") == "specs/x/test_y.py::test_z"
    assert without_group("specs/x/test_y.py::test_z@db") == "specs/x/test_y.py::test_z@db"  # not a shard's group


# --- the durations file --------------------------------------------------------------------------------------


def test_a_run_merges_its_durations_into_the_file_keeping_the_rest(tmp_path: Path) -> None:
    path = tmp_path / ".harness-durations.json"
    path.write_text(json.dumps({"test_a.py::test_0": 5.0, "test_b.py::test_0": 7.0}))
    merged = merge_durations(
        path, {"test_a.py::test_0@cluster-1": 6.123, "test_c.py::test_0@cluster": 1.0}, lock_dir=tmp_path / "state"
    )
    expected = {"test_a.py::test_0": 6.12, "test_b.py::test_0": 7.0, "test_c.py::test_0": 1.0}
    assert merged == expected
    assert read_durations(path) == expected
    assert list(json.loads(path.read_text())) == sorted(expected)  # sorted keys: the committed file diffs by spec
    assert sorted(p.name for p in tmp_path.iterdir()) == [".harness-durations.json", "state"]  # no temporary left


def test_a_missing_file_is_an_empty_record_and_is_created(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    assert read_durations(path) == {}
    assert merge_durations(path, {"t.py::x": 2.0}, lock_dir=tmp_path) == {"t.py::x": 2.0}


@pytest.mark.parametrize(
    "content, said",
    [
        ("{not json", "is not JSON"),
        ('["t.py::x"]', "must be a JSON object of node ids to seconds"),
        ('{"t.py::x": -1}', "must be a JSON object of node ids to seconds"),
        ('{"t.py::x": true}', "must be a JSON object of node ids to seconds"),
        ('{"t.py::x": "3"}', "must be a JSON object of node ids to seconds"),
    ],
    ids=["not-json", "a-list", "negative", "a-bool", "a-string"],
)
def test_a_malformed_file_names_itself_and_the_fix(tmp_path: Path, content: str, said: str) -> None:
    path = tmp_path / "d.json"
    path.write_text(content)
    with pytest.raises(DurationsFileError, match=f"durations file {path} {said}.*delete it"):
        read_durations(path)
    assert merge_durations(path, {"t.py::x": 2.0}, lock_dir=tmp_path) == {"t.py::x": 2.0}  # replaced, not merged


# --- the scheduler -------------------------------------------------------------------------------------------


class _Worker:
    """What xdist's schedulers use of a worker: its id, the spec indices sent, shutdown."""

    def __init__(self, workerid: str) -> None:
        self.workerinput = {"workerid": workerid}
        self.gateway = SimpleNamespace(id=workerid)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def __repr__(self) -> str:
        return str(self.workerinput["workerid"])


# A long shard of three specs, two cluster-free specs, a short shard of one spec (what LPT makes of one long module
# and one short one), in collection order.
COLLECTION = [
    "test_long.py::test_0@cluster-0",
    "test_long.py::test_1@cluster-0",
    "test_long.py::test_2@cluster-0",
    "test_free.py::test_0",
    "test_free.py::test_1",
    "test_short.py::test_0@cluster-1",
]


def _groups_per_worker(scheduler_class: Any, pytester: pytest.Pytester) -> dict[str, set[str]]:
    config = pytester.parseconfig("--tx=2*popen", "--dist=loadgroup")
    scheduler = scheduler_class(config)
    workers = [_Worker("gw1"), _Worker("gw0")]  # gw1 came up first
    for worker in workers:
        scheduler.add_node(worker)
    for worker in workers:
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    first = workers[0]
    scheduler.mark_test_complete(first, first.sent[0])  # the first worker to come up finishes a spec first
    return {str(w): {COLLECTION[i].rsplit("@", 1)[1] for i in w.sent if "@" in COLLECTION[i]} - {""} for w in workers}


def test_xdist_loadgroup_alone_can_put_both_shards_on_one_worker(pytester: pytest.Pytester) -> None:
    # xdist's loadgroup: the three-spec shard first, to the first worker up (gw1); one spec done leaves two pending,
    # its low-water mark, and the next unit of the size-ordered queue (the one-spec shard) goes to the same worker.
    assert _groups_per_worker(LoadGroupScheduling, pytester) == {"gw1": {"cluster-0", "cluster-1"}, "gw0": set()}


def test_each_shard_goes_to_its_own_worker_shard_i_to_worker_i(pytester: pytest.Pytester) -> None:
    assert _groups_per_worker(ShardScheduling, pytester) == {"gw1": {"cluster-1"}, "gw0": {"cluster-0"}}


def test_a_shard_whose_worker_is_gone_goes_to_whoever_asks(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--tx=2*popen", "--dist=loadgroup")
    scheduler = ShardScheduling(config)
    gw0, gw1 = _Worker("gw0"), _Worker("gw1")
    for worker in (gw0, gw1):
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    assert {COLLECTION[i] for i in gw1.sent} >= {"test_short.py::test_0@cluster-1"}
    lost = scheduler.remove_node(gw1)  # crashed with its shard pending: the unit is queued again
    assert lost is not None
    while scheduler.workqueue:
        scheduler._assign_work_unit(gw0)
    assert "test_short.py::test_0@cluster-1" in {COLLECTION[i] for i in gw0.sent}
