"""The kubeconfig that points kubectl and the kubernetes client at a double.

One cluster, user and context, all named after the context (default ``fake-kube``): ``server:
http://127.0.0.1:PORT`` (kubectl accepts plain http; ``https://`` with ``certificate-authority-data`` for a double
serving TLS), the double's random bearer ``token``, the context's ``namespace``. The file is written with mode 0600
(kubectl warns about group/world-readable kubeconfigs, and it holds a credential).

A path that already holds a kubeconfig is not rewritten: the double's three entries are inserted as text at the end
of its ``clusters``, ``users`` and ``contexts`` lists and nothing else changes, layout, comments, ``current-context``
and mode included; a file that already names an entry as the double does, or whose layout (JSON, flow style) cannot
take the entries without a rewrite, is refused with :class:`KubeconfigNotMergeable`, which says so. At stop,
:func:`remove_entries` gives the file back its bytes from before (or takes exactly those entries out again if the
file changed meanwhile). A path that did not exist is created (mode 0600) and deleted at stop.
"""

from __future__ import annotations

import base64
import os
import shlex
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


def document(url: str, token: str, context: str, namespace: str, ca_pem: bytes | None = None) -> dict[str, Any]:
    """A complete kubeconfig for one double (``ca_pem``: the CA of an https double)."""
    cluster: dict[str, Any] = {"server": url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
        "preferences": {},
    }


@dataclass(frozen=True)
class Written:
    """What :func:`write` did to the file: ``created`` it, or merged into it (``before``: its bytes until then,
    ``after``: the bytes written, ``blocks``: the text of each entry inserted), for :func:`remove_entries`."""

    created: bool
    before: bytes = b""
    after: bytes = b""
    blocks: tuple[str, ...] = ()


class KubeconfigNotMergeable(ValueError):
    """An existing kubeconfig the double will not merge into: it already names the double's entries, or its layout
    cannot take them without being rewritten. The message says which and what to pass instead."""


def _create(path: Path, config: dict[str, Any]) -> None:
    """Create ``path`` holding ``config`` (mode 0600 from the first byte)."""
    _replace(path, yaml.safe_dump(config, default_flow_style=False, sort_keys=False).encode(), 0o600)


def _replace(path: Path, data: bytes, mode: int) -> None:
    """Atomically replace ``path`` (the file a symlink points to, not the link) with ``data``, mode ``mode``."""
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".kubeconfig-", dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _load(path: Path, text: str | None = None) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text() if text is None else text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"kubeconfig {path} exists but is not YAML ({exc}); pass another path") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"kubeconfig {path} exists but is not a kubeconfig mapping; pass another path")
    return loaded


def write(
    path: str | os.PathLike[str], url: str, token: str, context: str, namespace: str, *, ca_pem: bytes | None = None
) -> Written:
    """Write the double's kubeconfig to ``path``, or merge its three entries into the kubeconfig already there.

    A merge inserts the entries' text at the end of the ``clusters``, ``users`` and ``contexts`` lists (adding a list
    the file lacks) and changes no other byte: comments, order, quoting, indentation, ``current-context`` and the
    file's mode stay as they were (a symlink stays a symlink). Raises :class:`KubeconfigNotMergeable` (a
    ``ValueError``) when the file already has an entry of the double's name, or its layout (JSON, flow style)
    cannot take the entries without a rewrite; ``ValueError`` when it is not a kubeconfig at all.
    """
    target = Path(path)
    ours = document(url, token, context, namespace, ca_pem)
    if not target.exists():
        _create(target, ours)
        return Written(created=True)
    before = target.read_bytes()
    text, blocks = _merged(target, before.decode(), ours, context)
    after = text.encode()
    _replace(target, after, stat.S_IMODE(target.stat().st_mode))
    return Written(created=False, before=before, after=after, blocks=blocks)


def _merged(path: Path, text: str, ours: dict[str, Any], context: str) -> tuple[str, tuple[str, ...]]:
    """``text`` with the double's entries inserted, and the inserted blocks; checked against a structural merge."""
    config = _load(path, text)
    expected = dict(config)
    taken: list[str] = []
    for section in _SECTIONS:
        entries = config.get(section)
        if entries is not None and not isinstance(entries, list):
            raise ValueError(f"kubeconfig {path}: {section} is not a list; pass another path")
        if any(isinstance(e, dict) and e.get("name") == context for e in entries or []):
            taken.append(section)
        expected[section] = [*(entries or []), *ours[section]]
    if taken:  # every entry of that name, so one cleanup removes all an earlier (killed) double added
        kinds = ", ".join(section[:-1] for section in taken)
        where, name = shlex.quote(str(path)), shlex.quote(context)
        cleanup = " && ".join(
            f"kubectl --kubeconfig {where} config delete-{_DELETE_VERB[section]} {name}" for section in taken
        )
        raise KubeconfigNotMergeable(
            f"kubeconfig {path} already has entries named {context!r} ({kinds}: an earlier double's, or someone "
            f"else's): pass --context with another name, or remove them first ({cleanup})"
        )
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    blocks = []
    for section in _SECTIONS:
        lines, block = _insert(lines, section, _render(ours[section], newline), newline)
        blocks.append(block)
    merged = "".join(lines)
    if _parsed(merged) != expected:
        raise KubeconfigNotMergeable(
            f"kubeconfig {path} is laid out in a way the double cannot add its entries to without rewriting the "
            f"file (JSON, flow style or another layout): pass a kubeconfig path of its own, e.g. --kubeconfig "
            f"/tmp/fake-kube.yaml, and list both files in KUBECONFIG to use them together"
        )
    return merged, tuple(blocks)


_SECTIONS = ("clusters", "users", "contexts")
_DELETE_VERB = {"clusters": "cluster", "users": "user", "contexts": "context"}


def _parsed(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _render(entries: list[dict[str, Any]], newline: str) -> str:
    """Block-style YAML list items, as kubectl writes them (``- name: ...`` at the list's own indentation)."""
    text = yaml.safe_dump(entries, default_flow_style=False, sort_keys=False)
    return text.replace("\n", newline)


def _insert(lines: list[str], section: str, block: str, newline: str) -> tuple[list[str], str]:
    """``lines`` with ``block`` (list items) added at the end of the top-level list ``section`` (or a new list at the
    end of the file), and the text inserted."""
    header = next((i for i, line in enumerate(lines) if line.split("#", 1)[0].rstrip() in _headers(section)), None)
    if header is None:  # no such list: add it at the end of the file
        return [*_terminated(lines, newline), f"{section}:{newline}", block], block
    end, indent = _list_end(lines, header)
    if end == header + 1 and lines[header].split("#", 1)[0].rstrip() != f"{section}:":
        lines = [*lines[:header], f"{section}:{newline}", *lines[header + 1 :]]  # "clusters: []" / "null" held none
    items = "".join(f"{' ' * indent}{line}" if line.strip() else line for line in block.splitlines(keepends=True))
    return [*_terminated(lines[:end], newline), items, *lines[end:]], items


def _headers(section: str) -> set[str]:
    return {f"{section}:", f"{section}: []", f"{section}: null", f"{section}: ~"}


def _list_end(lines: list[str], header: int) -> tuple[int, int]:
    """Where the block list under ``lines[header]`` ends (after its last item line) and its items' indentation."""
    end, indent = header + 1, None
    for i in range(header + 1, len(lines)):
        line = lines[i]
        stripped = line.lstrip(" ")
        if not stripped.strip() or stripped.startswith("#"):
            continue  # blank lines and comments belong to whichever part follows them
        if line[0] not in " -":
            break  # the next top-level key
        if indent is None:
            indent = len(line) - len(stripped)
        end = i + 1
    return end, indent or 0


def _terminated(lines: list[str], newline: str) -> list[str]:
    """``lines`` whose last line ends with a line break (added only when the file's last line had none)."""
    if lines and not lines[-1].endswith(("\n", "\r")):
        return [*lines[:-1], lines[-1] + newline]
    return list(lines)


def remove_entries(path: str | os.PathLike[str], context: str, written: Written) -> None:
    """Undo :func:`write`: delete a file it created; give a merged file back its bytes from before the merge when
    nobody changed it since, else take out the inserted entries' text (or, if that text was rewritten, the entries
    named ``context``), keeping the file's mode."""
    target = Path(path)
    if written.created:
        target.unlink(missing_ok=True)
        return
    if not target.exists():
        return
    now = target.read_bytes()
    mode = stat.S_IMODE(target.stat().st_mode)
    if now == written.after:
        _replace(target, written.before, mode)
        return
    text = now.decode(errors="replace")
    if all(text.count(block) == 1 for block in written.blocks):
        for block in written.blocks:
            text = text.replace(block, "", 1)
        _replace(target, text.encode(), mode)
        return
    try:
        config = _load(target)
    except ValueError:
        return  # someone rewrote it meanwhile: leave their file alone
    for section in _SECTIONS:
        config[section] = [
            e for e in config.get(section) or [] if not (isinstance(e, dict) and e.get("name") == context)
        ]
    if config.get("current-context") == context:
        config["current-context"] = ""
    _replace(target, yaml.safe_dump(config, default_flow_style=False, sort_keys=False).encode(), mode)
