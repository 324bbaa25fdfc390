"""A shard's log as the run reads it (harness.jobrun.wire): records found wherever pytest's output left the line,
its files arriving whole or refused, nothing it says lost or invented."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.jobrun import wire

pytestmark = pytest.mark.timeout(60)
PAYLOAD = random.Random(7).randbytes(8000)  # incompressible: a bundle of several lines


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "shard"
    (folder / "evidence" / "spec").mkdir(parents=True)
    (folder / "junit.xml").write_text("<testsuites/>")
    (folder / "evidence" / "spec" / "index.json").write_bytes(PAYLOAD)
    return folder


def test_a_bundle_sent_through_log_lines_arrives_byte_for_byte(tmp_path: Path) -> None:
    lines = list(wire.bundle_lines(_folder(tmp_path)))
    assert all(len(line) <= len(wire.PREFIX) + len("bundle ") + wire.CHUNK for line in lines)
    reading = wire.Reading()
    reading.feed(["....." + lines[0]] + lines[1:])  # progress dots left on the line before the first record
    assert not reading.broken
    assert reading.bundle is not None
    wire.unpack(reading.bundle, tmp_path / "out")
    assert (tmp_path / "out" / "junit.xml").read_text() == "<testsuites/>"
    assert (tmp_path / "out" / "evidence" / "spec" / "index.json").read_bytes() == PAYLOAD


def test_a_bundle_missing_a_line_is_refused_with_why(tmp_path: Path) -> None:
    lines = list(wire.bundle_lines(_folder(tmp_path)))
    assert len(lines) > 3
    reading = wire.Reading()
    reading.feed(lines[:2] + lines[3:])
    assert reading.bundle is None
    assert "does not match its header" in reading.broken


def test_results_exit_and_malformed_records_are_read_as_sent() -> None:
    reading = wire.Reading()
    reading.feed(
        [
            "collected 3 items\n",
            wire.record("result", {"nodeid": "a.py::t", "outcome": "passed"}) + "\n",
            "F" + wire.record("result", {"nodeid": "a.py::u", "outcome": "failed"}) + "\r\n",
            wire.PREFIX + "result {not json\n",
            wire.record("exit", {"code": 1}) + "\n",
        ]
    )
    assert reading.results == {"a.py::t": "passed", "a.py::u": "failed"}
    assert reading.counts() == {"passed": 1, "failed": 1}
    assert (reading.exit, reading.malformed) == (1, 1)


def test_an_archive_naming_a_path_outside_its_folder_is_refused(tmp_path: Path) -> None:
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(wire.BundleBroken, match="cannot be unpacked"):
        wire.unpack(raw.getvalue(), tmp_path / "into")
    assert not (tmp_path / "escaped.txt").exists()
