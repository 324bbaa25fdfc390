"""What ``send_webhook`` and ``verify_signature`` refuse to do quietly: a delivery that fails raises a named error
carrying the recorded delivery (unless the caller asks for the result), a payload over GitHub's 25 MB cap is never
sent, and ``verify_signature`` cannot be called with its arguments in the wrong order."""

from __future__ import annotations

import socket

import pytest

from fakes.github import (
    MAX_PAYLOAD_BYTES,
    DeliveryFailed,
    DeliveryLog,
    redeliver,
    send_reordered,
    send_webhook,
    sign_sha256,
    verify_signature,
)
from fakes.github.webhooks import build_request
from fakes.server import FakeHandle
from specs.github.receiver import Receiver

SECRET = "s3cret"  # the receiver fixture's secret


def _closed_port() -> int:
    """A loopback port that refuses connections: bound by us, never listening (released when the test ends)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_receiver_that_is_down_raises_delivery_failed_with_the_delivery() -> None:
    log = DeliveryLog()
    url = f"http://127.0.0.1:{_closed_port()}/webhooks/github"
    with pytest.raises(DeliveryFailed) as failed:
        send_webhook(url, "issues", {"action": "opened"}, secret=SECRET, log=log, timeout=5.0)
    delivery = failed.value.delivery
    assert delivery.status is None
    assert delivery.error is not None
    assert "ConnectError" in delivery.error
    assert log.all() == [delivery]  # recorded before raising: nothing is lost
    message = str(failed.value)
    assert message.startswith(f"webhook delivery {delivery.id} (issues.opened) to {url} failed: ConnectError")
    assert "check=False" in message


def test_check_false_returns_the_failed_delivery_instead() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/hook"
    delivery = send_webhook(
        url, "issues", {"action": "opened"}, secret=SECRET, log=DeliveryLog(), timeout=5.0, check=False
    )
    assert delivery.ok is False
    assert delivery.error is not None


def test_a_non_2xx_answer_raises_and_names_the_status(receiver: FakeHandle[Receiver]) -> None:
    log = DeliveryLog()
    with pytest.raises(DeliveryFailed, match=r"the receiver answered HTTP 401: .*signature mismatch") as failed:
        send_webhook(f"{receiver.url}/hook", "issues", {"action": "opened"}, secret="wrong", log=log)
    assert failed.value.delivery.status == 401
    assert len(receiver.app.received) == 1  # sent once, not retried


def test_redeliver_and_reordered_batches_raise_after_every_attempt(receiver: FakeHandle[Receiver]) -> None:
    log = DeliveryLog()
    first = send_webhook(f"{receiver.url}/hook", "issues", {"action": "opened"}, secret=SECRET, log=log)
    receiver.fault("status", "/hook", status=503)
    with pytest.raises(DeliveryFailed, match="HTTP 503") as again:
        redeliver(first.id, log=log)
    assert again.value.delivery.redelivery is True
    with pytest.raises(DeliveryFailed):
        send_reordered(
            f"{receiver.url}/hook", [("issues", {"action": "opened", "n": n}) for n in range(3)], secret=SECRET, log=log
        )
    assert len(receiver.requests(path_prefix="/hook")) == 5  # 1 + the redelivery + all 3 of the batch


def test_a_payload_over_githubs_25_mb_cap_is_refused_before_sending(receiver: FakeHandle[Receiver]) -> None:
    assert MAX_PAYLOAD_BYTES == 25 * 1024 * 1024
    build_request("issues", b"x" * MAX_PAYLOAD_BYTES, secret=SECRET)  # at the cap: fine
    with pytest.raises(ValueError, match=r"over GitHub's 25 MB cap \(26214400 bytes\)"):
        build_request("issues", b"x" * (MAX_PAYLOAD_BYTES + 1), secret=SECRET)
    big = {"action": "opened", "blob": "y" * (26 * 1024 * 1024)}  # 26 MiB
    with pytest.raises(ValueError, match="25 MB cap"):
        send_webhook(f"{receiver.url}/hook", "issues", big, secret=SECRET, log=DeliveryLog())
    assert receiver.requests(path_prefix="/hook") == []


def test_verify_signature_takes_keywords_only() -> None:
    body = b'{"zen":"ok"}'
    header = sign_sha256(SECRET, body)
    assert verify_signature(secret=SECRET, body=body, header=header) is True
    with pytest.raises(TypeError):
        verify_signature(SECRET, body, header)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        verify_signature(body, SECRET, header)  # type: ignore[call-arg,arg-type]  # the order that once returned False


@pytest.mark.parametrize(("secret", "body"), [(42, b"{}"), (SECRET, "{}"), (SECRET, {"zen": "ok"}), (SECRET, None)])
def test_verify_signature_refuses_arguments_of_the_wrong_type(secret: object, body: object) -> None:
    with pytest.raises(TypeError, match="verify_signature: (secret|body) must be"):
        verify_signature(secret=secret, body=body, header="sha256=" + "0" * 64)  # type: ignore[arg-type]
