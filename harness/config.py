"""Committed harness configuration: the ``[tool.harness]`` table of the project's ``pyproject.toml``.

Keys (any other key is a :class:`~harness.errors.HarnessConfigError` naming it and these):

``allowed_contexts``
    Glob patterns (``fnmatch``, case-sensitive) of the kube contexts cluster specs may touch. Default
    :data:`DEFAULT_ALLOWED_CONTEXTS`, the context names local cluster tools write into the kubeconfig:

    - ``minikube``: ``minikube start`` (default profile);
    - ``kind-*``: ``kind create cluster`` (``kind-<cluster name>``);
    - ``k3d-*``: ``k3d cluster create`` (``k3d-<cluster name>``);
    - ``docker-desktop``: Docker Desktop's built-in Kubernetes;
    - ``rancher-desktop``: Rancher Desktop's built-in Kubernetes;
    - ``colima``: ``colima start --kubernetes``;
    - ``orbstack``: OrbStack's built-in Kubernetes.

    Each is a single-machine cluster its owner created on purpose; none is a name a cloud provider or a shared
    cluster's kubeconfig uses (those carry account, region or cluster names).
``namespace``
    The namespace cluster specs use. Default: the context's own namespace (its ``namespace`` in the kubeconfig),
    else ``default``, as kubectl itself picks it.
``twin``
    The pytest plugin module (a dotted name importable from the project's root) that provides a twin: a stand-in
    for the cluster that serves the Kubernetes API with the project's system deployed (:mod:`harness.targets`). A
    non-empty string. Absent: the project has no twin, and with no kube context cluster specs skip.
``kubeconfig``
    The kubeconfig file cluster specs read, relative to the ``pyproject.toml``'s folder. Precedence for the file:
    ``--kubeconfig``, then this key, then ``$KUBECONFIG``, then kubectl's default (``~/.kube/config``).
``durations_file``
    The JSON file of cluster spec durations the harness keeps (:mod:`harness.shards`: it splits the cluster specs
    over several targets by them), relative to the ``pyproject.toml``'s folder. Default
    :data:`DEFAULT_DURATIONS_FILE` in that folder (the rootdir when no ``pyproject.toml`` is found). A run writes
    the file only when this key is set or the file exists already: it never adds one to a project by itself.
``kwok_configs``
    More of kwok's ``--config`` files (kwok Stages, its port-forward, exec and logs routes) for the real control
    plane the session starts (:mod:`harness.controlplane`), relative to the ``pyproject.toml``'s folder; each must
    exist. Default: none (kwok's default stages alone).
``keep_runs``
    How many run folders under ``artifacts/`` are kept; older ones are removed at the end of a run that wrote
    one. An integer >= 1, default :data:`DEFAULT_KEEP_RUNS`.

Only committed configuration can widen the allow-list of contexts; no environment variable can: an override
flag would exist only to be set by accident in CI, and point the cluster specs at a cluster nobody chose.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessConfigError as HarnessConfigError  # re-exported: defined in harness.errors

DEFAULT_ALLOWED_CONTEXTS = (
    "minikube",
    "kind-*",
    "k3d-*",
    "docker-desktop",
    "rancher-desktop",
    "colima",
    "orbstack",
)
"""The stack-neutral allow-list of a project without ``[tool.harness]``: local clusters (see the module docstring)."""
DEFAULT_KEEP_RUNS = 20
DEFAULT_DURATIONS_FILE = ".harness-durations.json"
"""The durations file's name (:mod:`harness.shards`) when ``durations_file`` is unset."""
KNOWN_KEYS = ("allowed_contexts", "namespace", "twin", "kubeconfig", "keep_runs", "durations_file", "kwok_configs")


@dataclass(frozen=True)
class HarnessConfig:
    """The ``[tool.harness]`` table, checked.

    ``allowed_contexts`` glob patterns; ``namespace`` (``None``: the context's own, else ``default``); ``source``
    the ``pyproject.toml`` read (``None``: none had the table, so these are the defaults); ``twin`` a module name or
    ``None``; ``kubeconfig`` an absolute path or ``None``; ``keep_runs`` run folders kept under ``artifacts/``;
    ``durations_file`` an absolute path or ``None`` (the default: see :meth:`durations_path`); ``kwok_configs``
    absolute paths.
    """

    allowed_contexts: tuple[str, ...] = DEFAULT_ALLOWED_CONTEXTS
    namespace: str | None = None
    source: Path | None = None
    twin: str | None = None
    kubeconfig: str | None = None
    keep_runs: int = DEFAULT_KEEP_RUNS
    durations_file: str | None = None
    kwok_configs: tuple[str, ...] = ()

    def durations_path(self, rootdir: Path) -> Path:
        """The durations file: ``durations_file``, else :data:`DEFAULT_DURATIONS_FILE` beside the
        ``pyproject.toml`` read, else in ``rootdir``."""
        if self.durations_file:
            return Path(self.durations_file)
        return (self.source.parent if self.source is not None else rootdir) / DEFAULT_DURATIONS_FILE

    def origin(self) -> str:
        """Where the allow-list came from, for messages: never a file that was not read."""
        if self.source is None:
            return "the harness's default allow-list of local cluster contexts (no [tool.harness] table was found)"
        return f"[tool.harness] allowed_contexts in {self.source}"


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (default: cwd): the project's own, whether or not it has
    a ``[tool.harness]`` table (a parent project's table is not this project's configuration)."""
    here = (start or Path.cwd()).resolve()
    for directory in [here, *here.parents]:
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Path | None = None, *, path: Path | None = None) -> HarnessConfig:
    """Read ``[tool.harness]`` from ``path`` (a ``pyproject.toml``, or a folder holding one), or else from the nearest
    ``pyproject.toml`` at or above ``start`` (default: cwd).

    No table there: the stack-neutral defaults (``source`` is ``None``). Raises :class:`HarnessConfigError` for an
    unknown key or a malformed value (naming the file and the key), and for a ``path`` that is not a readable
    ``pyproject.toml`` with a ``[tool.harness]`` table.
    """
    if path is not None:
        file = path / "pyproject.toml" if path.is_dir() else path
        if not file.is_file():
            raise HarnessConfigError(f"harness configuration {str(file)!r} does not exist")
        table = _harness_table(file)
        if table is None:
            raise HarnessConfigError(f"{file} has no [tool.harness] table")
        return from_table(table, file.resolve())
    found = find_pyproject(start)
    table = _harness_table(found) if found is not None else None
    if found is None or table is None:
        return HarnessConfig()
    return from_table(table, found)


def _harness_table(file: Path) -> dict[str, Any] | None:
    try:
        with file.open("rb") as f:
            table = tomllib.load(f).get("tool", {}).get("harness")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise HarnessConfigError(f"{file}: cannot be read as TOML ({exc})") from None
    if table is not None and not isinstance(table, dict):
        raise HarnessConfigError(f"{file}: tool.harness must be a table, got {table!r}")
    return table


def from_table(table: dict[str, Any], source: Path) -> HarnessConfig:
    """A :class:`HarnessConfig` of one ``[tool.harness]`` table read from ``source``. Raises
    :class:`HarnessConfigError` as :func:`load_config` does."""
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        raise HarnessConfigError(
            f"{source}: unknown [tool.harness] key{'s' if len(unknown) > 1 else ''} {names}; "
            f"the known keys are {', '.join(KNOWN_KEYS)}"
        )
    allowed = table.get("allowed_contexts", list(DEFAULT_ALLOWED_CONTEXTS))
    if not isinstance(allowed, list) or not allowed or not all(isinstance(p, str) and p for p in allowed):
        _wrong(source, "allowed_contexts", "a non-empty list of non-empty strings (glob patterns)", allowed)
    namespace = table.get("namespace")
    if namespace is not None and not is_namespace_name(namespace):
        _wrong(
            source,
            "namespace",
            "a namespace name (RFC 1123 label: lowercase letters, digits, '-'; 63 at most)",
            namespace,
        )
    twin = table.get("twin")
    if twin is not None and (not isinstance(twin, str) or not twin.strip()):
        _wrong(source, "twin", "a module name (a non-empty string), or absent for no twin", twin)
    kubeconfig = table.get("kubeconfig")
    if kubeconfig is not None and (not isinstance(kubeconfig, str) or not kubeconfig):
        _wrong(source, "kubeconfig", f"a path (relative to {source.parent})", kubeconfig)
    durations_file = table.get("durations_file")
    if durations_file is not None and (not isinstance(durations_file, str) or not durations_file):
        _wrong(source, "durations_file", f"a path (relative to {source.parent})", durations_file)
    kwok_configs = _kwok_configs(table.get("kwok_configs", []), source)
    keep_runs = table.get("keep_runs", DEFAULT_KEEP_RUNS)
    if isinstance(keep_runs, bool) or not isinstance(keep_runs, int) or keep_runs < 1:
        _wrong(source, "keep_runs", "an integer >= 1 (run folders kept under artifacts/)", keep_runs)
    return HarnessConfig(
        tuple(allowed),
        namespace,
        source,
        twin=twin.strip() if twin else None,
        kubeconfig=str(source.parent / Path(kubeconfig).expanduser()) if kubeconfig else None,
        keep_runs=keep_runs,
        durations_file=str(source.parent / Path(durations_file).expanduser()) if durations_file else None,
        kwok_configs=kwok_configs,
    )


_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
"""A namespace's name: an RFC 1123 label (Kubernetes docs, "Object Names and IDs": DNS label names)."""


def is_namespace_name(name: object) -> bool:
    """True when ``name`` is a string Kubernetes accepts as a namespace's name."""
    return isinstance(name, str) and len(name) <= 63 and _NAMESPACE.fullmatch(name) is not None


def _kwok_configs(value: object, source: Path) -> tuple[str, ...]:
    expected = f"a list of paths of files that exist (relative to {source.parent})"
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        _wrong(source, "kwok_configs", expected, value)
        return ()  # not reached: _wrong raises
    paths = tuple(str(source.parent / Path(p).expanduser()) for p in value)
    if not all(Path(p).is_file() for p in paths):
        _wrong(source, "kwok_configs", expected, value)
    return paths


def _wrong(source: Path, key: str, expected: str, got: object) -> None:
    raise HarnessConfigError(f"{source}: [tool.harness] {key} must be {expected}, got {got!r}")


def kubeconfig_choice(option: str | None, config: HarnessConfig) -> tuple[str | None, str]:
    """The kubeconfig file to pass to kubectl and where that choice came from.

    Precedence: ``option`` (``--kubeconfig``), then ``[tool.harness] kubeconfig``, then nothing (``None``: kubectl
    reads ``$KUBECONFIG``, else its default ``~/.kube/config``).
    """
    if option:
        return str(Path(option).expanduser()), "--kubeconfig"
    if config.kubeconfig:
        return config.kubeconfig, f"[tool.harness] kubeconfig in {config.source}"
    return None, "$KUBECONFIG or kubectl's default"
