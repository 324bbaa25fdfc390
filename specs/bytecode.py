"""Rewrite the suite's modules once, in the xdist controller, before the workers start.

pytest rewrites the asserts of every test module and conftest, and of every module of a distribution that provides a
``pytest11`` plugin (``harness`` and ``fakes`` here), and caches the result beside the source as
``__pycache__/<name>.<cache tag>-pytest-<version>.pyc``. On a fresh clone nothing is cached yet, and each xdist worker
imports, rewrites and writes the same modules at the same moment, six times over with 6 workers on 2 cores. Here
the controller writes every missing or stale one first, split over the cores (284 modules: 3.8 s of CPU, 2 s of wall
on 2 cores), in pytest's own format and by pytest's own functions, so every worker finds it cached; a cached tree
costs only the check (0.13 s). It runs in xdist's ``pytest_xdist_setupnodes``, after the session's clock started, so
the run's reported duration includes it. Measured on 2 cores, 6 workers collecting this suite (``-k`` matching
nothing) from a fresh clone: 24-26 s of wall and 46-48 s of CPU without it, 20-23 s and 35-44 s with it; 15-19 s and
29-36 s with everything cached.

The functions used are pytest internals (``_pytest.assertion.rewrite``: its reader decides what is stale, its
rewriter and writer make the file): if they are missing, nothing is written and each worker rewrites for itself, as
pytest does without this plugin. A run without workers, or with ``--assert=plain``, or with bytecode writing off
(``PYTHONDONTWRITEBYTECODE``), is left alone.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from fnmatch import fnmatch
from pathlib import Path

import pytest

REWRITTEN_PACKAGES = ("harness", "fakes")
"""The packages of this repository's distribution, which pytest rewrites as the plugin's (its ``pytest11`` entry
point), relative to the rootdir."""


def modules_to_rewrite(rootdir: Path, top_dirs: Iterable[Path], python_files: Iterable[str]) -> Iterator[Path]:
    """The ``.py`` files a worker would rewrite: test modules (matching ``python_files``) and conftests under
    ``top_dirs``, and every module of ``REWRITTEN_PACKAGES`` under ``rootdir``."""
    patterns = list(python_files)
    for top in top_dirs:
        for path in sorted(top.rglob("*.py")):
            if path.name == "conftest.py" or any(fnmatch(path.name, p) for p in patterns):
                yield path
    for package in REWRITTEN_PACKAGES:
        yield from sorted((rootdir / package).rglob("*.py"))


def rewrite_ahead(config: pytest.Config, sources: Iterable[Path], *, processes: int = 1) -> int:
    """Write pytest's rewritten pyc for each of ``sources`` whose cached one is missing or stale (as pytest's own
    reader finds it), split over ``processes`` (forked from this one; each given ``CHILD_BUDGET`` seconds, then
    killed); returns how many are now cached that were not. Returns 0 when pytest's rewrite functions cannot be
    found. A source that cannot be read or parsed, or whose cache cannot be written, is skipped: the worker that
    imports it reports the error, or rewrites it in memory as pytest does in a read-only tree."""
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, get_cache_dir
        from _pytest.assertion.rewrite import assertstate_key as key
    except ImportError:
        return 0
    state = config.stash.get(key, None)
    if state is None:
        return 0

    def cached(source: Path) -> Path:
        return get_cache_dir(source) / (source.name[:-3] + PYC_TAIL)

    def rewrite(part: list[Path]) -> None:
        for source in part:
            with contextlib.suppress(SyntaxError, ValueError, OSError):
                source_hash, code = _rewrite_test(source, config)
                cached(source).parent.mkdir(exist_ok=True)
                _write_pyc(state, code, source_hash, cached(source))

    stale = [source for source in sources if _read_pyc(source, cached(source)) is None]
    _split(rewrite, stale, processes)
    return sum(_read_pyc(source, cached(source)) is not None for source in stale)


CHILD_BUDGET = 120.0
"""Seconds a forked rewriting process may take (it rewrites a few hundred modules in a few seconds)."""


def _split(work: Callable[[list[Path]], None], items: list[Path], processes: int) -> None:
    """``work`` on ``items`` split ``processes`` ways: this process takes one part, forked children the others."""
    parts = [part for part in (items[i::processes] for i in range(max(1, processes))) if part]
    if not parts:
        return
    fork = multiprocessing.get_context("fork")
    children = [fork.Process(target=work, args=(part,), daemon=True) for part in parts[1:]]
    for child in children:
        child.start()
    try:
        work(parts[0])
    finally:
        deadline = time.monotonic() + CHILD_BUDGET
        for child in children:
            child.join(max(0.0, deadline - time.monotonic()))
            if child.is_alive():
                child.kill()
                child.join(5.0)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config) -> None:
    """xdist's controller calls this before it starts any worker (and after the session's clock started, so the
    time spent here counts in the run's reported duration)."""
    if sys.dont_write_bytecode or config.getoption("assertmode") != "rewrite":
        return
    here = config.invocation_params.dir
    args = [a.split("::")[0] for a in config.args] or list(config.getini("testpaths"))
    top_dirs = [(here / a).resolve() for a in args if (here / a).is_dir()]
    sources = modules_to_rewrite(config.rootpath, top_dirs, config.getini("python_files"))
    rewrite_ahead(config, sources, processes=len(os.sched_getaffinity(0)))
