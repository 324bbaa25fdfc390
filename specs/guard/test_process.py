"""Guard specs for harness.process: a call ends when its child exits, strays are killed and named, every group is
registered with the watchdog, and stderr is condensed for one-screen messages."""

from __future__ import annotations

import sys
import time

import pytest

from harness import process, wait_for_sync

SLEEPER = f"{sys.executable} -c 'import time; time.sleep(60)'"


def test_a_child_that_exits_is_done_even_while_its_own_child_holds_the_pipes() -> None:
    started = time.monotonic()
    done = process.run_bounded(["sh", "-c", f"echo out; echo err >&2; {SLEEPER} & exit 3"], timeout=20.0)
    assert time.monotonic() - started < 10.0
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert len(done.strays) == 1
    assert "time.sleep(60)" in done.strays[0]
    # Sent SIGKILL with its group; on a loaded machine the kernel needs a moment to make it go.
    stray = int(done.strays[0].split(":", 1)[0])
    assert wait_for_sync(
        "the stray to be gone", lambda: True if not _alive(stray) else None, timeout=10.0, interval=0.02
    )


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_large_output_and_input_pass_without_deadlock() -> None:
    payload = b"x" * (4 * 1024 * 1024)
    done = process.run_bounded(["cat"], timeout=30.0, input=payload)
    assert len(done.stdout) == len(payload)
    assert done.strays == ()


def test_a_child_that_does_not_exit_is_killed_at_its_bound_with_what_it_said() -> None:
    started = time.monotonic()
    with pytest.raises(process.Timeout) as caught:
        process.run_bounded(["sh", "-c", "echo partial; exec sleep 60"], timeout=0.5)
    assert caught.value.stdout == "partial\n"
    assert time.monotonic() - started < 5.0


def test_every_spawned_group_is_known_to_the_watchdog() -> None:
    proc = process.spawn(["sh", "-c", "exec sleep 60"])
    try:
        watchdog = process.watchdog_pid()
        assert watchdog is not None
        with open(f"/proc/{watchdog}/stat") as f:
            assert f.read().rsplit(")", 1)[1].split()[0] != "Z"  # alive, and not our process group's member
        assert process.group_alive(proc.pid)
    finally:
        process.kill_group(proc)
    assert not process.group_alive(proc.pid)
    assert proc.pid not in process.LIVE_CHILDREN


def test_stderr_is_condensed_repeats_once_with_a_count_and_the_cause_last() -> None:
    stderr = (
        "".join(
            f"E1130 04:00:0{i}.000000   12345 memcache.go:265] couldn't get current server API group list: refused\n"
            for i in range(5)
        )
        + "The connection to the server 127.0.0.1:8443 was refused - did you specify the right host or port?\n"
    )
    assert process.condense(stderr) == [
        "5× memcache.go:265] couldn't get current server API group list: refused",
        "The connection to the server 127.0.0.1:8443 was refused - did you specify the right host or port?",
    ]
    assert process.final_line(stderr).startswith("The connection to the server")


def test_a_long_stderr_keeps_a_bounded_tail() -> None:
    stderr = "\n".join(f"line {i}" for i in range(50))
    kept = process.condense(stderr, max_lines=4)
    assert kept == ["(46 earlier distinct lines left out)", "line 46", "line 47", "line 48", "line 49"]
    assert len(process.final_line("x" * 5000)) == 400
