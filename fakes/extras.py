"""Each fake's pip extra, and the error when a fake is used without it.

The base install of stack-harness holds what the harness needs; each fake's libraries come with its extra
(``pyproject.toml``'s ``[project.optional-dependencies]``). A fake's package wraps its imports in
:func:`requires_extra`, so using a fake whose extra is missing fails at its import with the ``pip install`` line that
adds it, written for the way this copy was installed (a path, an editable checkout, a git URL or an index), which pip
records in the distribution's ``direct_url.json`` (PEP 610).
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterator
from importlib import metadata
from urllib.parse import unquote, urlsplit

DISTRIBUTION = "stack-harness"

EXTRAS = {
    "fakes.kube": "kube-double",
    "fakes.github": "fake-github",
    "fakes.qdrant": "fake-qdrant",
    "fakes.openai": "fake-openai",
}
"""The extra that brings each fake's libraries (``fakes`` brings them all)."""


class MissingExtraError(ImportError):
    """A fake was imported without its extra: the message names the fake, the missing module and the install line.

    An ``ImportError`` (so ``pytest.importorskip`` and ``except ImportError`` still apply), with ``name`` set to the
    module that is missing."""


@contextlib.contextmanager
def requires_extra(package: str) -> Iterator[None]:
    """Turn a missing third-party module inside the block into :class:`MissingExtraError` for ``package``'s extra.

    ``package`` is a key of :data:`EXTRAS` (``KeyError`` otherwise). A missing first-party or standard-library
    module is not an extra's fault and propagates unchanged."""
    extra = EXTRAS[package]
    try:
        yield
    except ModuleNotFoundError as error:
        top = (error.name or "").partition(".")[0]
        if not top or top in ("fakes", "harness") or top in sys.stdlib_module_names:
            raise
        raise MissingExtraError(
            f"{package} needs the {extra!r} extra of {DISTRIBUTION}, which is not installed here (no module named "
            f"{error.name!r}); add it with: {install_line(extra)}",
            name=error.name,
        ) from error


def installed(extra: str) -> bool:
    """Whether every distribution ``extra`` of stack-harness requires is installed (False when stack-harness is not).

    Raises ``ValueError`` for an extra stack-harness does not declare."""
    try:
        lines = metadata.requires(DISTRIBUTION) or []
        declared = metadata.metadata(DISTRIBUTION).get_all("Provides-Extra") or []
    except metadata.PackageNotFoundError:
        return False
    if extra not in declared:
        raise ValueError(f"{DISTRIBUTION} has no extra {extra!r}; its extras: {', '.join(sorted(declared))}")
    for line in lines:
        requirement, _, marker = line.partition(";")
        if not re.fullmatch(rf"""\s*extra\s*==\s*["']{re.escape(extra)}["']\s*""", marker):
            continue  # the base, or another extra (this package's own metadata writes `extra == "name"` alone)
        named = _REQUIREMENT.match(requirement)
        if named is None:
            continue
        if named["name"] == DISTRIBUTION:  # an extra made of extras
            if not all(installed(inner.strip()) for inner in (named["extras"] or "").split(",")):
                return False
            continue
        try:
            metadata.distribution(named["name"])
        except metadata.PackageNotFoundError:
            return False
    return True


_REQUIREMENT = re.compile(r"\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[(?P<extras>[^\]]*)\])?")


def install_line(extra: str) -> str:
    """The ``pip install`` command that adds ``extra`` to this installation of stack-harness.

    Read from the distribution's ``direct_url.json`` (PEP 610): a local folder (``-e`` when editable), a file, a
    VCS URL pinned to the commit that was installed; without one (an index, or no installation), the plain name."""
    # Every copy on the path: a checkout's own build metadata (an egg-info beside the sources) records no origin.
    recorded = [
        text for dist in metadata.distributions(name=DISTRIBUTION) if (text := dist.read_text("direct_url.json"))
    ]
    try:
        origin = json.loads(recorded[0]) if recorded else {}
    except ValueError:
        origin = {}
    url = origin.get("url", "") if isinstance(origin, dict) else ""
    if url.startswith("file://"):
        path = unquote(urlsplit(url).path)
        editable = "-e " if origin.get("dir_info", {}).get("editable") else ""
        return f"pip install {editable}'{path}[{extra}]'"
    vcs = origin.get("vcs_info") if url else None
    if isinstance(vcs, dict):
        pin = vcs.get("commit_id") or vcs.get("requested_revision")
        at = f"@{pin}" if pin else ""
        return f"pip install '{DISTRIBUTION}[{extra}] @ {vcs.get('vcs', 'git')}+{url}{at}'"
    if url:
        return f"pip install '{DISTRIBUTION}[{extra}] @ {url}'"
    return f"pip install '{DISTRIBUTION}[{extra}]'"
