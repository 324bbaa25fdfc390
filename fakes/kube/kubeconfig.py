"""The kubeconfig that points kubectl and the kubernetes client at a double.

One cluster, user and context, all named after the context (default ``fake-kube``): ``server:
http://127.0.0.1:PORT`` (kubectl accepts plain http; ``https://`` with ``certificate-authority-data`` for a double
serving TLS), the double's random bearer ``token``, the context's ``namespace``. The file is written with mode 0600
(kubectl warns about group/world-readable kubeconfigs, and it holds a credential).

A path that already holds a kubeconfig is not overwritten: the double's three entries are merged in (replacing
entries of the same name), ``current-context`` is set only if the file had none, and :func:`remove_entries` takes
exactly those entries out again at stop. A path that did not exist is created and deleted at stop.
"""

from __future__ import annotations

import base64
import os
import tempfile
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


def _write(path: Path, config: dict[str, Any]) -> None:
    """Atomically replace ``path`` with ``config`` (mode 0600 from the first byte)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".kubeconfig-", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(config, f, default_flow_style=False, sort_keys=False)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _load(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"kubeconfig {path} exists but is not YAML ({exc}); pass another path") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"kubeconfig {path} exists but is not a kubeconfig mapping; pass another path")
    return loaded


def write(
    path: str | os.PathLike[str], url: str, token: str, context: str, namespace: str, *, ca_pem: bytes | None = None
) -> bool:
    """Write or merge the double's entries into ``path``; True when the file was created (delete it at stop).

    Raises ``ValueError`` when ``path`` exists but is not a kubeconfig.
    """
    target = Path(path)
    ours = document(url, token, context, namespace, ca_pem)
    if not target.exists():
        _write(target, ours)
        return True
    config = _load(target)
    for section in ("clusters", "users", "contexts"):
        kept = [e for e in config.get(section) or [] if isinstance(e, dict) and e.get("name") != context]
        config[section] = kept + ours[section]
    config.setdefault("apiVersion", "v1")
    config.setdefault("kind", "Config")
    if not config.get("current-context"):
        config["current-context"] = context
    _write(target, config)
    return False


def remove_entries(path: str | os.PathLike[str], context: str, *, created: bool) -> None:
    """Undo :func:`write`: delete a file it created, or take the double's entries out of a merged one."""
    target = Path(path)
    if created:
        target.unlink(missing_ok=True)
        return
    if not target.exists():
        return
    try:
        config = _load(target)
    except ValueError:
        return  # someone rewrote it meanwhile: leave their file alone
    for section in ("clusters", "users", "contexts"):
        config[section] = [
            e for e in config.get(section) or [] if not (isinstance(e, dict) and e.get("name") == context)
        ]
    if config.get("current-context") == context:
        config["current-context"] = ""
    _write(target, config)
