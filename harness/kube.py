"""Kube access pinned to one context and namespace, behind an allow-list guard.

Upstream's guard checked ``current-context`` once and then ran every kubectl without ``--context``, so a
later ``use-context`` would have redirected destructive calls (stack-under-test.md §4, field-pitfalls.md §7).
Here the context is resolved once, checked against the committed allow-list, and then passed explicitly
on every kubectl child (``--context C -n NS``) and to the kubernetes client, which is built for that
context alone (``new_client_from_config(context=...)``), never from the process-global configuration.
The allow-list is checked again on every call.
"""

from __future__ import annotations

import email.utils
import fnmatch
import json
import os
import shutil
import time
from datetime import datetime, timezone
from typing import Any

from harness import process
from harness.attempts import clamp_to_attempt
from harness.config import HarnessConfig, load_config
from harness.errors import ApiServerUnreachable, ContextNotAllowed, KubectlError, KubectlNotFound, KubectlTimeout, NoKubeContext

DEFAULT_KUBECTL_TIMEOUT = 30.0
_CONFIG_TIMEOUT = 10.0


class Kube:
    """kubectl and kubernetes-client access bound to one allowed context and one namespace.

    Construct with :meth:`Kube.connect` (resolves and guards the context). ``context``, ``namespace`` and
    ``kubectl_path`` are fixed for the object's life.
    """

    def __init__(self, context: str, namespace: str, *, allowed: tuple[str, ...], kubectl_path: str, kubeconfig: str | None = None, cache_dir: str | None = None) -> None:
        self.context = context
        self.namespace = namespace
        self.allowed = allowed
        self.kubectl_path = kubectl_path
        self.kubeconfig = kubeconfig
        #: kubectl's discovery cache directory (``--cache-dir``); None: kubectl's default (~/.kube/cache).
        self.cache_dir = cache_dir
        self._api_client: Any = None
        check_allowed(context, allowed)

    # --- construction and the guard ------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        context: str | None = None,
        namespace: str | None = None,
        *,
        config: HarnessConfig | None = None,
        kubectl: str = "kubectl",
        kubeconfig: str | None = None,
    ) -> Kube:
        """Resolve the context (``context`` or kubectl's current one), guard it, and return a pinned :class:`Kube`.

        Raises ``ValueError`` for an empty ``context``; :class:`ContextNotAllowed` when the context is outside
        ``[tool.harness] allowed_contexts`` (default ``["minikube"]``), before anything runs for a requested one;
        :class:`KubectlNotFound` when kubectl is missing; :class:`NoKubeContext` when there is no kubeconfig,
        no current context, or the context is not defined in the kubeconfig.
        """
        if context is not None and not context.strip():
            raise ValueError("context must be a non-empty name (or None for kubectl's current context)")
        config = config or load_config()
        if context is not None:
            check_allowed(context, config.allowed_contexts)  # refuse before running anything at all
        if kubeconfig is not None and not os.path.isfile(kubeconfig):
            raise NoKubeContext(f"kubeconfig {kubeconfig!r} does not exist")
        path = resolve_kubectl(kubectl)
        resolved = context or current_context(path, kubeconfig=kubeconfig)
        kube = cls(resolved, namespace or config.namespace, allowed=config.allowed_contexts, kubectl_path=path, kubeconfig=kubeconfig)
        kube.require_context_in_kubeconfig()
        return kube

    def require_context_in_kubeconfig(self) -> None:
        """Raise :class:`NoKubeContext` unless the pinned context is defined in the kubeconfig (one bounded call)."""
        argv = [self.kubectl_path, *(["--kubeconfig", self.kubeconfig] if self.kubeconfig else []), "config", "get-contexts", "-o", "name"]
        try:
            done = process.run_bounded(argv, timeout=_CONFIG_TIMEOUT)
        except process.Timeout:
            raise KubectlTimeout(argv, _CONFIG_TIMEOUT, "") from None
        names = done.stdout.split()
        if done.returncode != 0 or self.context not in names:
            known = ", ".join(names) or "none"
            raise NoKubeContext(
                f"context {self.context!r} is not in the kubeconfig (contexts: {known}); start minikube (`minikube start`) "
                "so that it creates the context, or pass --kube-context with one that exists"
            )

    def guard(self) -> None:
        """Re-check the pinned context against the allow-list. Raises :class:`ContextNotAllowed`."""
        check_allowed(self.context, self.allowed)

    # --- kubectl ---------------------------------------------------------------------------------------

    def argv(self, *args: str) -> list[str]:
        """The full kubectl argv for ``args``, pinned: ``kubectl [--kubeconfig K] --context C -n NS args...``."""
        pinned = [self.kubectl_path]
        if self.kubeconfig:
            pinned += ["--kubeconfig", self.kubeconfig]
        if self.cache_dir:
            pinned += ["--cache-dir", self.cache_dir]
        return [*pinned, "--context", self.context, "-n", self.namespace, *args]

    def kubectl(self, *args: str, timeout: float = DEFAULT_KUBECTL_TIMEOUT, input: str | None = None, check: bool = True) -> process.Completed:
        """Run kubectl with ``args`` within ``timeout`` seconds (shortened to the current wait attempt's bound).

        Raises :class:`KubectlTimeout` (group killed) on overrun, :class:`KubectlError` on a non-zero exit
        when ``check``, :class:`ContextNotAllowed` if the pinned context is no longer allowed.
        """
        self.guard()
        argv = self.argv(*args)
        bound = clamp_to_attempt(timeout)
        try:
            done = process.run_bounded(argv, timeout=bound, input=input.encode() if input is not None else None)
        except process.Timeout as exc:
            raise KubectlTimeout(argv, bound, process.tail(exc.stderr)) from None
        except FileNotFoundError:
            raise KubectlNotFound(f"kubectl not found at {self.kubectl_path!r}; install kubectl or put it on PATH") from None
        if check and done.returncode != 0:
            raise KubectlError(argv, done.returncode, process.tail(done.stderr))
        return done

    def kubectl_json(self, *args: str, timeout: float = DEFAULT_KUBECTL_TIMEOUT) -> Any:
        """``kubectl args... -o json`` parsed. Raises as :meth:`kubectl`, and :class:`KubectlError` on unparsable output."""
        done = self.kubectl(*args, "-o", "json", timeout=timeout)
        try:
            return json.loads(done.stdout)
        except json.JSONDecodeError as exc:
            raise KubectlError(done.argv, done.returncode, f"output is not JSON ({exc}): {done.stdout[:200]!r}") from None

    def rollout_restart(self, deployment: str, *, timeout: float = DEFAULT_KUBECTL_TIMEOUT) -> None:
        """``kubectl rollout restart deployment/NAME``. Pair it with :meth:`rollout_status`."""
        self.kubectl("rollout", "restart", f"deployment/{deployment}", timeout=timeout)

    def rollout_status(self, deployment: str, *, timeout: float = 300.0, grace: float = 10.0,
                       explain_budget: float | None = None) -> str:
        """Wait (bounded) until the rollout of ``deployment`` completes; returns kubectl's last line.

        ``deployment`` is a name or ``statefulset/NAME``. ``timeout`` seconds go to kubectl's own ``--timeout``;
        the process is killed ``grace`` seconds later if kubectl has not exited by itself. A rollout that does not
        finish (kubectl's exit, or :class:`KubectlTimeout`, chained as the cause) raises
        :class:`harness.errors.RolloutStatusFailed` (a :class:`harness.RolloutFailed`, an ``AssertionError``, and
        still the :class:`KubectlError` it explains) whose message explains why from the objects,
        read within ``explain_budget`` seconds (default 15, shortened to what is left of the test; see
        :mod:`harness.rollout`). (Default 300 s, as upstream's resilience helpers: stack-under-test.md §8.)
        """
        from harness import rollout

        ref = deployment if "/" in deployment else f"deployment/{deployment}"
        started = rollout.rollout_started(self, ref)  # the spec's evidence describes ref even if it is stopped here
        try:
            done = self.kubectl("rollout", "status", ref, f"--timeout={timeout:.0f}s", timeout=timeout + grace)
        except KubectlError as exc:  # KubectlTimeout too: explain it from the objects, cause first
            raise rollout.rollout_failure(self, ref, cause=str(exc), started=started, budget=explain_budget,
                                          kubectl_error=exc) from exc
        rollout.rollout_succeeded(self, ref, started)
        return process.tail(done.stdout, 1)

    # --- the API server's clock -------------------------------------------------------------------------

    def api_client(self) -> Any:
        """A kubernetes ``ApiClient`` built for this context only (the global default configuration is untouched).

        urllib3's retries are off, so a call's ``_request_timeout`` bounds it (the client would otherwise retry
        a refused connection three times, each with the full timeout).
        """
        if self._api_client is None:
            from kubernetes import client as kube_client
            from kubernetes import config as kube_config

            configuration = kube_client.Configuration()
            kube_config.load_kube_config(config_file=self.kubeconfig, context=self.context, client_configuration=configuration, persist_config=False)
            configuration.retries = False
            self._api_client = kube_client.ApiClient(configuration)
        return self._api_client

    def server_time(self, *, timeout: float = 10.0) -> datetime:
        """The API server's clock, from the ``Date`` header of a ``GET /version`` (aware UTC datetime).

        The header has whole seconds (RFC 9110 §5.6.7), so this is the server's time floored to the second:
        a ``since`` anchored on it can only widen a window, never hide a run. Raises :class:`ApiServerUnreachable`
        when the API server does not answer within ``timeout`` seconds (shortened to the current wait attempt),
        answers with an error status, or sends no ``Date``.
        """
        self.guard()
        bound = clamp_to_attempt(timeout)
        from kubernetes import client as kube_client

        try:
            raw = kube_client.VersionApi(self.api_client()).get_code_with_http_info(_preload_content=False, _request_timeout=(bound, bound))
        except Exception as exc:  # urllib3 and ApiException alike: the hop is the API server
            raise ApiServerUnreachable(
                f"the API server of context {self.context!r} did not answer GET /version within {bound:.1f}s: {type(exc).__name__}: {exc}"
            ) from exc
        raw = raw[0] if isinstance(raw, tuple) else raw
        try:
            date = raw.headers.get("Date")
        finally:
            raw.release_conn()
        if not date:
            raise ApiServerUnreachable(f"the API server of context {self.context!r} answered GET /version without a Date header")
        return email.utils.parsedate_to_datetime(date).astimezone(timezone.utc)

    def clock_skew(self, *, timeout: float = 10.0) -> float:
        """Host clock minus server clock, in signed seconds (positive: the host is ahead).

        Measured against the midpoint of the request; the server's ``Date`` is floored to the second, so
        the result is accurate to about ±0.5 s plus half the round trip.
        """
        before = time.time()
        server = self.server_time(timeout=timeout)
        after = time.time()
        return (before + after) / 2 - (server.timestamp() + 0.5)

    def close(self) -> None:
        """Release the kubernetes client's connection pool (bounded; idempotent)."""
        if self._api_client is not None:
            self._api_client.close()
            self._api_client = None

    def __repr__(self) -> str:
        return f"Kube(context={self.context!r}, namespace={self.namespace!r})"


def resolve_kubectl(kubectl: str = "kubectl") -> str:
    """The absolute path of ``kubectl``. Raises :class:`KubectlNotFound` with the fix."""
    path = shutil.which(kubectl)
    if path is None:
        raise KubectlNotFound(f"kubectl not found ({kubectl!r} is not on PATH): install kubectl to run cluster specs")
    return path


def current_context(kubectl_path: str, *, kubeconfig: str | None = None) -> str:
    """``kubectl config current-context``. Raises :class:`NoKubeContext` when there is none (or no kubeconfig)."""
    argv = [kubectl_path, *(["--kubeconfig", kubeconfig] if kubeconfig else []), "config", "current-context"]
    try:
        done = process.run_bounded(argv, timeout=_CONFIG_TIMEOUT)
    except process.Timeout:
        raise KubectlTimeout(argv, _CONFIG_TIMEOUT, "") from None
    except FileNotFoundError:
        raise KubectlNotFound(f"kubectl not found at {kubectl_path!r}") from None
    name = done.stdout.strip()
    if done.returncode != 0 or not name:
        said = process.tail(done.stderr, 1) or "no output"
        raise NoKubeContext(f"no current kube context ({said}); start minikube (`minikube start`) or pass --kube-context")
    return name


def check_allowed(context: str, allowed: tuple[str, ...]) -> None:
    """Raise :class:`ContextNotAllowed` unless ``context`` matches one of the ``allowed`` glob patterns."""
    if any(fnmatch.fnmatchcase(context, pattern) for pattern in allowed):
        return
    raise ContextNotAllowed(
        f"refusing kube context {context!r}: cluster specs may only touch {', '.join(allowed)} "
        f"([tool.harness] allowed_contexts in pyproject.toml). Fix: `kubectl config use-context minikube` or "
        f"`pytest --kube-context minikube`; to allow another local cluster, add it to allowed_contexts in a commit."
    )
