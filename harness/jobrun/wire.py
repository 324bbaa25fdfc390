"""What a shard's pod tells the run through its log: one line per spec result, then its files, then its exit.

The pod's log is the one channel that works the same on every cluster (no volume, no ``kubectl cp``, no exec into
a finished container) and that outlives a deleted pod up to its last line read. Each record is one line starting
with :data:`PREFIX`, written on a line of its own (a newline first, since pytest's progress dots end no line)::

    harness-jobrun result {"nodeid": "...", "outcome": "passed", "seconds": 1.2}
    harness-jobrun bundle-begin {"bytes": 1234, "sha256": "..."}
    harness-jobrun bundle <base64, at most CHUNK characters>
    harness-jobrun bundle-end
    harness-jobrun exit {"code": 0}

The bundle is a gzipped tar of the shard's artifacts folder (its JUnit file and the evidence of its failed specs).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import BundleBroken as BundleBroken  # re-exported: defined in harness.errors

PREFIX = "harness-jobrun "
CHUNK = 1000
"""Characters of base64 per bundle line: well under a container runtime's 16 KiB line split."""
MAX_BUNDLE = 32 * 1024 * 1024
"""Bytes of bundle a reader accepts (a kubelet rotates a container's log at 10 MiB by default, so a larger bundle
could not arrive whole anyway)."""


def record(kind: str, data: Any = None) -> str:
    """One record's line (no newline)."""
    return PREFIX + kind + ("" if data is None else " " + json.dumps(data, sort_keys=True))


def bundle_lines(folder: Path) -> Iterator[str]:
    """The bundle records of ``folder``'s files (paths relative to it)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(folder)))
    data = raw.getvalue()
    yield record("bundle-begin", {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    text = base64.b64encode(data).decode()
    for start in range(0, len(text), CHUNK):
        yield record("bundle", None) + " " + text[start : start + CHUNK]
    yield record("bundle-end")


@dataclass
class Reading:
    """What one pod's log said so far: ``results`` (node id -> outcome, in order), ``exit`` (the shard's pytest exit
    code, ``None`` until said), ``bundle`` (the tar.gz bytes once whole), ``broken`` (why a bundle was refused),
    ``malformed`` (record lines that could not be read)."""

    results: dict[str, str] = field(default_factory=dict)
    exit: int | None = None
    bundle: bytes | None = None
    broken: str = ""
    malformed: int = 0
    _chunks: list[str] | None = None
    _expected: dict[str, Any] = field(default_factory=dict)

    def feed(self, lines: Iterable[str]) -> None:
        """Take log lines (records anywhere in a line count; everything else is pytest's own output)."""
        for line in lines:
            at = line.find(PREFIX)
            if at >= 0:
                try:
                    self._take(line[at + len(PREFIX) :].rstrip("\r\n"))
                except (ValueError, KeyError, TypeError):
                    self.malformed += 1

    def _take(self, text: str) -> None:
        kind, _, rest = text.partition(" ")
        if kind == "result":
            item = json.loads(rest)
            self.results[str(item["nodeid"])] = str(item["outcome"])
        elif kind == "bundle-begin":
            self._expected, self._chunks = json.loads(rest), []
        elif kind == "bundle" and self._chunks is not None:
            self._chunks.append(rest.strip())
        elif kind == "bundle-end" and self._chunks is not None:
            self._finish_bundle()
        elif kind == "exit":
            self.exit = int(json.loads(rest)["code"])

    def _finish_bundle(self) -> None:
        text, self._chunks = "".join(self._chunks or []), None
        try:
            data = base64.b64decode(text, validate=True)
        except ValueError as exc:
            self.broken = f"bundle is not base64: {exc}"
            return
        if len(data) != self._expected.get("bytes") or hashlib.sha256(data).hexdigest() != self._expected.get("sha256"):
            self.broken = f"bundle of {len(data)} bytes does not match its header {self._expected}"
            return
        self.bundle = data

    def counts(self) -> dict[str, int]:
        """``{outcome: specs}`` so far."""
        out: dict[str, int] = {}
        for outcome in self.results.values():
            out[outcome] = out.get(outcome, 0) + 1
        return out


def unpack(bundle: bytes, into: Path) -> None:
    """Extract a bundle into ``into`` (created). Raises :class:`BundleBroken` for an archive that is not one, is
    larger than :data:`MAX_BUNDLE`, or names a path outside ``into``."""
    if len(bundle) > MAX_BUNDLE:
        raise BundleBroken(f"bundle of {len(bundle)} bytes is over {MAX_BUNDLE}")
    into.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
            tar.extractall(into, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise BundleBroken(f"bundle cannot be unpacked: {exc}") from exc
