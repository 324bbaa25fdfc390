"""Guard specs for harness.process: a call ends when its child exits, strays are killed and named, every group is
registered with the watchdog, and stderr is condensed for one-screen messages."""

from __future__ import annotations

import select
import signal
import subprocess
import sys
import threading
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


@pytest.fixture(params=["setpriv", "preexec_fn"])
def start_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each way spawn sets the parent-death signal: util-linux's setpriv then exec (vfork), or Python between fork
    and exec (no setpriv on the machine)."""
    if request.param == "setpriv":
        if process._pdeathsig_launcher() is None:
            pytest.skip("no setpriv with --pdeathsig on this machine (util-linux 2.33 or later)")
    else:
        monkeypatch.setattr(process, "_pdeathsig_launcher", lambda: None)
    return str(request.param)


def _spawn_and_see_it_run(spawned: list[subprocess.Popen[bytes]]) -> None:
    proc = process.spawn(["sh", "-c", "echo up; exec sleep 60"])
    spawned.append(proc)
    assert proc.stdout is not None
    if select.select([proc.stdout], [], [], 30.0)[0]:  # bounded: the thread ends either way
        proc.stdout.readline()


def test_a_child_dies_with_the_thread_that_spawned_it(start_path: str) -> None:
    # PR_SET_PDEATHSIG fires when the spawning *thread* ends (prctl(2)): a thread that spawns and returns shows it
    # without ending this process. The thread waits for the child's first line: setpriv sets the signal just before
    # it execs the program, so until then an ending thread would not be seen (process.py says so).
    spawned: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(target=_spawn_and_see_it_run, args=(spawned,))
    thread.start()
    thread.join(60.0)
    [proc] = spawned
    try:
        assert proc.wait(timeout=30.0) == -signal.SIGKILL, f"{start_path}: the child outlived its thread"
    finally:
        process.kill_group(proc)


def test_the_child_runs_the_program_found_on_its_path_with_the_arguments_given(start_path: str, tmp_path) -> None:
    program = tmp_path / "bin" / "echo-args"
    program.parent.mkdir()
    program.write_text('#!/bin/sh\necho "$@"\n')
    program.chmod(0o755)
    env = {"PATH": f"{program.parent}:/usr/bin:/bin"}
    done = process.run_bounded(["echo-args", "get", "pods", "--output=json"], timeout=30.0, env=env)
    assert (done.returncode, done.stdout) == (0, "get pods --output=json\n")


def test_a_program_that_cannot_run_raises_what_popen_raises(start_path: str, tmp_path) -> None:
    before = dict(process.LIVE_CHILDREN)
    with pytest.raises(FileNotFoundError) as missing:
        process.spawn(["no-such-program-here", "x"], env={"PATH": str(tmp_path)})
    assert missing.value.filename == "no-such-program-here"
    with pytest.raises(FileNotFoundError):
        process.spawn([str(tmp_path / "absent")])
    not_executable = tmp_path / "plain-file"
    not_executable.write_text("echo no\n")
    with pytest.raises(PermissionError):
        process.spawn([str(not_executable)])
    assert before == process.LIVE_CHILDREN, "a start that failed was registered as a live child"


WATCHED = """
import asyncio, os, signal, sys
from harness import process

async def main():
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; time.sleep(120)", start_new_session=True,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    if sys.argv[1] == "watched":
        process.watch_group(child.pid)
    else:
        process.spawn([sys.executable, "-c", "pass"]).wait()  # the watchdog runs, but knows nothing of the child
    print(child.pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no teardown, no atexit

asyncio.run(main())
"""


@pytest.mark.parametrize("watched", [True, False], ids=["watched", "unwatched"])
def test_a_group_started_without_spawn_dies_with_this_process_once_watched(watched: bool) -> None:
    argv = [sys.executable, "-c", WATCHED, "watched" if watched else "unwatched"]
    inner = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert inner.returncode == -signal.SIGKILL, inner.stderr
    child = int(inner.stdout.split()[0])
    try:
        gone = (
            wait_for_sync(
                "the child to be gone", lambda: True if not _alive(child) else None, timeout=10.0, interval=0.05
            )
            if watched
            else not _alive(child)
        )
        assert gone is watched  # an unwatched group outlives it: what watch_group is for
    finally:
        if _alive(child):
            process.kill_pid_group(child)
