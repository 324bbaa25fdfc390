"""What each pytest-xdist worker's collection found, handed to the main process before any spec runs.

Under xdist the main process collects nothing, and a worker's ``collectionfinish`` event carries bare node ids, no
markers (``xdist/remote.py``), so the main process cannot tell which specs are cluster specs, nor print the header a
run of one process prints. Each worker therefore sends the node ids of its cluster specs and its own header lines over
an execnet channel of its gateway: the main process opens it in ``pytest_configure_node`` and passes it in
``workerinput`` (execnet sends channels over channels); the worker sends from a ``tryfirst``
``pytest_collection_finish``, before xdist's own hook sends ``collectionfinish``, so the message is there when the main
process handles that event. It waits at most :data:`RECEIVE_TIMEOUT` for it all the same.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import pytest

KEY = "harness_collection"
"""``workerinput`` key of the channel."""

RECEIVE_TIMEOUT = 5.0
"""Seconds the main process waits for a worker's message once that worker's ``collectionfinish`` arrived."""

_EXPECTED = pytest.StashKey[list[str]]()  # workers given a channel, in order
_COLLECTED = pytest.StashKey[dict[str, "Collected"]]()


@dataclass(frozen=True)
class Collected:
    """One worker's collection: the node ids of its cluster specs (with their ``@group`` suffix under
    ``--dist loadgroup``) and the header lines it would print as a run of one process."""

    worker: str
    cluster: tuple[str, ...]
    lines: tuple[str, ...]


def open_channel(node: Any) -> None:
    """Main process, ``pytest_configure_node``: give worker ``node`` a channel to answer on (not a worker started
    later to replace one that crashed: what the workers collected has been shown by then)."""
    config = node.config
    if complete(config) is not None:
        return
    expected = config.stash.setdefault(_EXPECTED, [])
    expected.append(str(node.workerinput.get("workerid", "")))
    node.workerinput[KEY] = node.gateway.newchannel()


def send(config: pytest.Config, cluster: list[str], lines: list[str]) -> None:
    """Worker: hand what its collection found to the main process (nothing when it gave this worker no channel)."""
    channel = (getattr(config, "workerinput", None) or {}).get(KEY)
    if channel is None:
        return
    with contextlib.suppress(OSError):  # the main process closed it (it is shutting down): nothing to tell
        channel.send({"cluster": cluster, "lines": lines})


def receive(node: Any) -> None:
    """Main process, ``pytest_xdist_node_collection_finished`` (the harness plugin's, first): take worker
    ``node``'s message."""
    config = node.config
    workerid = str(node.workerinput.get("workerid", ""))
    collected = config.stash.setdefault(_COLLECTED, {})
    channel = node.workerinput.get(KEY)
    if channel is not None and workerid not in collected:
        collected[workerid] = _read(channel, workerid)


def complete(config: pytest.Config) -> dict[str, Collected] | None:
    """Every worker's collection once the last worker given a channel at start has answered, else ``None``."""
    collected = config.stash.get(_COLLECTED, {})
    expected = config.stash.get(_EXPECTED, [])
    return dict(collected) if expected and len(collected) >= len(expected) else None


def _read(channel: Any, workerid: str) -> Collected:
    try:
        data = channel.receive(timeout=RECEIVE_TIMEOUT)
    except (EOFError, OSError, channel.TimeoutError, channel.RemoteError):  # it said nothing: nothing to show of it
        data = {}
    finally:
        channel.close()
    return Collected(workerid, tuple(data.get("cluster") or ()), tuple(data.get("lines") or ()))


def merged_lines(collected: dict[str, Collected]) -> list[str]:
    """The workers' header lines, each once: as it is when every worker with cluster specs said it, else followed by
    the workers that did (``[gw0]``: a twin of each worker's own, a context of its own)."""
    speaking = sorted((c for c in collected.values() if c.cluster), key=_worker_order)
    said: dict[str, list[str]] = {}
    for worker in speaking:
        for line in worker.lines:
            said.setdefault(line, []).append(worker.worker)
    return [line if len(who) == len(speaking) else f"{line} [{', '.join(who)}]" for line, who in said.items()]


def _worker_order(collected: Collected) -> tuple[int, str]:
    """``gw2`` before ``gw10``: the order xdist numbers its workers, not the order they finished collecting."""
    digits = collected.worker.removeprefix("gw")
    return (int(digits) if digits.isdigit() else -1, collected.worker)


def cluster_nodeids(collected: dict[str, Collected]) -> list[str]:
    """Every cluster spec some worker collected, each once, in the order the workers listed them."""
    return list(dict.fromkeys(nodeid for c in sorted(collected.values(), key=_worker_order) for nodeid in c.cluster))
