"""Live progress of long waits: nothing for a short wait, a line rewritten in place on a terminal, periodic lines in CI
logs and under xdist, and no thread left behind."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import pytest

from harness import progress, wait_for_sync


class Screen:
    """Collects what progress writes."""

    def __init__(self) -> None:
        self.text = ""
        self.lock = threading.Lock()

    def write(self, text: str) -> None:
        with self.lock:
            self.text += text


@pytest.fixture
def screen() -> Iterator[Screen]:
    shown = Screen()
    before = progress.configure(write=shown.write, threshold=0.3, period=0.4, mode="lines", prefix="")
    yield shown
    progress.restore(before)


def slow_wait(seconds: float) -> None:
    state = {"calls": 0}

    def probe() -> str | None:
        state["calls"] += 1
        if state["calls"] == 2:
            raise RuntimeError("connection refused")
        return None

    with pytest.raises(AssertionError):
        wait_for_sync("the gateway to answer", probe, timeout=seconds, interval=0.1)


def ticker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "harness progress"]


def test_a_short_wait_shows_nothing(screen: Screen) -> None:
    progress.configure(threshold=5.0)
    slow_wait(0.3)
    assert screen.text == ""


def test_lines_mode_prints_a_line_per_period_and_a_closing_line(screen: Screen) -> None:
    slow_wait(2.0)
    lines = screen.text.splitlines()
    progress_lines = [line for line in lines if line.startswith("waiting for the gateway to answer: ")]
    assert len(progress_lines) >= 2
    assert "s of 2.0s, attempt " in progress_lines[0]
    assert "1 failed)" in progress_lines[-1]
    assert re.fullmatch(r"done waiting for the gateway to answer after 2\.\ds: timeout, \d+ attempts", lines[-1])
    assert "\r" not in screen.text


def test_live_mode_rewrites_one_line_and_erases_it(screen: Screen) -> None:
    progress.configure(mode="live")
    slow_wait(2.0)
    assert screen.text.startswith("\n\r\x1b[Kwaiting for the gateway to answer: ")
    assert screen.text.count("\r\x1b[Kwaiting for") >= 2  # redrawn in place
    assert screen.text.endswith("\r\x1b[K")  # erased when the wait ended
    assert "\n" not in screen.text[1:]


def test_auto_picks_lines_when_the_output_is_no_terminal(screen: Screen) -> None:
    progress.configure(mode="auto", terminal=False)
    slow_wait(1.0)
    assert "\r" not in screen.text
    assert "waiting for the gateway to answer" in screen.text


def test_off_shows_nothing_and_starts_no_thread(screen: Screen) -> None:
    progress.configure(mode="off")
    seen: list[int] = []

    def probe() -> None:
        seen.append(len(ticker_threads()))

    with pytest.raises(AssertionError):
        wait_for_sync("x", probe, timeout=0.5, interval=0.1)
    assert screen.text == ""
    assert set(seen) == {0}


def test_no_ticker_thread_outlives_the_wait(screen: Screen) -> None:
    during: list[int] = []

    def probe() -> None:
        during.append(len(ticker_threads()))

    with pytest.raises(AssertionError):
        wait_for_sync("y", probe, timeout=0.5, interval=0.1)
    assert max(during) == 1
    assert ticker_threads() == []


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="progress mode must be one of auto, live, lines, off"):
        progress.configure(mode="fancy")
    with pytest.raises(ValueError, match="period > 0"):
        progress.configure(period=0)


def test_progress_reaches_the_real_stderr_through_pytests_capture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_inner="""
import pytest
from harness import progress, wait_for_sync

def test_waits():
    progress.configure(threshold=0.2, period=0.5)
    with pytest.raises(AssertionError):
        wait_for_sync("the slow thing", lambda: None, timeout=1.5, interval=0.1)
"""
    )
    result = pytester.runpytest_subprocess("--progress", "lines", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1)
    result.stderr.fnmatch_lines(
        [
            "waiting for the slow thing: *s of 1.5s, attempt *",
            "done waiting for the slow thing after 1.*s: timeout, * attempts",
        ]
    )
