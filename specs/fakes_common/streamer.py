"""A minimal FakeApp answering with streamed bodies, for specs of the shared streaming machinery.

``GET /stream?n=N&delay=S`` streams N chunks ``chunk-<i>\\n`` (each after S seconds); ``GET /broken`` streams two
chunks, then its iterator raises; ``GET /whole`` answers a whole (not streamed) body of 10 bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

from fakes.core import FakeRequest, FakeResponse, StreamChunk


class StreamFake:
    name = "streamer"
    unrecorded_paths = frozenset({"/healthz"})

    def handle(self, request: FakeRequest) -> FakeResponse:
        if request.path == "/stream":
            count = int(request.query_param("n", "5") or 5)
            delay = float(request.query_param("delay", "0") or 0)
            return FakeResponse.streamed(
                200, [StreamChunk(f"chunk-{i}\n".encode(), delay) for i in range(count)], content_type="text/plain"
            )
        if request.path == "/broken":
            return FakeResponse.streamed(200, _broken())
        if request.path == "/whole":
            return FakeResponse(200, [("content-type", "text/plain")], b"0123456789")
        return FakeResponse.text(404, "no such route")

    def reset(self) -> None:
        pass


def _broken() -> Iterator[StreamChunk]:
    yield StreamChunk(b"data: one\n\n")
    yield StreamChunk(b"data: two\n\n")
    raise RuntimeError("the fake's stream broke (on purpose)")
