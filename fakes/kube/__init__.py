"""A Kubernetes API server double that the real kubectl (1.27 to 1.33) and the kubernetes client accept.

No cluster, container engine or kube-apiserver binary exists on the machines the harness is tested on, so the
harness's kubectl and kubernetes-client code is tested against this double: an in-memory, stateful API server on
127.0.0.1 (OS-chosen port, plain http or https, bearer token), in the family of ``fakes.qdrant`` and ``fakes.github``
(request journal, ``/_fake/`` admin API, the shared fault kinds).

Start it::

    with fakes.kube.serve(kubeconfig="/tmp/kc", context="fake-kube", namespace="default") as kd:
        subprocess.run(["kubectl", "--kubeconfig", kd.kubeconfig, "--context", kd.context,
                        "--cache-dir", kd.cache_dir, "get", "pods"])   # or kd.kubectl("get", "pods")
        kd.store.create("configmaps", {"metadata": {"name": "x", "namespace": "default"}})
        kd.clock.set_offset(-90.0)                      # the API server's clock 90 s behind the host
        kd.fault("status", "/api/v1/namespaces/*/pods", status=429, headers=[("Retry-After", "1")], times=1)
        kd.kube()                                       # a harness.Kube pinned to the double

or ``python -m fakes.kube --kubeconfig PATH [--context NAME] [--namespace NS] [--kubectl-version 1.32.4]``, or the
pytest fixture ``fake_kube``. ``/usr/bin/kubectl`` on the test machines is a dispatcher that runs the kubectl build
matching the server's ``gitVersion``, so ``kubectl_version`` also picks the real kubectl build under test.

What it serves (module by module):

- ``server``: aiohttp in its own thread and loop; the request pipeline (admin, faults, journal, auth, ``Date``).
  ``tokens`` (the admin token, ServiceAccount tokens from TokenRequest), ``authz`` (RBAC for ServiceAccounts).
- ``api``: version, discovery, OpenAPI, CRUD, list/watch, patch, subresources. ``discovery`` (aggregated v2 and
  v2beta1, legacy), ``openapi`` (the minimal v3 that ``kubectl apply`` needs), ``tables`` (``kubectl get``
  output), ``patch`` (JSON, merge, strategic merge, server-side apply), ``validation`` (422 Invalid),
  ``defaults``, ``selectors`` (label and field), ``watch``.
- ``store``: objects, resourceVersions, generations, deletion, garbage collection, history, change feeds;
  ``resources``: the served types (built-ins and CRDs); ``clock``: the double's clock and timers.
- ``double``: all of the above for one double, plus the admin hook (clock, state dump, silent watches).

Extension points (for streaming subresources and controllers; details in the named module docstrings):

- ``double.subresources.register("pods", "exec", handler)``: a handler for ``<resource>/<name>/<subresource>``,
  given the aiohttp request and the resolved object (:mod:`fakes.kube.extensions`).
- ``double.store.subscribe(callback, ["apps/deployments"])``: change events on the double's loop;
  ``store.create`` / ``update(subresource="status", bump_generation=...)`` / ``mutate`` / ``delete`` /
  ``remove`` write back; ``double.timers.call_later(seconds, fn)`` runs timed work on the double's clock
  (:mod:`fakes.kube.store`, :mod:`fakes.kube.clock`). ``double.on_reset`` hooks run after a reset.
- ``double.ports`` (pod container port to a local host:port) and ``double.exec_handlers`` (per-pod exec
  handlers) (:mod:`fakes.kube.extensions`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fakes.extras import requires_extra

with requires_extra("fakes.kube"):
    from fakes.faults import Fault
    from fakes.journal import JournalEntry
    from fakes.kube import kubeconfig as kubeconfig_file
    from fakes.kube import tls as tls_certs
    from fakes.kube.clock import Clock
    from fakes.kube.double import KubeDouble
    from fakes.kube.portforward import PortForwarding
    from fakes.kube.resources import Registry
    from fakes.kube.server import KubeServer
    from fakes.kube.store import Store
    from fakes.runtime import FakeRuntime
    from harness import process

if TYPE_CHECKING:
    from fakes.kube.components import Controllers

DEFAULT_CONTEXT = "fake-kube"
DEFAULT_KUBECTL_VERSION = "v1.32.4"


class KubeHandle:
    """What a spec holds while a double runs (the kube double's ``FakeHandle``).

    ``url`` (``http://127.0.0.1:<port>``), ``kubeconfig`` (path), ``context``, ``namespace``, ``token``,
    ``cache_dir`` (kubectl's discovery cache for this double only), ``double`` and its ``store``, ``clock``,
    ``registry``; ``runtime`` holds the journal and fault table.
    """

    def __init__(self, server: KubeServer, kubeconfig: str, context: str, namespace: str, cache_dir: str) -> None:
        self.server = server
        self.double: KubeDouble = server.double
        self.runtime: FakeRuntime = server.runtime
        self.url = server.url
        self.kubeconfig = kubeconfig
        self.context = context
        self.namespace = namespace
        self.cache_dir = cache_dir
        self.served = True

    @property
    def token(self) -> str:
        return self.double.token

    @property
    def store(self) -> Store:
        return self.double.store

    @property
    def clock(self) -> Clock:
        return self.double.clock

    @property
    def portforward(self) -> PortForwarding:
        """Port-forward faults and tunnels: ``fail_open(ns, pod)``, ``fail_next(ns, pod, times=1)``,
        ``wedge(ns, pod)``, ``clear_faults()``, ``tunnels()``, ``wait_connections(ns, pod)``, ``map(ns, pod, port,
        host, local_port)`` (:mod:`fakes.kube.portforward`)."""
        return self.double.portforward

    @property
    def controllers(self) -> Controllers:
        """The simulated controllers, scheduler, kubelet, logs and events (:class:`fakes.kube.components.Controllers`:
        ``.kubelet.set_faults(...)``, ``.logs.append(...)``, ``.events``). Raises ``RuntimeError`` for a double
        served with ``controllers=False``."""
        from fakes.kube.components import of

        return of(self.double)

    @property
    def registry(self) -> Registry:
        return self.double.registry

    @property
    def git_version(self) -> str:
        return self.double.git_version

    # --- the shared fake machinery ------------------------------------------------------------------------

    def requests(
        self, *, path_prefix: str | None = None, since: Any = None, method: str | None = None
    ) -> list[JournalEntry]:
        """Journal entries, oldest first (``Authorization`` redacted); filters as ``FakeHandle.requests``."""
        return self.runtime.journal.entries(path_prefix=path_prefix, since=since, method=method)

    def fault(self, kind: str, path: str = "*", *, method: str = "*", times: int | None = None, **params: Any) -> Fault:
        """Add a fault (``fakes.faults``): ``fault("status", "/api/v1/namespaces/*/pods", status=503, times=1)``,
        ``fault("hang", "/apis/apps/v1/*")``, ``fault("latency", delay=2.0)``, ``fault("reset", times=1)``.
        A status fault without ``body`` answers a real ``Status`` (429: ``Retry-After: 1`` unless given).
        Raises ``fakes.faults.FaultSpecError`` on a bad kind or parameter."""
        return self.runtime.faults.add(Fault.from_dict(dict(params, kind=kind, path=path, method=method, times=times)))

    def clear_faults(self, fault_id: str | None = None) -> None:
        self.runtime.faults.clear(fault_id)

    def silence_watches(self, silent: bool = True) -> None:
        """Open and new watches stop sending anything while staying open (``False`` resumes)."""
        self.double.watches_silent = silent

    def reset(self) -> None:
        """Objects, CRDs, port mappings, exec handlers, clock offset, journal and faults all back to the start."""
        self.runtime.reset()

    # --- kubectl against this double -------------------------------------------------------------------------

    def kubectl_argv(self, *args: str, kubectl: str = "kubectl", namespace: str | None = None) -> list[str]:
        """``kubectl --kubeconfig K --context C --cache-dir D [-n NS] args...`` for this double."""
        argv = [kubectl, "--kubeconfig", self.kubeconfig, "--context", self.context, "--cache-dir", self.cache_dir]
        if namespace is not None:
            argv += ["-n", namespace]
        return argv + list(args)

    def kubectl(
        self,
        *args: str,
        timeout: float = 30.0,
        input: str | None = None,
        kubectl: str = "kubectl",
        namespace: str | None = None,
    ) -> Any:
        """Run a real kubectl against the double within ``timeout`` seconds; returns ``harness.process.Completed``
        (exit code not checked). Raises ``harness.process.Timeout`` (process group killed) on overrun."""
        from harness import process

        argv = self.kubectl_argv(*args, kubectl=kubectl, namespace=namespace)
        return process.run_bounded(
            argv, timeout=timeout, input=input.encode() if input is not None else None, env=self.env()
        )

    def env(self) -> dict[str, str]:
        """An environment for kubectl children: this double's ``KUBECONFIG`` and ``KUBECACHEDIR``."""
        env = dict(os.environ)
        env["KUBECONFIG"] = self.kubeconfig
        env["KUBECACHEDIR"] = self.cache_dir
        return env

    def kube(self, *, kubectl: str = "kubectl", namespace: str | None = None) -> Any:
        """A ``harness.Kube`` pinned to this double's context (allowed for it alone), kubeconfig and cache dir."""
        from harness.kube import Kube, resolve_kubectl

        return Kube(
            self.context,
            namespace or self.namespace,
            allowed=(self.context,),
            kubectl_path=resolve_kubectl(kubectl),
            kubeconfig=self.kubeconfig,
            cache_dir=self.cache_dir,
        )

    def __repr__(self) -> str:
        return f"KubeHandle(url={self.url!r}, context={self.context!r}, git_version={self.git_version!r})"


@contextlib.contextmanager
def serve(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str = DEFAULT_CONTEXT,
    namespace: str = "default",
    kubectl_version: str = DEFAULT_KUBECTL_VERSION,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    clock_offset: float = 0.0,
    history_size: int = 1000,
    tls: bool = False,
    start_timeout: float = 10.0,
    stop_timeout: float = 10.0,
    controllers: bool = True,
) -> Iterator[KubeHandle]:
    """Serve a fresh double; yields a :class:`KubeHandle`. Everything is gone when the ``with`` ends: the thread,
    the socket, the temporary directory (cache, and the kubeconfig when no path was given), and the double's
    kubeconfig entries (a file it created is deleted; entries merged into an existing file are removed).

    ``kubectl_version`` is the ``gitVersion`` ``/version`` reports (``1.29.0`` or ``v1.29.0``). ``namespace`` is the
    kubeconfig context's namespace; it exists from the start. ``tls``: serve https with a throwaway CA (in the
    kubeconfig) and require the token on every request; over plain http (the default) client-go never sends the
    kubeconfig's token, so a request without credentials is served and only a wrong token is a 401
    (:mod:`fakes.kube.tls`). Raises ``fakes.server.FakeServerError`` when the
    server does not start within ``start_timeout`` seconds or its thread outlives ``stop_timeout``; ``ValueError``
    for a ``kubeconfig`` path holding something that is not a kubeconfig. ``controllers``: run the simulated
    controllers, scheduler and kubelet (:mod:`fakes.kube.components`); ``False`` serves a bare API.
    """
    workdir = tempfile.mkdtemp(prefix="fake-kube-")
    process.remove_when_gone(workdir)  # a hard kill (SIGKILL, os._exit) leaves no folder behind either
    written: kubeconfig_file.Written | None = None
    path = os.fspath(kubeconfig) if kubeconfig is not None else os.path.join(workdir, "kubeconfig")
    server: KubeServer | None = None
    try:
        double = KubeDouble(
            git_version=kubectl_version,
            token=token or secrets.token_urlsafe(32),
            history_size=history_size,
            clock_offset=clock_offset,
            namespace=namespace,
        )
        certs = tls_certs.generate(host) if tls else None
        double.require_token = tls
        double.ca_pem = certs.ca_pem if certs else None
        server = KubeServer(double, host, port, ssl_context=tls_certs.ssl_context(certs) if certs else None)
        server.start(start_timeout)
        if controllers:
            from fakes.kube.components import install

            install(double)
        written = kubeconfig_file.write(
            path, server.url, double.token, context, namespace, ca_pem=certs.ca_pem if certs else None
        )
        cache_dir = os.path.join(workdir, "cache")
        os.makedirs(cache_dir, exist_ok=True)
        yield KubeHandle(server, path, context, namespace, cache_dir)
    finally:
        try:
            if server is not None:
                server.stop(stop_timeout)
        finally:
            if written is not None:
                kubeconfig_file.remove_entries(path, context, written)
            shutil.rmtree(workdir, ignore_errors=True)
            process.forget_folder(workdir)


__all__ = ["serve", "KubeHandle", "KubeDouble", "DEFAULT_CONTEXT", "DEFAULT_KUBECTL_VERSION"]
