"""Guard specs for wait_for: bounded attempts, hung counted apart from failed, nothing after the deadline."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import anyio
import pytest

from harness import Done, StopWaiting, WaitTimeout, current_attempt, wait_for, wait_for_sync
from harness.waiting import plural, seconds, take_recorded

SLACK = 0.5  # generous bound for a loaded CI machine; the real overrun is measured in benchmarks/bench_wait_for.py


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown, so sync probes abandoned by a spec end and their threads do not outlive it."""
    event = threading.Event()
    yield event
    event.set()


def test_never_settling_async_probe_times_out_within_budget_counted_hung() -> None:
    async def never() -> None:
        await anyio.sleep(3600)

    started = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("a probe that never settles", never, timeout=1.0, interval=0.1, probe_timeout=0.3)
    assert time.monotonic() - started < 1.0 + SLACK
    summary = caught.value.summary
    assert summary is not None
    assert summary.count("hung") >= 2
    assert summary.count("hung") + summary.count("cut") == len(summary.attempts)  # the last may meet the deadline
    assert summary.count("failed") == 0
    assert "hung at its 0.3s bound" in str(caught.value)
    assert summary.still_running == 0  # async attempts are cancelled, not abandoned


def test_never_settling_sync_probe_times_out_within_budget_and_reports_abandoned_threads(
    release: threading.Event,
) -> None:
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync(
            "a blocking probe", lambda: release.wait(30) and None, timeout=1.0, interval=0.1, probe_timeout=0.3
        )
    assert time.monotonic() - started < 1.0 + SLACK
    summary = caught.value.summary
    assert summary is not None
    assert summary.count("hung") >= 2
    assert summary.count("hung") + summary.count("cut") == len(summary.attempts)
    assert summary.still_running == len(summary.attempts)
    assert f"{len(summary.attempts)} abandoned attempts still running" in str(caught.value)


@pytest.mark.anyio
async def test_async_wait_for_with_sync_probe_is_bounded_too(release: threading.Event) -> None:
    started = time.monotonic()
    with pytest.raises(WaitTimeout):
        await wait_for(
            "a blocking probe", lambda: release.wait(30) and None, timeout=0.6, interval=0.05, probe_timeout=0.2
        )
    assert time.monotonic() - started < 0.6 + SLACK


def test_failing_probe_is_counted_failed_with_its_last_error() -> None:
    calls = []

    def refuse() -> None:
        calls.append(1)
        raise RuntimeError(f"kubectl said no ({len(calls)})")

    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("an AgentRun to be created", refuse, timeout=0.5, interval=0.05, probe_timeout=1.0)
    lines = str(caught.value).splitlines()
    assert lines[0] == "timed out after 0.5s waiting for an AgentRun to be created"  # what, first, on its own line
    assert lines[1] == f"  {len(calls)} attempts: 0 not yet, {len(calls)} failed"
    assert lines[2].startswith(f"  last error (attempt {len(calls)} at t+")
    assert lines[2].endswith(f"): RuntimeError: kubectl said no ({len(calls)})")
    assert "hung" not in str(caught.value)
    assert isinstance(caught.value, AssertionError)


def test_not_yet_attempts_are_counted_apart() -> None:
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("nothing", lambda: None, timeout=0.3, interval=0.05)
    summary = caught.value.summary
    assert summary is not None
    assert summary.count("not-yet") == len(summary.attempts) >= 2
    assert "0 failed" in str(caught.value)


def test_a_wait_that_ends_on_falsy_answers_shows_the_last_one() -> None:
    answers = iter(range(1000))
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("the pods", lambda: [] if next(answers) % 2 else 0, timeout=0.3)
    summary = caught.value.summary
    assert summary is not None
    last = summary.attempts[-1]
    assert last.outcome == "not-yet"
    assert last.answer in ("[]", "0")
    assert f"  last answer (attempt {last.number} at t+{seconds(last.start)}s): {last.answer}" in str(caught.value)


def test_a_probes_own_timeout_at_the_attempts_bound_tallies_as_the_hang_it_is() -> None:
    # The probe's clamped call and the wait's bound end together: whichever notices first, the same hang is a hang.
    def probe() -> None:
        attempt = current_attempt()
        assert attempt is not None
        time.sleep(attempt.remaining())
        raise TimeoutError("timed out")  # as a clamped kubectl or HTTP call raises at the attempt's deadline

    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("the probe", probe, timeout=2.0, interval=0.01, probe_timeout=0.1)
    summary = caught.value.summary
    assert summary is not None
    assert summary.count("failed") == 0, str(caught.value)
    assert summary.count("hung") + summary.count("cut") == len(summary.attempts) >= 5


def test_a_probe_that_times_out_before_its_bound_is_a_failure() -> None:
    def probe() -> None:
        raise TimeoutError("gave up early")

    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("the probe", probe, timeout=0.3, interval=0.05, probe_timeout=5.0)
    summary = caught.value.summary
    assert summary is not None
    # The last attempt may start with less time than the raise takes on a loaded machine: its TimeoutError then
    # surfaces past the deadline and is the budget's cut. Every attempt that ended inside its bound is a failure.
    inside = [a for a in summary.attempts if a.duration < a.bound]
    assert len(inside) >= 2
    assert all(a.outcome == "failed" for a in inside), summary.attempts
    assert all(a.outcome in ("failed", "cut") for a in summary.attempts), summary.attempts


def test_probe_that_hangs_once_then_answers_returns_its_value(release: threading.Event) -> None:
    calls = []

    def flaky() -> str | None:
        calls.append(1)
        if len(calls) == 1:
            release.wait(30)
            return None
        return "ready"

    assert wait_for_sync("a flaky probe", flaky, timeout=5.0, interval=0.01, probe_timeout=0.2) == "ready"
    assert len(calls) == 2


@pytest.mark.parametrize("value", [None, False, 0, 0.0, "", b"", [], {}, set(), ()], ids=repr)
def test_a_falsy_answer_is_not_yet(value: object) -> None:
    """``lambda: is_ready()`` answering ``False`` must not pass a spec: every falsy answer keeps the wait going."""
    calls = []

    def probe() -> object:
        calls.append(1)
        return value

    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("a falsy answer", probe, timeout=0.4, interval=0.05)
    summary = caught.value.summary
    assert summary is not None
    assert summary.outcome == "timeout"
    assert summary.count("not-yet") == len(summary.attempts) == len(calls) >= 2
    assert f"{len(calls)} attempts: {len(calls)} not yet, 0 failed" in str(caught.value)


@pytest.mark.anyio
@pytest.mark.parametrize("value", [None, False, 0, "", []], ids=repr)
async def test_a_falsy_answer_of_an_async_probe_is_not_yet(value: object) -> None:
    async def probe() -> object:
        return value

    with pytest.raises(WaitTimeout) as caught:
        await wait_for("a falsy answer", probe, timeout=0.3, interval=0.05)
    assert caught.value.summary is not None
    assert caught.value.summary.count("not-yet") == len(caught.value.summary.attempts) >= 2


@pytest.mark.parametrize("value", [False, 0, None, "", []], ids=repr)
def test_done_ends_the_wait_with_the_falsy_value_it_wraps(value: object) -> None:
    answers = iter([None, Done(value)])
    result = wait_for_sync("a settled falsy answer", lambda: next(answers), timeout=10.0, interval=0.01)
    assert result == value
    assert type(result) is type(value)  # unwrapped, not Done itself, and False is not 0
    [summary] = [s for s in take_recorded() if s.describe == "a settled falsy answer"]
    assert [a.outcome for a in summary.attempts] == ["not-yet", "ok"]
    assert summary.line().startswith("ok ")
    assert "2 attempts" in summary.line()


@pytest.mark.anyio
async def test_done_ends_an_async_wait_too() -> None:
    async def probe() -> Done[int]:
        return Done(0)

    assert await wait_for("a count of zero", probe, timeout=10.0, interval=0.01) == 0


@pytest.mark.parametrize("value", [True, 1, "ready", [0], {"items": []}, Done(True)], ids=repr)
def test_a_truthy_answer_ends_the_wait_and_is_returned_as_it_is(value: object) -> None:
    result = wait_for_sync("a truthy answer", lambda: value, timeout=10.0, interval=0.01)
    assert result is (value.value if isinstance(value, Done) else value)


def test_an_answer_without_a_truth_value_is_a_clear_error_at_once() -> None:
    class Ambiguous:
        def __bool__(self) -> bool:
            raise ValueError("the truth value of an array with more than one element is ambiguous")

    started = time.monotonic()
    with pytest.raises(TypeError, match=r"has no truth value .*answer None for not yet, or Done\(answer\)"):
        wait_for_sync("an array", Ambiguous, timeout=30.0, interval=0.05)
    assert time.monotonic() - started < 10.0  # at the first answer, not at the budget


def test_stop_waiting_ends_at_once_with_its_cause() -> None:
    calls = []

    async def failed_run() -> None:
        calls.append(1)
        try:
            raise LookupError("AgentRun r-1 phase Failed")
        except LookupError as cause:
            raise StopWaiting("the run failed; it will never succeed") from cause

    started = time.monotonic()
    with pytest.raises(StopWaiting) as caught:
        wait_for_sync("a run to succeed", failed_run, timeout=30.0, interval=0.1)
    assert time.monotonic() - started < 1.0
    assert len(calls) == 1
    assert isinstance(caught.value.__cause__, LookupError)


def test_budget_shorter_than_probe_timeout_bounds_the_single_attempt() -> None:
    bounds = []

    async def record_bound() -> None:
        attempt = current_attempt()
        assert attempt is not None
        bounds.append(attempt.bound)
        await anyio.sleep(3600)

    started = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("a short budget", record_bound, timeout=0.4, interval=1.0, probe_timeout=30.0)
    assert time.monotonic() - started < 0.4 + SLACK
    assert len(bounds) == 1
    assert bounds[0] <= 0.4
    # its bound was the whole budget, not probe_timeout: the deadline came first, so it is cut, not hung
    assert "1 cut short by the deadline (the last had 0.4s left)" in str(caught.value)


def test_no_attempt_starts_after_the_deadline() -> None:
    starts = []

    def probe() -> None:
        starts.append(time.monotonic())
        time.sleep(0.05)

    begun = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("slow not-yet answers", probe, timeout=0.5, interval=0.07, probe_timeout=1.0)
    # On this clock the wait starts a little after `begun` (an event loop, a thread), so allow the file's SLACK;
    # the exact check is on the wait's own timeline below.
    assert all(start - begun < 0.5 + SLACK for start in starts)
    assert caught.value.summary is not None
    timeline = caught.value.summary.attempts
    assert all(a.start < 0.5 for a in timeline)
    assert all(a.bound <= 0.5 - a.start + 0.01 for a in timeline)  # each bound is within what was left


def test_probe_reads_its_own_bound_sync_and_async() -> None:
    seen = []

    def sync_probe() -> float:
        attempt = current_attempt()
        assert attempt is not None
        seen.append(attempt.bound)
        return attempt.remaining()

    assert 0 < wait_for_sync("a bound", sync_probe, timeout=10.0, probe_timeout=2.5) <= 2.5
    assert seen == [2.5]
    assert current_attempt() is None


def test_sync_probe_returning_a_coroutine_is_a_clear_error() -> None:
    async def real() -> int:
        return 1

    with pytest.raises(TypeError, match="pass the async function itself"):
        wait_for_sync("a mistaken probe", lambda: real(), timeout=1.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout": 0},
        {"probe_timeout": 0},
        {"interval": -1},
        {"interval": 0},
        {"interval": float("nan")},
        {"timeout": float("inf")},
        {"timeout": float("nan")},
        {"interval": float("inf")},
    ],
)
def test_nonsense_budgets_are_rejected(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="wait_for"):
        wait_for_sync("anything", lambda: 1, **kwargs)


def test_wait_timeout_carries_the_per_attempt_timeline() -> None:
    calls = []

    async def mixed() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("refused")
        if len(calls) == 2:
            await anyio.sleep(3600)
        return None

    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("a mixed probe", mixed, timeout=0.8, interval=0.05, probe_timeout=0.2)
    assert caught.value.summary is not None
    timeline = caught.value.summary.attempts
    assert [a.outcome for a in timeline[:3]] == ["failed", "hung", "not-yet"]
    assert timeline[0].error == "ConnectionError: refused"
    assert [a.number for a in timeline] == list(range(1, len(timeline) + 1))
    assert all(
        later.start >= earlier.start + earlier.duration for earlier, later in zip(timeline, timeline[1:], strict=False)
    )


def test_abandoned_sync_attempts_are_daemon_threads_and_capped(release: threading.Event) -> None:
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync(
            "a probe that blocks forever", lambda: release.wait(60), timeout=2.0, interval=0.001, probe_timeout=0.02
        )
    summary = caught.value.summary
    assert summary is not None
    probes = [t for t in threading.enumerate() if t.name.startswith("wait_for probe #")]
    assert probes
    assert all(t.daemon for t in probes)  # they cannot keep the interpreter from exiting
    assert summary.still_running == len(probes) == 32  # the cap: further attempts fail instead of piling up threads
    assert summary.count("failed") > 0
    assert "abandoned attempts of this probe are still running" in str(caught.value)


def test_a_process_whose_probe_never_returns_still_exits_promptly() -> None:
    import subprocess
    import sys

    script = (
        "import threading; from harness import wait_for_sync, WaitTimeout\n"
        "try: wait_for_sync('forever', lambda: threading.Event().wait(), timeout=0.3, probe_timeout=0.1)\n"
        "except WaitTimeout: print('timed out')\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "timed out"
    assert time.monotonic() - started < 15  # interpreter start-up included; a non-daemon probe thread would never exit


def test_a_wait_longer_than_the_test_timeout_fails_first_with_its_own_message(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from harness import wait_for_sync

        @pytest.mark.timeout(4)
        def test_long_wait():
            wait_for_sync("a deployment that never rolls out", lambda: None, timeout=600.0, interval=0.1)
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "WaitTimeout: timed out after " in out
    assert "waiting for a deployment that never rolls out" in out
    # What the clamp guarantees: the wait ended inside the test's timeout, with a margin, and said so. How much
    # of the 4 s was left when the wait began depends on the machine's load, so the figure is only bounded.
    clamped = re.search(
        r"budget clamped from 600\.0s to ([0-9.]+)s: what was left of the test's 4\.0s "
        r"pytest-timeout, less 1\.0s for its teardown",
        out,
    )
    assert clamped is not None, out
    assert 0.0 <= float(clamped.group(1)) <= 3.0
    assert "Timeout (>4.0s) from pytest-timeout" not in out
    assert "INTERNALERROR" not in out


def test_at_the_cap_a_wait_waits_for_a_slot_instead_of_spinning(release: threading.Event) -> None:
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync(
            "a probe that blocks forever", lambda: release.wait(60), timeout=2.0, interval=0.001, probe_timeout=0.02
        )
    summary = caught.value.summary
    assert summary is not None
    # At most 32 abandoned attempts; past them each attempt waits its whole 0.02 s bound for one to end, so a 2 s
    # wait makes at most 32 + 100 attempts. Failing at once instead spun through thousands of attempts a second,
    # and their garbage made a loaded machine's wait overrun its budget.
    assert summary.count("hung") <= 32
    assert len(summary.attempts) < 32 + 150
    if summary.count("failed"):
        assert "none ended within" in str(caught.value)


def test_a_probe_error_waiting_cannot_fix_ends_the_wait_after_two_attempts() -> None:
    from harness.errors import KubectlUnrecoverable, WaitStopped

    calls = []

    def refused() -> None:
        calls.append(1)
        raise KubectlUnrecoverable(
            ["kubectl", "get", "pods"],
            1,
            "The connection to the server x:1 was refused\n",
            reason="api-server-refused",
            hint="start the cluster",
        )

    with pytest.raises(WaitStopped) as caught:
        wait_for_sync("pods", refused, timeout=30.0, interval=0.05)
    assert len(calls) == 2
    assert caught.value.summary.outcome == "stopped"
    assert isinstance(caught.value.error, KubectlUnrecoverable)
    assert "fix: start the cluster" in str(caught.value)


def test_an_attempt_the_deadline_cuts_is_not_called_a_hang() -> None:
    """A probe that answers "not yet" in 50 ms every time: the last attempt starts with a sliver of the budget left
    and is cut by the deadline. That is not a hang (the probe never took longer than 50 ms), and no attempt starts
    with under a millisecond left."""

    def fifty_ms() -> None:
        time.sleep(0.05)

    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync("a 50 ms probe", fifty_ms, timeout=2.11, interval=1.0, probe_timeout=5.0)
    summary = caught.value.summary
    assert summary is not None
    assert summary.count("hung") == 0
    assert "hung" not in str(caught.value)
    assert all(a.bound >= 0.001 for a in summary.attempts)
    assert "e-0" not in str(caught.value)  # no 7.23e-06s in a message


def test_seconds_and_plurals_read_as_english() -> None:
    assert seconds(0.0000072) == "<0.001"
    assert seconds(0.3) == "0.3"
    assert plural(1, "attempt") == "1 attempt"
    assert plural(3, "attempt") == "3 attempts"
