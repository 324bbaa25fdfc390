"""kubeconfig files read as kubectl reads them, and exec credential plugins run inside the caller's bound.

Resolution follows client-go's ``tools/clientcmd/loader.go`` (``NewDefaultClientConfigLoadingRules``, ``Load``,
``LoadFromFile``, ``ResolveLocalPaths``), checked against the real kubectl 1.27 to 1.33
(``specs/guard/test_kubeconfig_resolution.py``):

- the files are ``--kubeconfig`` alone, else every path of ``KUBECONFIG`` (split on ``os.pathsep``, repeats and
  empty entries dropped, ``~`` *not* expanded: kubectl does not), else ``~/.kube/config``. A ``KUBECONFIG`` of
  separators only names no file at all (kubectl does not fall back to ``~/.kube/config`` then);
- a missing file is skipped; an empty (or comments-only) file is an empty kubeconfig; a file kubectl refuses (not
  YAML, not a mapping, a section that is not a list, a name twice in one list, a directory, unreadable) raises
  :class:`~harness.errors.KubeconfigInvalid` naming it, as kubectl fails with ``error loading config file``;
- clusters, users and contexts merge by name, the first file that defines a name wins with its whole entry (no
  field of a later file fills in); ``current-context`` comes from the first file that sets a non-empty one;
- relative ``certificate-authority``, ``client-certificate``, ``client-key``, ``tokenFile`` and an exec ``command``
  holding a path separator are resolved against the directory of the file that defined the entry.

The Python ``kubernetes`` client differs on each point (it refuses an empty file, takes ``current-context`` from the
*last* file, resolves a user's paths against its cluster's file, expands ``~``), and its ``ExecProvider`` runs a
credential plugin with no timeout and turns its failure into a log line. So the harness hands the client one
context's entries only, with absolute paths, and runs the plugin itself (:func:`run_exec_plugin`): in its own
process group through :func:`harness.process.run_bounded`, killed at the caller's bound, its stderr quoted on a
non-zero exit; the client gets the token or client certificate the plugin printed (client-go's
``plugin/pkg/client/auth/exec/exec.go`` and the ExecCredential format of the Kubernetes docs, "client-go credential
plugins").
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness import process
from harness.errors import (
    ContextNotDefined,
    CredentialPluginFailed,
    CredentialPluginTimeout,
    KubeconfigInvalid,
    NoKubeContext,
)
from harness.stderr_text import condense

CREDENTIAL_TIMEOUT = 10.0
"""Seconds an exec credential plugin may take when the caller gives no bound (a token refreshed by the client)."""

_SECTIONS = {"clusters": "cluster", "users": "user", "contexts": "context"}
_PATH_FIELDS = {"clusters": ("certificate-authority",), "users": ("client-certificate", "client-key", "tokenFile")}
_EXEC_INFO_EXTENSION = "client.authentication.k8s.io/exec"


def kubeconfig_paths(explicit: str | None = None) -> list[str]:
    """The kubeconfig files kubectl reads, as absolute paths in its order (see the module docstring): ``[explicit]``,
    else ``KUBECONFIG``'s paths without repeats or empty entries (``[]`` when it holds separators only), else
    ``~/.kube/config``. Source: client-go ``NewDefaultClientConfigLoadingRules`` and ``deduplicate``."""
    if explicit:
        return [os.path.abspath(explicit)]
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        return list(dict.fromkeys(os.path.abspath(p) for p in listed.split(os.pathsep) if p))
    return [os.path.join(os.path.expanduser("~"), ".kube", "config")]


@dataclass(frozen=True)
class Entry:
    """One named cluster, user or context: ``value`` (its inner mapping, relative paths resolved) and ``origin``
    (the file that defined it)."""

    name: str
    value: dict[str, Any]
    origin: str


@dataclass
class Kubeconfig:
    """The merged kubeconfig: ``clusters``, ``users``, ``contexts`` (name -> :class:`Entry`, in the order first
    defined), ``current_context`` (``None`` when no file sets one), ``files`` (those read) and ``skipped`` (files
    kubectl would refuse, when loaded with ``strict=False``: ``(path, why)``)."""

    clusters: dict[str, Entry] = field(default_factory=dict)
    users: dict[str, Entry] = field(default_factory=dict)
    contexts: dict[str, Entry] = field(default_factory=dict)
    current_context: str | None = None
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def minified(self, context: str) -> dict[str, Any]:
        """A kubeconfig holding ``context`` alone with its cluster and user (absolute paths), as
        ``kubectl config view --minify`` selects them. Raises :class:`ContextNotDefined` for an unknown context,
        :class:`NoKubeContext` when its cluster is not defined."""
        ctx = self.contexts.get(context)
        if ctx is None:
            raise ContextNotDefined(f"context {context!r} is not in the kubeconfig ({', '.join(self.files) or 'none'})")
        cluster = self.clusters.get(str(ctx.value.get("cluster") or ""))
        if cluster is None:
            raise NoKubeContext(
                f"context {context!r} ({ctx.origin}) names cluster {ctx.value.get('cluster')!r}, which no kubeconfig "
                "file defines: fix the context's cluster, or add the cluster"
            )
        user = self.users.get(str(ctx.value.get("user") or ""))
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": context,
            "clusters": [{"name": cluster.name, "cluster": dict(cluster.value)}],
            "contexts": [{"name": context, "context": dict(ctx.value)}],
            "users": [{"name": user.name, "user": dict(user.value)}] if user is not None else [],
        }


def load_kubeconfig(paths: list[str] | str, *, strict: bool = True) -> Kubeconfig:
    """Read and merge the kubeconfig files ``paths`` (a list, or ``os.pathsep``-joined) as kubectl does (see the
    module docstring). Raises :class:`KubeconfigInvalid` for a file kubectl refuses; with ``strict=False`` such a
    file is left out and listed in ``skipped`` instead (for messages that only list what is there)."""
    if isinstance(paths, str):
        paths = [p for p in paths.split(os.pathsep) if p]
    merged = Kubeconfig()
    for path in paths:
        try:
            data = _read(path)
        except KubeconfigInvalid as exc:
            if strict:
                raise
            merged.skipped.append((path, str(exc)))
            continue
        if data is None:
            continue
        merged.files.append(path)
        for section in _SECTIONS:
            target: dict[str, Entry] = getattr(merged, section)
            for name, value in data[section].items():
                target.setdefault(name, Entry(name, value, path))
        if merged.current_context is None and data["current-context"]:
            merged.current_context = data["current-context"]
    return merged


def _read(path: str) -> dict[str, Any] | None:
    """One file as client-go's ``LoadFromFile`` reads it, sections as name -> inner mapping; ``None`` if missing."""
    import yaml

    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _invalid(path, exc.strerror or str(exc)) from None
    try:
        data = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise _invalid(path, f"not YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _invalid(path, f"not a kubeconfig (a YAML mapping), but a {type(data).__name__}")
    base = os.path.dirname(os.path.abspath(path))
    out: dict[str, Any] = {"current-context": str(data.get("current-context") or "")}
    for section, inner in _SECTIONS.items():
        listed = data.get(section) or []
        if not isinstance(listed, list):
            raise _invalid(path, f"{section} is not a list")
        entries: dict[str, dict[str, Any]] = {}
        for item in listed:
            if not isinstance(item, dict) or not isinstance(item.get(inner) or {}, dict):
                raise _invalid(path, f"an entry of {section} is not a mapping with a {inner} mapping")
            name = str(item.get("name") or "")
            if name in entries:
                raise _invalid(path, f"duplicate name {name!r} in {section}")
            entries[name] = _resolved(section, dict(item.get(inner) or {}), base)
        out[section] = entries
    return out


def _resolved(section: str, value: dict[str, Any], base: str) -> dict[str, Any]:
    """``value`` with its relative file references joined to ``base`` (client-go ``ResolveLocalPaths``)."""
    for name in _PATH_FIELDS.get(section, ()):
        ref = value.get(name)
        if isinstance(ref, str) and ref and not os.path.isabs(ref):
            value[name] = os.path.normpath(os.path.join(base, ref))  # filepath.Join cleans the path
    plugin = value.get("exec")
    if section == "users" and isinstance(plugin, dict):
        command = plugin.get("command")
        if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
            value["exec"] = {**plugin, "command": os.path.normpath(os.path.join(base, command))}
    return value


def _invalid(path: str, why: str) -> KubeconfigInvalid:
    return KubeconfigInvalid(
        f'error loading config file "{path}": {why} (kubectl refuses it too); fix the file, or leave it out of '
        "KUBECONFIG / --kubeconfig"
    )


# --- exec credential plugins ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecCredential:
    """What an exec credential plugin printed: ``token``, or ``client_certificate`` and ``client_key`` (PEM text);
    ``expires`` (aware UTC datetime) or ``None``; ``command``, the plugin it came from."""

    command: str
    token: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None
    expires: datetime | None = None

    def expired(self) -> bool:
        """True once ``expires`` has passed (never for a credential without one)."""
        return self.expires is not None and datetime.now(UTC) >= self.expires


def needs_plugin(user: dict[str, Any]) -> bool:
    """True when the client would take this user's credentials from its exec plugin: it has ``exec`` and none of
    the ways the Python client tries first (``auth-provider``, ``token``, ``tokenFile``)."""
    return isinstance(user.get("exec"), dict) and not (
        user.get("auth-provider") or user.get("token") or user.get("tokenFile")
    )


def run_exec_plugin(
    plugin: dict[str, Any],
    *,
    timeout: float,
    env: dict[str, str],
    user: str = "",
    context: str = "",
    cluster: dict[str, Any] | None = None,
) -> ExecCredential:
    """Run the exec credential plugin ``plugin`` (a kubeconfig user's ``exec`` mapping) within ``timeout`` seconds.

    The plugin runs without a terminal (``spec.interactive`` false, stdin empty), in its own process group, in
    ``env`` plus its own ``env`` entries and ``KUBERNETES_EXEC_INFO`` (with ``spec.cluster`` when
    ``provideClusterInfo``; ``cluster`` is the context's cluster entry); the group is killed when it exits or at
    the bound. Returns :class:`ExecCredential`. Raises :class:`CredentialPluginTimeout` at the bound and
    :class:`CredentialPluginFailed` when it cannot start, exits non-zero (its stderr quoted), prints no valid
    ExecCredential, or demands a terminal (``interactiveMode: Always``). ``user`` and ``context`` name it in the
    messages. Source: client-go ``plugin/pkg/client/auth/exec/exec.go``.
    """
    command = str(plugin.get("command") or "")
    where = f"kubeconfig user {user!r} of context {context!r}"
    api_version = str(plugin.get("apiVersion") or "")
    if not command or not api_version:
        missing = "command" if not command else "apiVersion"
        raise CredentialPluginFailed(
            f"the credential plugin of {where} has no {missing}: add it to the user's exec entry in the kubeconfig",
            command=command,
            context=context,
        )
    if plugin.get("interactiveMode") == "Always":
        raise CredentialPluginFailed(
            f"the credential plugin `{command}` ({where}) needs a terminal (interactiveMode: Always) and the harness "
            "runs it without one: log in with it once in a terminal (e.g. `kubectl get ns`), or set interactiveMode "
            "to IfAvailable",
            command=command,
            context=context,
        )
    argv = [command, *(str(a) for a in plugin.get("args") or [])]
    child_env = dict(env)
    for item in plugin.get("env") or []:
        if isinstance(item, dict) and item.get("name"):
            child_env[str(item["name"])] = str(item.get("value") or "")
    spec: dict[str, Any] = {"interactive": False}
    if plugin.get("provideClusterInfo") and cluster is not None:
        spec["cluster"] = _exec_cluster(cluster)
    child_env["KUBERNETES_EXEC_INFO"] = json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "spec": spec})
    try:
        done = process.run_bounded(argv, timeout=timeout, env=child_env)
    except process.Timeout as exc:
        said = "; ".join(condense(exc.stderr)[-3:])
        raise CredentialPluginTimeout(
            f"the credential plugin `{command}` ({where}) did not answer within {timeout:.1f} s and its process "
            f"group was killed{f'; its stderr: {said}' if said else ''}. Fix: run `{' '.join(argv)}` by hand to see "
            "what it waits for (a login, a network call), then log in or fix the user's exec entry",
            command=command,
            context=context,
            timeout=timeout,
            stderr_tail=said,
        ) from None
    except OSError as exc:
        hint = str(plugin.get("installHint") or "install it or fix the command in the user's exec entry")
        raise CredentialPluginFailed(
            f"the credential plugin `{command}` ({where}) cannot be run ({exc.strerror or exc}): {hint}",
            command=command,
            context=context,
        ) from None
    if done.returncode != 0:
        said = "\n".join(condense(done.stderr)[-5:])
        raise CredentialPluginFailed(
            f"the credential plugin `{command}` ({where}) exited {done.returncode}: "
            f"{said or '(nothing on stderr)'}. Fix: what it says (often: log in again with the tool that "
            "provides it)",
            command=command,
            context=context,
            returncode=done.returncode,
            stderr_tail=said,
        )
    return _credential(command, where, context, api_version, done.stdout)


def _credential(command: str, where: str, context: str, api_version: str, stdout: str) -> ExecCredential:
    def bad(why: str) -> CredentialPluginFailed:
        return CredentialPluginFailed(
            f"the credential plugin `{command}` ({where}) exited 0 but {why}; it printed: {stdout.strip()[:200]!r}",
            command=command,
            context=context,
            returncode=0,
        )

    try:
        data = json.loads(stdout)
    except ValueError:
        raise bad("printed no JSON ExecCredential") from None
    if not isinstance(data, dict) or data.get("kind") != "ExecCredential" or not isinstance(data.get("status"), dict):
        raise bad("printed no ExecCredential with a status")
    if data.get("apiVersion") != api_version:
        raise bad(f"answered in apiVersion {data.get('apiVersion')!r}, not the {api_version!r} the kubeconfig asks")
    status = data["status"]
    token, cert, key = status.get("token"), status.get("clientCertificateData"), status.get("clientKeyData")
    if not token and not (cert and key):
        raise bad("gave neither a token nor both clientCertificateData and clientKeyData")
    expires = None
    if status.get("expirationTimestamp"):
        try:
            expires = datetime.fromisoformat(str(status["expirationTimestamp"]).replace("Z", "+00:00"))
        except ValueError:
            raise bad(f"gave an expirationTimestamp that is not RFC 3339: {status['expirationTimestamp']!r}") from None
        if expires.tzinfo is None:
            expires = expires.replace(tzinfo=UTC)
    return ExecCredential(
        command,
        token=str(token) if token else None,
        client_certificate=None if token else str(cert),
        client_key=None if token else str(key),
        expires=expires,
    )


def _exec_cluster(cluster: dict[str, Any]) -> dict[str, Any]:
    """``spec.cluster`` of ``KUBERNETES_EXEC_INFO`` (client-go ``ConvertToExecCluster``)."""
    out: dict[str, Any] = {"server": cluster.get("server", "")}
    for name in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(name):
            out[name] = cluster[name]
    ca = cluster.get("certificate-authority-data")
    if not ca and cluster.get("certificate-authority"):
        try:
            with open(str(cluster["certificate-authority"]), "rb") as f:
                ca = base64.b64encode(f.read()).decode()
        except OSError:
            ca = None
    if ca:
        out["certificate-authority-data"] = ca
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, dict) and extension.get("name") == _EXEC_INFO_EXTENSION:
            out["config"] = extension.get("extension")
    return out


def with_credential(user: dict[str, Any], credential: ExecCredential) -> dict[str, Any]:
    """``user`` with its ``exec`` replaced by what the plugin gave (a token, or client certificate data)."""
    out = {k: v for k, v in user.items() if k != "exec"}
    if credential.token is not None:
        out["token"] = credential.token
    else:
        for name in ("client-certificate", "client-key"):
            out.pop(name, None)
        assert credential.client_certificate is not None
        assert credential.client_key is not None
        out["client-certificate-data"] = base64.b64encode(credential.client_certificate.encode()).decode()
        out["client-key-data"] = base64.b64encode(credential.client_key.encode()).decode()
    return out
