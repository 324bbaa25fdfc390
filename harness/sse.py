"""An incremental server-sent events decoder (the WHATWG HTML "event stream" format), fed bytes as they arrive.

Lines end with CRLF, LF or CR, each acted on as soon as it is complete (a CR ends its line at once; an LF that
opens the next chunk is then the rest of a CRLF, not a blank line); a line
starting with ``:`` is a comment (servers send them as keep-alives); ``data:`` lines (one optional space after the
colon) accumulate, joined by newlines, until a blank line dispatches the event; ``event:`` names it; other fields
(``id``, ``retry``) are ignored. UTF-8 is decoded incrementally, so a character split across chunks is kept whole,
and one byte order mark at the start of the stream is dropped, as the format's decoding step says (kept, it would
make the first field's name ``\ufeffdata`` and silently lose the first event).
An event not closed by a blank line when the stream ends is dropped, as the format specifies.

The harness keeps its own decoder (rather than a client library's) because a spec wants to see the comments too:
a chat stream that only ever sends keep-alives is a parked turn, not a dead connection.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True)
class SSEFrame:
    """One dispatched event (``data`` set, ``event`` its name or ``None``) or one comment line (``comment`` set)."""

    data: str | None = None
    event: str | None = None
    comment: str | None = None


class SSEDecoder:
    """Feed bytes with :meth:`feed`, get the complete frames so far; :meth:`close` at the end of the stream."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")  # utf-8, less a leading BOM
        self._buffer = ""
        self._data: list[str] = []
        self._event: str | None = None
        self._after_cr = False

    def feed(self, chunk: bytes) -> list[SSEFrame]:
        """The frames completed by ``chunk`` (possibly none), in order."""
        self._buffer += self._text.decode(chunk)
        frames: list[SSEFrame] = []
        while True:
            line = self._next_line()
            if line is None:
                return frames
            frame = self._line(line)
            if frame is not None:
                frames.append(frame)

    def close(self) -> list[SSEFrame]:
        """Flush at the end of the stream: a last line without its terminator still counts; an event without its
        closing blank line is dropped."""
        self._buffer += self._text.decode(b"", final=True)
        frames = self.feed(b"")
        if self._buffer:
            line, self._buffer = self._buffer.rstrip("\r"), ""
            frame = self._line(line)
            if frame is not None:
                frames.append(frame)
        return frames

    def _next_line(self) -> str | None:
        """The next complete line. A CR ends its line at once (CR, LF and CRLF are all line ends: WHATWG HTML,
        "Server-sent events", parsing): an LF that then arrives first in the next chunk is CRLF's second half."""
        if self._after_cr and self._buffer:
            self._buffer = self._buffer[1:] if self._buffer[0] == "\n" else self._buffer
            self._after_cr = False
        ends = [i for i in (self._buffer.find("\n"), self._buffer.find("\r")) if i >= 0]
        if not ends:
            return None
        i = min(ends)
        line, rest = self._buffer[:i], self._buffer[i + 1 :]
        if self._buffer[i] == "\r":
            if rest.startswith("\n"):
                rest = rest[1:]
            elif not rest:
                self._after_cr = True  # CRLF may be split between chunks
        self._buffer = rest
        return line

    def _line(self, line: str) -> SSEFrame | None:
        if line == "":
            if not self._data:
                self._event = None
                return None
            frame = SSEFrame(data="\n".join(self._data), event=self._event)
            self._data, self._event = [], None
            return frame
        if line.startswith(":"):
            return SSEFrame(comment=line[1:].lstrip(" "))
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None
