"""Nothing in the repository sends its reader to a document the repository does not hold.

A user who installs the harness has the repository and public sources, nothing else: not the developers' notes
kept beside it, and not the project's issue tracker. So no tracked file may name those notes, point outside the
repository with a relative path, or cite a bare issue or pull-request number as its source. Public upstream
threads stay citable in full, ``owner/repo#N`` (e.g. ``kubernetes/kubernetes#114460``): anyone can open them.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness import process

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().relative_to(REPO).as_posix()

FORBIDDEN = {
    "a path out of the repository": re.compile(r"\.\./shared\b|shared/reference"),
    "the developers' notes by name": re.compile(
        r"stack-under-test(?:\.md)?|kube-api-double(?:\.md)?|fakes-api\.md|field-pitfalls", re.IGNORECASE
    ),
    "a bare issue or pull-request number": re.compile(
        r"\b(?:issues?|PRs?|pull requests?) #\d+|\(#\d+\)|\(issue \d+\)", re.IGNORECASE
    ),
}


def _tracked_files() -> list[Path]:
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    listed = process.run_bounded([git, "-C", str(REPO), "ls-files", "-z"], timeout=30.0)
    assert listed.returncode == 0, listed.stderr
    return [REPO / name for name in listed.stdout.split("\0") if name and name != HERE]


def _findings(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError):  # binary, or deleted in the working tree
        return []
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN.items():
            match = pattern.search(line)
            if match:
                found.append(f"{path.relative_to(REPO)}:{lineno}: {what} ({match.group(0)!r}): {line.strip()[:160]}")
    return found


def test_no_tracked_file_cites_a_document_outside_the_repository() -> None:
    files = _tracked_files()
    assert len(files) > 100  # the listing worked: this repository has a few hundred tracked files
    findings = [finding for path in files for finding in _findings(path)]
    assert not findings, "say what the reader needs in the repository instead:\n" + "\n".join(findings)


@pytest.mark.parametrize(
    "line",
    [
        # built from parts, so this file does not itself hold what it forbids
        "as the notes say (stack-under-test" + ".md §9)",
        "see .." + "/shared/reference/fakes-api" + ".md",
        "Pytest fixtures for port-forwards (issue #3)",
        "fixed in (#12)",
        "exit code 1 since PR #114460",
    ],
)
def test_each_kind_of_outside_reference_is_caught(line: str) -> None:
    assert any(pattern.search(line) for pattern in FORBIDDEN.values())


@pytest.mark.parametrize(
    "line",
    [
        "exit code 1 since kubernetes/kubernetes#114460",
        "public octo/hello with issue 1",
        "keys the session `github:<owner>/<repo>#<n>`",
        "specs/cluster/README.md §7, failure mode 3",
        'color: #555; rule "#2"',
    ],
)
def test_public_citations_and_ordinary_text_pass(line: str) -> None:
    assert not any(pattern.search(line) for pattern in FORBIDDEN.values())
