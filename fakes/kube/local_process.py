"""The local-process contract: a pod whose containers are programs run on this machine, on the API double and on
the real control plane's local node alike.

**Which pods.** A pod (or the template a controller copies it from) annotated ``stack-harness.dev/local-process:
"true"`` has every container, init containers included, run as a local process; a comma list (``"app,worker"``)
names the containers that are, the others keep the target's simulation. Nothing else of the manifest changes.

**What runs.** The container's ``command`` then ``args`` (no shell, no image: ``image`` is only a name here; a
container of the contract without ``command`` fails to start, as one whose image has no entrypoint does). Its
environment is the host's ``PATH`` (to find the program), ``HOSTNAME`` (the pod's name), one
``LOCAL_PORT_<containerPort>`` per TCP container port (the 127.0.0.1 port the OS chose for it this run), ``PORT``
when there is exactly one, then ``envFrom`` and ``env`` as the kubelet builds them (:func:`environment`); ``$(NAME)``
in ``command`` and ``args`` expands any of them (``args: ["--port", "$(PORT)"]``). The
process listens there: port-forward to the container port reaches that socket. Its working directory is
``workingDir`` when that is a directory of this machine, else a fresh directory of its own, removed with the pod.

**Its life.** Standard output and error, line by line, are the container's log (one log per run, so
``--previous`` reads the run before). Ready once every TCP container port accepts a connection (at start when it
declares none). Its exit is the container's termination: the exit code (``128 + N`` for signal N), reason
``Completed`` for 0 else ``Error``; the target's kubelet restarts it by ``restartPolicy`` with its back-off. When the
process leader exits, the rest of its process group is killed: a container ends as a whole. Deleting the pod sends
SIGTERM to the group, SIGKILL after the pod's grace period. ``kubectl exec`` runs its command with the same
environment and working directory and returns its exit code on the status channel.

Processes are started by :func:`harness.process.spawn` (own process group, killed with the pytest process however
it ends). Environment rules follow the kubelet (``pkg/kubelet/kubelet_pods.go`` ``makeEnvironmentVariables``,
``third_party/forked/golang/expansion``).
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.process import forget, spawn

ANNOTATION = "stack-harness.dev/local-process"
PORT_ENV = "LOCAL_PORT_{}"
READ_CHUNK = 64 * 1024
DRAIN_SECONDS = 1.0
"""After the leader's exit, how long its output pipes are still read (a grandchild holding them is then killed)."""
REAP_SECONDS = 5.0
Obj = dict[str, Any]


class ConfigError(Exception):
    """The container's environment cannot be built; the message is the kubelet's (``secret "db" not found``)."""


class StartError(ConfigError):
    """The container cannot be started at all (no ``command``): a ``StartError`` exit 128, not a config error that
    the kubelet tries again."""


def local_containers(pod: Obj) -> frozenset[str] | None:
    """The names of ``pod``'s containers (init containers included) that are local processes, or ``None`` when the
    pod does not use the contract."""
    value = str(((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION, "")).strip()
    if not value or value.lower() == "false":
        return None
    spec = pod.get("spec") or {}
    every = {str(c.get("name")) for key in ("initContainers", "containers") for c in spec.get(key) or []}
    if value.lower() == "true":
        return frozenset(every)
    return frozenset(n.strip() for n in value.split(",") if n.strip() in every)


def is_local(pod: Obj, container: str) -> bool:
    names = local_containers(pod)
    return names is not None and container in names


def container_spec(pod: Obj, name: str) -> Obj:
    spec = pod.get("spec") or {}
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            if container.get("name") == name:
                return dict(container)
    return {}


def tcp_ports(container: Obj) -> list[int]:
    ports = [p for p in container.get("ports") or [] if str(p.get("protocol") or "TCP").upper() == "TCP"]
    return sorted({int(p["containerPort"]) for p in ports if "containerPort" in p})


def choose_ports(container: Obj) -> dict[int, int]:
    """Container port -> a 127.0.0.1 port the OS chose and that was free a moment ago."""
    chosen: dict[int, int] = {}
    for port in tcp_ports(container):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            chosen[port] = probe.getsockname()[1]
    return chosen


# --- the environment ---------------------------------------------------------------------------------------------


class Sources(Protocol):
    """Where ``envFrom`` and ``valueFrom`` read from: a ConfigMap's or Secret's data (Secrets decoded), ``None``
    when it does not exist."""

    def config_map(self, namespace: str, name: str) -> Mapping[str, str] | None: ...

    def secret(self, namespace: str, name: str) -> Mapping[str, str] | None: ...


class StoreSources:
    """:class:`Sources` read from an object store with ``get(plural, namespace, name)`` (the API double's)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def config_map(self, namespace: str, name: str) -> Mapping[str, str] | None:
        found = self.store.get("configmaps", namespace, name)
        return None if found is None else config_map_data(found)

    def secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        found = self.store.get("secrets", namespace, name)
        return None if found is None else secret_data(found)


def secret_data(obj: Obj) -> dict[str, str]:
    """A Secret's ``data`` decoded (and ``stringData``, which a real API server folds into ``data``)."""
    out = {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (obj.get("data") or {}).items()}
    out.update({k: str(v) for k, v in (obj.get("stringData") or {}).items()})
    return out


def config_map_data(obj: Obj) -> dict[str, str]:
    return {k: str(v) for k, v in (obj.get("data") or {}).items()}


def environment(pod: Obj, container: Obj, sources: Sources, *, strict: bool = True) -> dict[str, str]:
    """The container's variables as the kubelet builds them: ``envFrom`` first, then ``env`` (later entries win);
    ``valueFrom`` reads Secrets, ConfigMaps and the pod's own fields; a ``value``'s ``$(NAME)`` references to
    variables defined before it are expanded (:func:`expand`). Raises :class:`ConfigError` for a missing, not
    ``optional`` Secret, ConfigMap or key when ``strict`` (the kubelet's ``CreateContainerConfigError``); else leaves
    the variable out."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        for kind, ref in (("configmap", source.get("configMapRef")), ("secret", source.get("secretRef"))):
            if ref:
                data = _read(sources, kind, namespace, ref, strict)
                prefix = str(source.get("prefix") or "")
                env.update({prefix + k: v for k, v in (data or {}).items()})
    for entry in container.get("env") or []:
        name = entry.get("name")
        if not name:
            continue
        if "valueFrom" not in entry:
            env[name] = expand(str(entry.get("value") or ""), env)
            continue
        value = _value_from(pod, container, entry["valueFrom"] or {}, sources, namespace, strict)
        if value is not None:
            env[name] = value
    return env


def _value_from(pod: Obj, container: Obj, ref: Obj, sources: Sources, namespace: str, strict: bool) -> str | None:
    for kind, key in (("secret", "secretKeyRef"), ("configmap", "configMapKeyRef")):
        if key in ref:
            data = _read(sources, kind, namespace, ref[key], strict)
            if data is None:
                return None
            wanted = str(ref[key].get("key") or "")
            if wanted not in data:
                if strict and not ref[key].get("optional"):
                    title = "Secret" if kind == "secret" else "ConfigMap"
                    raise ConfigError(f"couldn't find key {wanted} in {title} {namespace}/{ref[key].get('name')}")
                return None
            return data[wanted]
    if "fieldRef" in ref:
        return pod_field(pod, str(ref["fieldRef"].get("fieldPath") or ""))
    return None


def _read(sources: Sources, kind: str, namespace: str, ref: Obj, strict: bool) -> Mapping[str, str] | None:
    name = str(ref.get("name") or "")
    data = sources.secret(namespace, name) if kind == "secret" else sources.config_map(namespace, name)
    if data is None and strict and not ref.get("optional"):
        raise ConfigError(f'{kind} "{name}" not found')
    return data


_LABEL = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def pod_field(pod: Obj, path: str) -> str | None:
    """A downward-API ``fieldRef`` value (``pkg/kubelet/kubelet_pods.go`` ``podFieldSelectorRuntimeValue``), or
    ``None`` for a path not known."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    keyed = _LABEL.match(path)
    if keyed:
        value = (meta.get(keyed.group(1)) or {}).get(keyed.group(2))
        return None if value is None else str(value)
    plain: dict[str, Any] = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
        "status.podIPs": ",".join(str(i.get("ip")) for i in status.get("podIPs") or []) or status.get("podIP"),
        "status.hostIPs": ",".join(str(i.get("ip")) for i in status.get("hostIPs") or []) or status.get("hostIP"),
    }
    value = plain.get(path)
    return None if value is None else str(value)


_REFERENCE = re.compile(r"\$\$|\$\(([^)]*)\)")


def expand(value: str, defined: Mapping[str, str]) -> str:
    """``value`` with each ``$(NAME)`` of a variable in ``defined`` replaced by its value and ``$$`` by ``$``; an
    undefined reference stays as written (the kubelet's dependent environment variables, ``expansion.Expand``)."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return defined.get(match.group(1), match.group(0))

    return _REFERENCE.sub(replace, value)


# --- one run of one container ------------------------------------------------------------------------------------


@dataclass
class Launch:
    """What one run needs: ``argv``, the whole ``env``, the working directory ``cwd`` (``owned``: made for this pod
    and removed with it) and ``ports`` (container port -> local port)."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    owned: bool
    ports: dict[int, int] = field(default_factory=dict)


def prepare(pod: Obj, name: str, sources: Sources, workdir: str | None = None) -> Launch:
    """The :class:`Launch` for container ``name`` of ``pod``. Raises :class:`ConfigError` for what the kubelet
    refuses to start (a missing Secret or ConfigMap; no ``command``: the contract has no image entrypoint).
    ``workdir``: the directory this pod's container used before (kept across restarts), else a new one."""
    container = container_spec(pod, name)
    argv = [str(a) for a in (container.get("command") or [])]
    variables = environment(pod, container, sources)
    if not argv:
        raise StartError(
            f"container {name} has no command: a container of the {ANNOTATION} contract runs its command, "
            f"and has no image entrypoint"
        )
    ports = choose_ports(container)
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOSTNAME": str((pod.get("metadata") or {}).get("name"))}
    env.update({PORT_ENV.format(p): str(local) for p, local in ports.items()})
    if len(ports) == 1:
        env["PORT"] = str(next(iter(ports.values())))
    env.update(variables)
    # $(NAME) in command and args: the container's whole environment, the contract's ports included
    argv = [expand(str(a), env) for a in [*argv, *(container.get("args") or [])]]
    wanted = str(container.get("workingDir") or "")
    if wanted and os.path.isdir(wanted):
        return Launch(argv, env, wanted, False, ports)
    cwd = workdir or tempfile.mkdtemp(prefix=f"local-pod-{name}-")
    return Launch(argv, env, cwd, workdir is None, ports)


def remove_workdir(launch: Launch) -> None:
    if launch.owned:
        shutil.rmtree(launch.cwd, ignore_errors=True)


OnOutput = Callable[[str, bytes], None]
"""``on_output(stream, line)``: ``stream`` ``"stdout"`` or ``"stderr"``, ``line`` without its newline."""


class LocalProcess:
    """One run of a container: started at construction, read by a thread of its own.

    ``exit_code`` is ``None`` while it runs, then the code (``128 + N`` when signal N ended it); ``on_exit``
    callbacks run (in the reading thread) once it is set. :meth:`terminate` returns at once: SIGTERM to the group,
    SIGKILL after ``grace`` seconds. Raises ``OSError`` (``FileNotFoundError`` for a program not on ``PATH``) from
    the constructor when the program cannot be started."""

    def __init__(self, launch: Launch, on_output: OnOutput, on_exit: Callable[[int], None] | None = None) -> None:
        self.launch = launch
        self.started_at = time.time()
        self._on_output = on_output
        self._on_exit = [on_exit] if on_exit else []
        self._code: int | None = None
        self._done = threading.Event()
        self._kill_timer: threading.Timer | None = None
        self.proc = spawn(launch.argv, env=launch.env, cwd=launch.cwd)
        self._thread = threading.Thread(target=self._read, name=f"local-process {launch.argv[0]}", daemon=True)
        self._thread.start()

    @property
    def exit_code(self) -> int | None:
        return self._code

    def wait(self, timeout: float) -> int | None:
        """The exit code once the process has ended and its output is read, ``None`` if ``timeout`` passes first."""
        self._done.wait(timeout)
        return self._code

    def ready(self) -> bool:
        """Every TCP container port accepts a connection on its local port."""
        if self._code is not None:
            return False
        for port in self.launch.ports.values():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    pass
            except OSError:
                return False
        return True

    def terminate(self, grace: float) -> None:
        if self._code is not None:
            return
        _signal(self.proc.pid, signal.SIGTERM)
        self._kill_timer = threading.Timer(max(0.0, grace), self.kill)
        self._kill_timer.daemon = True
        self._kill_timer.start()

    def kill(self) -> None:
        if self._code is None:
            _signal(self.proc.pid, signal.SIGKILL)

    def _read(self) -> None:
        streams = {self.proc.stdout: "stdout", self.proc.stderr: "stderr"}
        partial = {"stdout": b"", "stderr": b""}
        with selectors.DefaultSelector() as selector:
            for pipe in streams:
                if pipe is not None:
                    selector.register(pipe, selectors.EVENT_READ)
            deadline: float | None = None
            while selector.get_map():
                if deadline is None and self.proc.poll() is not None:
                    _signal(self.proc.pid, signal.SIGKILL)  # the container ends as a whole
                    deadline = time.monotonic() + DRAIN_SECONDS
                if deadline is not None and time.monotonic() > deadline:
                    break
                for key, _ in selector.select(timeout=0.1):
                    chunk = os.read(key.fd, READ_CHUNK)
                    stream = streams[key.fileobj]  # type: ignore[index]
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    partial[stream] = self._lines(stream, partial[stream] + chunk)
        for stream, rest in partial.items():
            if rest:
                self._emit(stream, rest)
        self._finish()

    def _lines(self, stream: str, data: bytes) -> bytes:
        *lines, rest = data.split(b"\n")
        for line in lines:
            self._emit(stream, line)
        return rest

    def _emit(self, stream: str, line: bytes) -> None:
        with contextlib.suppress(Exception):  # a log sink's failure must not end the reading
            self._on_output(stream, line)

    def _finish(self) -> None:
        _signal(self.proc.pid, signal.SIGKILL)
        try:
            code = self.proc.wait(timeout=REAP_SECONDS)
        except subprocess.TimeoutExpired:
            code = -signal.SIGKILL
        else:
            forget(self.proc)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        self._code = code if code >= 0 else 128 - code
        self._done.set()
        for callback in self._on_exit:
            with contextlib.suppress(Exception):
                callback(self._code)


def _signal(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
