"""Exec in the Kubernetes API double without a client: statuses, handler conventions, the bounded host command."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from fakes.kube import exec as kexec
from fakes.kube.exec import ExecRequest, ExecResult

BOUND = 10.0


class Channels:
    """Collects what the exec code writes per channel; serves scripted stdin."""

    def __init__(self, stdin: list[bytes] | None = None) -> None:
        self.out: dict[int, bytes] = {}
        self._stdin = list(stdin or [])

    async def write(self, channel: int, data: bytes) -> None:
        self.out[channel] = self.out.get(channel, b"") + data

    async def read_stdin(self) -> bytes:
        return self._stdin.pop(0) if self._stdin else b""


def request(
    command: list[str],
    *,
    stdin: bool = False,
    tty: bool = False,
    channels: Channels | None = None,
) -> ExecRequest:
    req = ExecRequest("ns", "pod-1", "app", command, stdin, True, not tty, tty)
    req._channels = channels or Channels()
    return req


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, BOUND))


def test_exit_statuses_are_what_kubectl_turns_into_its_exit_code() -> None:
    assert kexec.exit_status(0, ["true"]) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    failure = kexec.exit_status(3, ["sh", "-c", "exit 3"])
    assert failure["status"] == "Failure"
    assert failure["reason"] == "NonZeroExitCode"
    assert failure["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}


def test_internal_status_names_its_cause() -> None:
    status = kexec.internal_status("boom")
    assert status["reason"] == "InternalError"
    assert status["code"] == 500
    assert status["message"] == "Internal error occurred: boom"


@pytest.mark.parametrize(
    ("returned", "code"),
    [(None, 0), (0, 0), (5, 5), (ExecResult(2, stdout="o", stderr="e"), 2), (ExecResult(), 0)],
)
def test_a_plain_handler_may_return_a_result_an_exit_code_or_none(returned: ExecResult | int | None, code: int) -> None:
    channels = Channels()
    status = run(kexec._call_handler(lambda req: returned, request(["x"], channels=channels), 5.0))
    assert status == kexec.exit_status(code, ["x"])
    if isinstance(returned, ExecResult) and returned.stdout:
        assert channels.out == {kexec.STDOUT: b"o", kexec.STDERR: b"e"}


def test_a_handler_returning_something_else_is_an_internal_error_not_a_crash() -> None:
    def wrong(req: object) -> Any:
        return "ok"  # deliberately outside the handler's declared return type

    status = run(kexec._call_handler(wrong, request(["x"]), 5.0))
    assert status["reason"] == "InternalError"
    assert "returned 'ok'" in status["message"]


def test_a_raising_handler_is_reported_with_its_exception() -> None:
    def broken(req: ExecRequest) -> int:
        raise KeyError("missing fixture")

    status = run(kexec._call_handler(broken, request(["x"]), 5.0))
    assert "raised KeyError: 'missing fixture'" in status["message"]


def test_a_plain_handler_gets_the_whole_stdin() -> None:
    channels = Channels(stdin=[b"line 1\n", b"line 2\n"])
    seen: list[bytes] = []

    def handler(req: ExecRequest) -> int:
        seen.append(req.stdin_data)
        return 0

    run(kexec._call_handler(handler, request(["cat"], stdin=True, channels=channels), 5.0))
    assert seen == [b"line 1\nline 2\n"]


def test_an_async_handler_streams_and_with_a_tty_stderr_joins_stdout() -> None:
    channels = Channels()

    async def handler(req: ExecRequest) -> int:
        await req.write_stdout("a")
        await req.write_stderr(b"b")
        return 1

    status = run(kexec._call_handler(handler, request(["x"], tty=True, channels=channels), 5.0))
    assert channels.out == {kexec.STDOUT: b"ab"}
    assert status["details"]["causes"][0]["message"] == "1"


def test_a_handler_past_its_timeout_is_an_internal_error_naming_the_bound() -> None:
    async def slow(req: ExecRequest) -> int:
        await asyncio.sleep(30)
        return 0

    start = time.monotonic()
    status = run(kexec._call_handler(slow, request(["x"]), 0.3))
    assert time.monotonic() - start < 5.0
    assert "did not finish within 0.3s" in status["message"]


def test_the_host_command_streams_output_and_its_exit_code() -> None:
    channels = Channels(stdin=[b"from stdin"])
    req = request(["sh", "-c", "cat; echo; echo to-stderr >&2; exit 4"], stdin=True, channels=channels)
    status = run(kexec._run_on_host(req, 5.0))
    assert channels.out == {kexec.STDOUT: b"from stdin\n", kexec.STDERR: b"to-stderr\n"}
    assert status == kexec.exit_status(4, req.command)


def test_the_host_command_sees_which_pod_it_plays() -> None:
    channels = Channels()
    run(kexec._run_on_host(request(["sh", "-c", "echo $KUBE_DOUBLE_NAMESPACE/$HOSTNAME"], channels=channels), 5.0))
    assert channels.out[kexec.STDOUT] == b"ns/pod-1\n"


def test_a_host_command_past_its_timeout_dies_with_its_whole_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = ["sh", "-c", f"sleep 30 & echo $! > {pids}; echo $$ >> {pids}; wait"]
    start = time.monotonic()
    status = run(kexec._run_on_host(request(command), 0.5))
    assert time.monotonic() - start < 8.0
    assert "did not finish within 0.5s" in status["message"]
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"pid {pid} of the timed-out command survived"


def test_a_missing_host_binary_is_the_runtimes_error() -> None:
    status = run(kexec._run_on_host(request(["no-such-binary-here"]), 5.0))
    assert 'exec: "no-such-binary-here": executable file not found in $PATH' in status["message"]


@pytest.mark.parametrize(
    ("value", "seconds"), [(None, 30.0), ("5", 5.0), ("0", 30.0), ("nan", 30.0), ("x", 30.0), ("9999", 600.0)]
)
def test_timeout_annotation_is_read_within_bounds(value: str | None, seconds: float) -> None:
    assert kexec._timeout(value) == seconds


def _alive(pid: int) -> bool:
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
        except OSError:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.02)
    return True
