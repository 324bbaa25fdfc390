"""The target server (the "pod" of the port-forward specs) prints no traceback when a client goes away."""

from __future__ import annotations

import socket
import struct

import pytest

from harness.testing.target import TargetServer


@pytest.mark.parametrize("path", ["/ok", "/big?size=4000000", "/drip?every=0.05&size=200"])
def test_a_client_that_resets_mid_exchange_prints_nothing(
    target: TargetServer, capfd: pytest.CaptureFixture[str], path: str
) -> None:
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", target.port), timeout=5.0) as client:
            client.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() sends RST
    assert target.wait_for_request(5, timeout=10.0) or len(target.requests) <= 5
    target.stop()  # joins every handler: each has met the reset by now
    out, err = capfd.readouterr()
    assert "Traceback" not in err
    assert "Error" not in err
