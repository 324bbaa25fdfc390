"""Where a run's diagnostics go: the run id, the artifacts folder and its layout, and safe writes into it.

Layout (``DIR`` is ``--artifacts``, default ``artifacts/`` under pytest's rootdir; a run folder exists only when the
run had something to keep, and only the newest ``[tool.harness] keep_runs`` (default 20) are kept)::

    DIR/<run id>/report.html          the run's timeline (one self-contained file)
    DIR/<run id>/<spec folder>/        evidence of one failed spec (index.json, INDEX.txt, ...)
    DIR/<run id>/.timeline/<proc>.jsonl  per-process spec records the report is drawn from
    DIR/<run id>/.failed/<module>      a marker per module with a failure (shared by pytest-xdist workers)
    DIR/<run id>/.kept.jsonl           resources kept after a failure, for the terminal summary

The run id (``20261130-233535-1a2b3c``: UTC start time and 6 random hex digits) is also the value of the label
every object the harness creates carries (:data:`RUN_LABEL`), so it must be a valid label value: at most 63
characters of ``[A-Za-z0-9._-]``, starting and ending alphanumeric (Kubernetes API conventions, labels).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import tempfile
import time
from pathlib import Path

from harness.errors import ArtifactsNotWritable as ArtifactsNotWritable  # re-exported: defined in harness.errors

DEFAULT_EVIDENCE_BUDGET = 60.0
"""Seconds evidence collection may take per failed spec (``--evidence-budget``; :mod:`harness.evidence`)."""
RUN_LABEL = "stack-harness.dev/run"
ISSUE_LABEL = "stack-harness.dev/issue"
_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")
_MAX_NAME = 120


def new_run_id() -> str:
    """``YYYYmmdd-HHMMSS-xxxxxx`` (UTC): sortable, unique enough, a valid label value."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def safe_name(text: str, limit: int = _MAX_NAME) -> str:
    """``text`` as one file name: runs of other characters become ``_``; names longer than ``limit`` keep their
    start and end a hash of the whole, so two long names never collide."""
    flat = _UNSAFE.sub("_", text).strip("._") or "_"
    if len(flat) <= limit:
        return flat
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return f"{flat[: limit - 11]}-{digest}"


def spec_folder_name(nodeid: str) -> str:
    """The evidence folder of a spec: its node id made a file name (``specs_x_test_y.py__test_z_param_``)."""
    return safe_name(nodeid.replace("::", "__").replace("/", "_"))


def ensure_writable(folder: Path) -> Path:
    """Create ``folder`` (and parents) and prove a file can be written there; returns it resolved.

    Raises :class:`ArtifactsNotWritable` naming the folder, the reason and the fix.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ArtifactsNotWritable(
            f"the artifacts folder {str(folder)!r} is not writable ({exc.strerror or exc}): evidence of failed specs "
            "could not be kept; pass --artifacts DIR with a writable folder"
        ) from None
    return folder.resolve()


def check_creatable(folder: Path) -> None:
    """Prove ``folder`` could be created and written, creating nothing: its nearest existing ancestor is a writable
    folder. Raises :class:`ArtifactsNotWritable` naming the folder, the reason and the fix."""
    probe = folder.resolve()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    why = None if probe.is_dir() else "not a folder"
    if why is None and not os.access(probe, os.W_OK | os.X_OK):
        why = "permission denied"
    if why is not None:
        raise ArtifactsNotWritable(
            f"the artifacts folder {str(folder)!r} is not writable ({why} at {probe}): evidence of failed specs "
            "could not be kept; pass --artifacts DIR with a writable folder"
        )


_RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


def prune_runs(base: Path, *, keep: int, current: str) -> list[Path]:
    """Remove the oldest run folders under ``base`` (names that are run ids; they sort by start time) beyond the
    newest ``keep``; never ``current``, never anything else in ``base``. Returns what was removed; a folder that
    cannot be removed is left (another run may still be writing it)."""
    try:
        runs = sorted(p for p in base.iterdir() if p.is_dir() and _RUN_ID.match(p.name) and p.name != current)
    except OSError:
        return []
    removed = []
    for folder in runs[: max(0, len(runs) - (keep - 1))]:
        try:
            shutil.rmtree(folder)
        except OSError:
            continue
        removed.append(folder)
    return removed


def write_text(path: Path, text: str) -> int:
    """Write ``text`` (UTF-8) to ``path`` atomically (a temporary file renamed over it); returns its size in bytes."""
    data = text.encode("utf-8", errors="replace")
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(scratch, "wb") as handle:
        handle.write(data)
    os.replace(scratch, path)
    return len(data)


def append_line(path: Path, line: str) -> None:
    """Append one line (``O_APPEND``: lines from several processes do not interleave mid-line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line.rstrip("\n") + "\n").encode())
    finally:
        os.close(fd)
