"""``specs.agent_controller.invoke.InvokeClient`` against a scripted ``/invoke`` double on a real socket, and once
through a real kubectl port-forward (the Kubernetes API double): 202-then-poll, the record's fields, rejections, and
every way a poll can fail, each reported with its cause."""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from fakes.server import FakeHandle, serve_fake
from harness import StopWaiting, port_forward
from harness.errors import PortForwardGone
from specs.agent_controller.errors import InvocationNotFound, InvokeProtocolError, InvokeRejected, InvokeTimeout
from specs.agent_controller.invoke import InvokeClient, PendingToolCall
from specs.clients.invoke_double import InvokeDouble, Plan
from specs.kube.kube_streams import running_pod, service

pytestmark = pytest.mark.timeout(60)

BATTERY_TOOL = {
    "type": "function",
    "function": {
        "name": "get_device_battery",
        "description": "battery of a device",
        "parameters": {"type": "object", "properties": {}},
    },
}


@pytest.fixture
def orchestrator() -> Iterator[FakeHandle]:
    with serve_fake(InvokeDouble()) as handle:
        yield handle


def double(handle: FakeHandle) -> InvokeDouble:
    app = handle.app
    assert isinstance(app, InvokeDouble)
    return app


def client(handle: FakeHandle, **kw: object) -> InvokeClient:
    return InvokeClient(handle.url, timeout=5.0, **kw)  # type: ignore[arg-type]


def test_a_turn_posts_the_body_then_polls_until_it_settles(orchestrator: FakeHandle) -> None:
    double(orchestrator).plans.append(Plan(polls=3, final={"status": "succeeded", "result": {"text": "ok"}}))
    record = client(orchestrator).turn(
        "hello", session_id="chat-1", tools=[BATTERY_TOOL], tool_choice="auto", interval=0.05
    )
    assert record.status == "succeeded"
    assert record.result == {"text": "ok"}
    assert record.has_result is True
    assert record.pending_tool_calls == ()
    assert double(orchestrator).bodies == [
        {"request": "hello", "session_id": "chat-1", "tools": [BATTERY_TOOL], "tool_choice": "auto"}
    ]
    assert list(double(orchestrator).polls.values()) == [3]
    posts = orchestrator.requests(path_prefix="/invoke", method="POST")
    assert [(e.status, e.headers["content-type"]) for e in posts] == [(202, "application/json")]


def test_pending_tool_calls_come_back_without_a_result(orchestrator: FakeHandle) -> None:
    calls = [{"id": "call_1", "name": "get_device_battery", "arguments": '{"serial":"SN-4417"}'}]
    double(orchestrator).plans.append(Plan(polls=1, final={"status": "succeeded", "pendingToolCalls": calls}))
    record = client(orchestrator).turn("battery of SN-4417?", tools=[BATTERY_TOOL], interval=0.05)
    assert record.pending_tool_calls == (PendingToolCall("call_1", "get_device_battery", '{"serial":"SN-4417"}'),)
    assert record.has_result is False
    assert record.result is None


def test_a_failed_turn_is_a_record_to_assert_on_not_an_exception(orchestrator: FakeHandle) -> None:
    double(orchestrator).plans.append(Plan(polls=2, final={"status": "failed", "error": "went silent for 30000ms"}))
    record = client(orchestrator).turn("narrate", interval=0.05)
    assert record.status == "failed"
    assert record.error == "went silent for 30000ms"


def test_a_rejected_body_is_the_status_the_orchestrator_gave(orchestrator: FakeHandle) -> None:
    bad_tool = {"type": "function", "function": {"name": "not valid!", "parameters": {}}}
    with pytest.raises(InvokeRejected) as rejected:
        client(orchestrator).submit("hello", tools=[bad_tool])
    assert rejected.value.status == 400
    assert "invalid tool name" in rejected.value.body
    assert "answered HTTP 400, not 202" in str(rejected.value)
    assert client(orchestrator).post({"request": ""}).status_code == 400
    assert double(orchestrator).bodies == []


def test_the_bearer_is_sent_and_a_wrong_one_is_refused(orchestrator: FakeHandle) -> None:
    assert client(orchestrator).submit("hello")
    with pytest.raises(InvokeRejected) as refused:
        client(orchestrator, bearer="someone-else").submit("hello")
    assert refused.value.status == 401


def test_a_202_without_an_id_breaks_the_contract(orchestrator: FakeHandle) -> None:
    orchestrator.fault("status", "/invoke", method="POST", status=202, body='{"status":"pending"}', times=1)
    with pytest.raises(InvokeRejected, match="202 without an id"):
        client(orchestrator).submit("hello")


def test_still_pending_at_the_budget_says_what_the_last_record_carried(orchestrator: FakeHandle) -> None:
    double(orchestrator).plans.append(Plan(polls=10_000))
    invoke = client(orchestrator)
    invocation_id = invoke.submit("link me")
    with pytest.raises(InvokeTimeout) as timed_out:
        invoke.wait(invocation_id, timeout=3.0, interval=0.05)
    assert f"waiting for /invoke/{invocation_id}" in str(timed_out.value)
    assert "last record: status pending" in str(timed_out.value)
    assert timed_out.value.last is not None
    assert timed_out.value.last.status == "pending"
    assert timed_out.value.summary is not None
    assert timed_out.value.summary.count("not-yet") >= 1


def test_a_forgotten_invocation_is_reported_as_a_404_not_as_pending(orchestrator: FakeHandle) -> None:
    invoke = client(orchestrator)
    invocation_id = invoke.submit("hello")
    double(orchestrator).forget()
    with pytest.raises(InvocationNotFound):
        invoke.fetch(invocation_id)
    with pytest.raises(InvokeTimeout) as timed_out:
        invoke.wait(invocation_id, timeout=3.0, interval=0.05)
    assert "InvocationNotFound" in str(timed_out.value)
    assert "answered 404" in str(timed_out.value)
    assert timed_out.value.last is None


def test_a_hung_poll_is_bounded_and_named(orchestrator: FakeHandle) -> None:
    invoke = client(orchestrator)
    invocation_id = invoke.submit("hello")
    orchestrator.fault("hang", "/invoke/*", method="GET")
    started = time.monotonic()
    with pytest.raises(InvokeTimeout) as timed_out:
        InvokeClient(orchestrator.url, timeout=0.3).wait(invocation_id, timeout=3.0, interval=0.05)
    assert time.monotonic() - started < 15.0  # generous: the budget is 3 s, each poll 0.3 s
    assert "ServiceTimeout" in str(timed_out.value)


def test_a_record_that_breaks_the_contract_ends_the_wait_at_once(orchestrator: FakeHandle) -> None:
    double(orchestrator).plans.append(Plan(polls=1, final={"status": "done"}))
    invoke = client(orchestrator)
    invocation_id = invoke.submit("hello")
    with pytest.raises(StopWaiting) as stopped:
        invoke.wait(invocation_id, timeout=30.0, interval=0.05)
    assert isinstance(stopped.value.__cause__, InvokeProtocolError)
    assert "status 'done'" in str(stopped.value)
    assert double(orchestrator).polls[invocation_id] == 1


def test_a_turn_through_a_real_port_forward_and_a_forward_that_is_gone(orchestrator: FakeHandle, fake_kube) -> None:
    port = urlsplit(orchestrator.url).port
    assert port is not None
    running_pod(fake_kube, "agent-orchestrator-0", labels={"app": "orchestrator"}, ports={8081: port})
    service(fake_kube, "agent-orchestrator-invoke", {"app": "orchestrator"}, 8081, 8081)
    double(orchestrator).plans.append(Plan(polls=2))
    with port_forward(fake_kube.kube(), "svc/agent-orchestrator-invoke", 8081) as forward:
        invoke = InvokeClient(forward, timeout=5.0)
        assert invoke.turn("hello", interval=0.05).status == "succeeded"
        pending = invoke.submit("hello again")
    with pytest.raises(StopWaiting) as stopped:
        invoke.wait(pending, timeout=30.0, interval=0.05)
    assert isinstance(stopped.value.__cause__, PortForwardGone)
    assert "svc/agent-orchestrator-invoke" in str(stopped.value)
