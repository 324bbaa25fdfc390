"""``--job-shard I/N`` (harness.jobrun.select): the shards of an Indexed Job together run each spec exactly once,
and the cluster specs split as the main job splits them over ``N`` targets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import shards
from harness.jobrun.select import JobShard, keep

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("text", "why"),
    [("1", "wants I/N"), ("2/2", "0..N-1"), ("0/0", "0..N-1"), ("-1/2", "wants I/N"), ("a/b", "wants I/N")],
)
def test_a_value_that_is_not_a_shard_of_n_is_refused_with_what_is_wanted(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        JobShard.parse(text)


modules = st.lists(st.sampled_from([f"specs/m{i}.py" for i in range(8)]), min_size=1, max_size=30)


@given(modules, st.integers(min_value=1, max_value=5), st.data())
def test_the_shards_together_keep_every_spec_exactly_once(paths: list[str], count: int, data: st.DataObject) -> None:
    nodeids = [f"{path}::t{i}" for i, path in enumerate(paths)]
    cluster = set(data.draw(st.lists(st.sampled_from(nodeids), unique=True)))
    durations = {n: float(data.draw(st.integers(min_value=0, max_value=40))) for n in nodeids}
    kept = [n for i in range(count) for n in keep(nodeids, cluster, durations, JobShard(i, count))[0]]
    assert sorted(kept) == sorted(nodeids)


def test_the_cluster_specs_split_as_the_main_job_splits_them_over_n_targets() -> None:
    cluster = [f"specs/cluster/test_{name}.py::t" for name in "abcdefg"]
    others = ["specs/guard/test_x.py::t", "specs/guard/test_y.py::t"]
    durations = {n: float(10 * (i + 1)) for i, n in enumerate(cluster)}
    main_job = shards.split_by_module(cluster, durations, 3)
    for index in range(3):
        kept, _ = keep(cluster + others, set(cluster), durations, JobShard(index, 3))
        assert [n for n in kept if n in cluster] == [
            n for n in cluster if main_job.shard_of[shards.module_of(n)] == index
        ]


def test_a_module_never_spans_two_shards() -> None:
    nodeids = [f"specs/test_m.py::t{i}" for i in range(5)] + ["specs/test_n.py::t"]
    kept = [keep(nodeids, set(), {}, JobShard(i, 2))[0] for i in range(2)]
    assert {len(part) for part in kept} == {5, 1}
