"""The shared leak check (``fakes.testing.no_leaks``) fails on what a test leaves behind, names it, and waits out
what is still ending; ``examples`` picks the hypothesis depth from ``FAKES_FUZZ``."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakes.testing import examples, no_leaks


def test_a_thread_left_running_fails_the_check_by_name() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, args=(10.0,), name="left-behind-worker")
    try:
        with pytest.raises(AssertionError, match="left-behind-worker"), no_leaks(settle=0.2):
            worker.start()
    finally:
        stop.set()
        worker.join(5.0)


def test_an_open_file_fails_the_check_and_names_its_target(tmp_path: Path) -> None:
    path = tmp_path / "still-open.txt"
    handle = None
    try:
        with pytest.raises(AssertionError, match="still-open.txt"), no_leaks(settle=0.2):
            handle = path.open("w")
    finally:
        if handle is not None:
            handle.close()


def test_a_thread_that_ends_while_settling_passes() -> None:
    release = threading.Event()
    worker = threading.Thread(target=release.wait, args=(10.0,), name="ending-worker")
    with no_leaks(settle=5.0):
        worker.start()
        threading.Timer(0.1, release.set).start()  # the thread ends after the block, inside the settle window
    worker.join(5.0)


def test_nothing_left_behind_passes(tmp_path: Path) -> None:
    with no_leaks(settle=0.2), (tmp_path / "closed.txt").open("w") as f:
        f.write("x")


@dataclass(frozen=True)
class _Counter:
    value: int

    def extra_over(self, base: _Counter) -> dict[str, list[str]]:
        return {"widgets": [f"{self.value - base.value} more"]} if self.value > base.value else {}


def test_any_snapshot_with_extra_over_can_be_checked() -> None:
    widgets = [0]
    with pytest.raises(AssertionError, match="widgets.*1 more"), no_leaks(lambda: _Counter(widgets[0]), settle=0.1):
        widgets[0] += 1


def test_examples_are_deep_only_under_fakes_fuzz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAKES_FUZZ", raising=False)
    assert examples(50, 5000) == 50
    monkeypatch.setenv("FAKES_FUZZ", "1")
    assert examples(50, 5000) == 5000
    monkeypatch.setenv("FAKES_FUZZ", "0")
    assert examples(50, 5000) == 50
