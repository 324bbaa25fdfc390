"""Pytest plugin: the cluster specs split into shards over several targets, and the durations that split them.

Registered by :mod:`harness.pytest_plugin` once a run uses the harness. With ``N`` targets, the cluster specs are
split into ``N`` shards of whole test modules by their recorded durations (:func:`harness.shards.split_by_module`),
shard ``i`` marked ``xdist_group("cluster-<i>")``; with one target they keep the one group ``cluster``, as before
sharding.

- ``N`` is ``min(workers, targets)`` (:func:`harness.shards.shard_count`): against the twin every xdist worker starts
  its own, so ``N`` is the number of workers; against clusters, the number of ``--kube-context`` given (worker ``i``
  runs against context ``i mod len(contexts)``: :func:`harness.cluster_plugin.worker_context`). ``-n 0``, one
  ``--kube-context`` (or none) and ``--dist`` other than ``loadgroup`` give no parallel shards: with ``load`` the
  groups are ignored and the cluster lock runs the specs of one target one at a time, as before.
- Under ``--dist loadgroup`` the scheduler is :class:`harness.shard_scheduler.ShardScheduling`: xdist's own, except
  that shard ``i`` goes to worker ``i`` (the one whose context it is), one shard per worker.
- After the run, each cluster spec that ran (its call phase, passed or failed) has its set-up + call + teardown
  seconds merged into the durations file (``[tool.harness] durations_file``), from the main process: xdist workers'
  reports reach it too.
- The session header (under xdist, the workers' collections: :mod:`harness.worker_collection`) and the terminal
  summary say how the specs were split, or how one shard runs (one at a time, on one worker or on any):
  ``cluster specs: 2 shards over 2 twins (by recorded duration: 331 s, 329 s)``; the summary adds what each shard
  took and the durations file written.

PYTEST_DONT_REWRITE: loaded as a plugin; it has no assert a spec reads.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from harness import shards, worker_collection
from harness.jobrun import select
from harness.markexpr import cluster_specs_selectable

WORKER_DURATIONS = "harness_durations"
"""``workerinput`` key: the durations the main process read, so every worker splits from the same record."""

_DURATIONS = pytest.StashKey[dict[str, float]]()
_SPLIT = pytest.StashKey[shards.Split]()
_SPLIT_LINE = pytest.StashKey[str]()
_WRITTEN = pytest.StashKey[str]()
_RECORDER = "harness-cluster-durations"


def pytest_configure(config: pytest.Config) -> None:
    if not cluster_specs_selectable(config):
        return
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        config.stash[_DURATIONS] = dict(workerinput.get(WORKER_DURATIONS) or {})
        return
    config.pluginmanager.register(_Recorder(config), _RECORDER)
    try:
        config.stash[_DURATIONS] = shards.read_durations(durations_path(config))
    except shards.DurationsFileError as exc:
        raise pytest.UsageError(str(exc)) from None


def durations_path(config: pytest.Config) -> Path:
    """The session's durations file (``[tool.harness] durations_file``, else beside the ``pyproject.toml``)."""
    from harness.cluster_plugin import harness_config

    return harness_config(config).durations_path(config.rootpath)


def recorded_durations(config: pytest.Config) -> dict[str, float]:
    """The durations the split uses (``{}`` when ``-m`` leaves no cluster spec to split)."""
    return config.stash.get(_DURATIONS, {})


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist main process: ship the durations it read, so every worker computes the same split."""
    if _DURATIONS in node.config.stash:
        node.workerinput[WORKER_DURATIONS] = node.config.stash[_DURATIONS]


# --- how many shards, and which spec goes where -------------------------------------------------------------------


def workers(config: pytest.Config) -> int:
    """The number of xdist workers of this session (1 without xdist, and in a run with ``-n 0``)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return int(workerinput.get("workercount", 1))
    return int(getattr(config.option, "numprocesses", 0) or 0) or 1


def shard_targets(config: pytest.Config) -> list[str]:
    """What the shards run against, one name per shard: ``twin`` for each worker's own twin, else the kube contexts
    the workers use (``[""]`` when no ``--kube-context`` is given: kubectl's current one)."""
    from harness import targets
    from harness.cluster_plugin import kube_contexts

    count = workers(config)
    choice = targets.target_choice(config)
    if choice is not None and choice.kind == "twin":
        return ["twin"] * count
    contexts = kube_contexts(config) or [""]
    return [contexts[i % len(contexts)] for i in range(shards.shard_count(count, len(contexts)))]


def _dist(config: pytest.Config) -> str:
    """xdist's ``--dist`` in the main process (``no`` when xdist is not loaded, ``-p no:xdist``)."""
    return str(config.getoption("dist", "no") or "no")


def _loadgroup(config: pytest.Config) -> bool:
    """Whether the session runs under ``--dist loadgroup`` (xdist sets a worker's ``dist`` to ``no`` and keeps this
    as its ``loadgroup`` option: ``xdist/remote.py``)."""
    if hasattr(config, "workerinput"):
        return bool(config.getoption("loadgroup", False))
    return _dist(config) == "loadgroup"


def shard_count(config: pytest.Config) -> int:
    """``N`` for this session: 1 unless xdist's ``loadgroup`` can keep each shard on its own worker."""
    if not _loadgroup(config):
        return 1
    return len(shard_targets(config))


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    """After every other plugin (``-m``, ``-k`` deselection included): :func:`split_cluster_specs`."""
    yield
    keep_job_shard(config, items)
    split_cluster_specs(config, items)


def keep_job_shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--job-shard I/N``, deselect every spec not in shard ``I`` (:mod:`harness.jobrun.select`). Raises
    ``pytest.UsageError`` for a value that is not ``I/N``."""
    text = config.getoption("job_shard", None)
    if not text:
        return
    try:
        shard = select.JobShard.parse(str(text))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    cluster = {item.nodeid for item in items if item.get_closest_marker("cluster") is not None}
    durations = config.stash.get(_DURATIONS, None)
    if durations is None:
        durations = shards.read_durations(durations_path(config))
    _kept, dropped = select.keep([item.nodeid for item in items], cluster, durations, shard)
    gone = set(dropped)
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid in gone])
    items[:] = [item for item in items if item.nodeid not in gone]


def split_cluster_specs(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Split the cluster specs among ``items``, mark each with its shard's ``xdist_group``, and give it the
    ``@group`` node id suffix loadgroup schedules by."""
    cluster = [item for item in items if item.get_closest_marker("cluster") is not None]
    if not cluster:
        return
    split = shards.split_by_module([item.nodeid for item in cluster], recorded_durations(config), shard_count(config))
    config.stash[_SPLIT] = split
    if not config.pluginmanager.hasplugin("xdist"):  # nothing reads the group (and its marker is not registered)
        return
    loadgroup = hasattr(config, "workerinput") and _loadgroup(config)
    for item in cluster:
        group = split.group_of(item.nodeid)
        item.add_marker(pytest.mark.xdist_group(group))
        if loadgroup:
            _join_group(item, group)


def _join_group(item: pytest.Item, group: str) -> None:
    """Give the item the ``@group`` node id suffix xdist's loadgroup schedules by.

    pytest-xdist 3.8 adds it by setting ``item._nodeid`` in its own ``pytest_collection_modifyitems``, which has run
    by now (this hook wraps it) and saw no group yet; pytest 9 no longer reads ``_nodeid`` (its node ids are
    structured, in ``item._id``), so where ``_id`` exists the suffixed id goes there. The cluster lock keeps the
    specs of one target apart either way; this only keeps each shard on one worker.
    """
    if "@" in item.nodeid.rsplit("]", 1)[-1]:  # a group of the spec's own, set by xdist already
        return
    if not hasattr(item, "_id"):
        setattr(item, "_nodeid", f"{item.nodeid}@{group}")  # noqa: B010 (pytest < 9's private attribute)
        return
    try:
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(f"{item.nodeid}@{group}")
    except Exception:  # pytest's private node id API changed again: fall back to the lock alone
        return


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's scheduler, handing shard ``i`` to worker ``i`` (see the module docstring)."""
    if _dist(config) != "loadgroup":
        return None
    from harness.shard_scheduler import ShardScheduling

    return ShardScheduling(config, log)


# --- what the header and the summary say ---------------------------------------------------------------------------


def split_line(config: pytest.Config, nodeids: list[str]) -> str:
    """``cluster specs: N shards over ... (by recorded duration: a s, b s)`` for the cluster specs ``nodeids`` (with
    their ``@group`` suffix when they have one)."""
    by_shard: dict[int, list[str]] = {}
    for nodeid in nodeids:
        by_shard.setdefault(shards.shard_index(_group_of(nodeid)) or 0, []).append(nodeid)
    recorded = recorded_durations(config)
    seconds, estimated, fallback = shards.seconds_of(nodeids, recorded)
    count = max(shard_count(config), max(by_shard) + 1)  # a shard with no module (fewer modules than shards) too
    totals = [sum(seconds[shards.without_group(n)] for n in by_shard.get(i, [])) for i in range(count)]
    figures = ", ".join(f"{total:.0f} s" for total in totals)
    if not recorded:
        how = f"no durations recorded: {estimated} spec(s) counted as {fallback:.0f} s each, {figures}"
    else:
        guessed = f"; {estimated} with no record counted as {fallback:.0f} s each" if estimated else ""
        how = f"by recorded duration: {figures}{guessed}"
    if len(totals) == 1:
        spread = _spread(config)
        if spread:
            return f"cluster specs: not split, {spread} ({how})"
        return f"cluster specs: one shard, {_why_one(config)} ({how})"
    return f"cluster specs: {len(totals)} shards over {_over(config, len(totals))} ({how})"


def _spread(config: pytest.Config) -> str:
    """Under a ``--dist`` other than loadgroup with workers on several targets (two kube contexts, or each worker's
    own twin): the specs go to whichever worker is free, so to any of the targets."""
    from harness import targets
    from harness.cluster_plugin import kube_contexts

    if workers(config) < 2 or _dist(config) == "loadgroup":
        return ""
    choice = targets.target_choice(config)
    if choice is not None and choice.kind == "twin":
        over = f"{workers(config)} twins, one per worker"
    else:
        used = list(dict.fromkeys((kube_contexts(config) or [""])[: workers(config)]))
        if len(used) < 2:
            return ""
        over = "kube contexts " + ", ".join(map(repr, used))
    return (
        f"spread over {over} by --dist {config.getvalue('dist')}: a module's specs may run on different targets "
        "(--dist loadgroup gives each shard one target)"
    )


def _over(config: pytest.Config, count: int) -> str:
    names = shard_targets(config)[:count]
    if names and all(name == "twin" for name in names):
        return f"{count} twins, one per worker"
    return "kube contexts " + ", ".join(repr(name) for name in names)


def _why_one(config: pytest.Config) -> str:
    """How the specs of one shard run, and why there is only one (under loadgroup with two workers or more, only one
    kube context gives one shard: two contexts or twins give two)."""
    if workers(config) == 1:
        one_worker = getattr(config.option, "numprocesses", 0) == 1
        one = "one worker (-n 1)" if one_worker else "one process (-n 0 or no xdist)"
        return f"one at a time in {one}"
    if _dist(config) != "loadgroup":
        return (
            f"on any of the {workers(config)} workers, one at a time per kube context (the cluster lock): --dist "
            f"{config.getvalue('dist')} (only loadgroup keeps a shard on one worker)"
        )
    return "one at a time on one worker: one kube context"


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") or _SPLIT not in config.stash:
        return
    cluster = [item.nodeid for item in session.items if item.get_closest_marker("cluster") is not None]
    _announce(config, split_line(config, cluster))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """xdist main process (which collects nothing itself): the split, once every worker said which of its specs are
    cluster specs (:mod:`harness.worker_collection`, received by the harness plugin's hook, which runs first)."""
    config = node.config
    collected = worker_collection.complete(config)
    if _SPLIT_LINE in config.stash or collected is None:
        return
    cluster = worker_collection.cluster_nodeids(collected)
    if cluster:
        _announce(config, split_line(config, cluster))


def _announce(config: pytest.Config, line: str) -> None:
    config.stash[_SPLIT_LINE] = line
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"harness: {line}")


# --- durations: measured here, merged into the file at the end -------------------------------------------------


class _Recorder:
    """The main process's record of cluster spec durations (xdist workers' reports reach it too), merged into the
    durations file at the end of the session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.measured: dict[str, list[float]] = {}  # node id -> [seconds, 1.0 once its call phase ran]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "cluster" not in report.keywords:
            return
        entry = self.measured.setdefault(report.nodeid, [0.0, 0.0])
        entry[0] += float(report.duration)
        if report.when == "call" and not report.skipped:
            entry[1] = 1.0

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        ran = {nodeid: seconds for nodeid, (seconds, called) in self.measured.items() if called}
        if not ran:
            return
        path = durations_path(self.config)
        if self.config.getoption("job_shard", None):
            # A shard of a Job: the other shards may still be splitting by this file; a write now could change
            # their split mid-run, running a spec twice or never.
            self.config.stash[_WRITTEN] = f"durations not recorded: a shard of a Job leaves {_shown(path)} as it is"
            return
        if not path.exists() and not _asked_for_durations(self.config):
            self.config.stash[_WRITTEN] = (
                f"durations not recorded: no {_shown(path)} (create it, or set [tool.harness] durations_file, for "
                "the harness to keep them)"
            )
            return
        try:
            from harness.ids import state_dir

            shards.merge_durations(path, ran, lock_dir=state_dir())
        except (OSError, shards.DurationsFileError) as exc:
            self.config.stash[_WRITTEN] = f"durations not recorded: {exc}"
            return
        self.config.stash[_WRITTEN] = f"durations of {len(ran)} cluster spec(s) merged into {_shown(path)}"

    def took(self) -> str:
        """What each shard took in this run (seconds of set-up + call + teardown of its specs)."""
        per_shard: dict[int, float] = {}
        for nodeid, (seconds, _) in self.measured.items():
            index = shards.shard_index(_group_of(nodeid))
            if index is not None:
                per_shard[index] = per_shard.get(index, 0.0) + seconds
        return ", ".join(f"{per_shard[i]:.0f} s" for i in sorted(per_shard))


def _asked_for_durations(config: pytest.Config) -> bool:
    """The project asked for a durations file: ``[tool.harness] durations_file`` names one. Without it, only a file
    that already exists (one the project created or committed) is merged into: a run never adds one by itself."""
    from harness.cluster_plugin import harness_config

    return harness_config(config).durations_file is not None


def _group_of(nodeid: str) -> str:
    """The ``@group`` suffix of a node id (``cluster`` when it has none)."""
    tail = nodeid.rsplit("]", 1)[-1]
    return tail.rsplit("@", 1)[1] if "@" in tail else shards.GROUP


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    line = config.stash.get(_SPLIT_LINE, None)
    written = config.stash.get(_WRITTEN, None)
    if line is None and written is None:
        return
    terminalreporter.write_sep("-", "cluster shards")
    recorder = config.pluginmanager.get_plugin(_RECORDER)
    took = recorder.took() if isinstance(recorder, _Recorder) else ""
    if line is not None:
        terminalreporter.write_line(f"{line}; took {took}" if took else line)
    if written is not None:
        terminalreporter.write_line(written)
