"""Kube access pinned to one context and namespace, behind an allow-list guard.

A guard that checks ``current-context`` once and then runs kubectl without ``--context`` lets a later
``kubectl config use-context`` redirect destructive calls. Here the context is resolved once, checked against the
committed allow-list, and pinned on every call:

- every kubectl child gets ``--context C -n NS``, and a caller's arguments may not override them: flags that choose
  the target (``--context``, ``--kubeconfig``, ``--cluster``, ``--server``/``-s``, ``--user``, ``--token``, ``--as``,
  ``--namespace``/``-n``, ``--all-namespaces``/``-A``, ...) raise ``ValueError`` naming the flag and what to use
  instead (kubectl takes the *last* ``--context`` given, so a caller's flag would win);
- every kubectl child runs in an environment the harness controls (:func:`kubectl_environment`): the kubeconfig
  files resolved at connect time (``KUBECONFIG``), user preferences off (``KUBERC=off``: a kuberc that makes
  ``delete`` interactive turns a delete into ``deletion is cancelled`` with exit 0), no proxy variables, and no
  other ``KUBECTL_*`` switches from the user's shell;
- the kubernetes client is built from the same kubeconfig files, read as kubectl reads them
  (:mod:`harness.kubeconfig`), for that context alone into its own ``Configuration``, never from the
  process-global configuration or a ``KUBECONFIG`` changed later; an exec credential plugin runs within the
  caller's bound and is named when it fails or stalls (:class:`~harness.errors.CredentialPluginFailed`).

The allow-list is checked again on every call. The API server itself is checked once per session by the plugin
(:meth:`Kube.check_api_server`), which tells a refused connection, no answer, a TLS failure, an HTTP error status
and rejected credentials apart.
"""

from __future__ import annotations

import difflib
import email.utils
import fnmatch
import json
import math
import os
import re
import shlex
import shutil
import ssl
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from harness import advice, process
from harness import kubeconfig as kubeconfig_files
from harness.attempts import clamp_to_attempt, note
from harness.config import HarnessConfig, is_namespace_name, kubeconfig_choice, load_config
from harness.errors import (
    ApiServerRejected,
    ApiServerUnreachable,
    ApiServerUnusable,
    ContextNotAllowed,
    ContextNotDefined,
    KubectlError,
    KubectlNotFound,
    KubectlTimeout,
    KubectlUnrecoverable,
    NoKubeContext,
    RolloutDone,
    StrayProcessWarning,
    TerminalStop,
)

DEFAULT_KUBECTL_TIMEOUT = 30.0
_CONFIG_TIMEOUT = 10.0

API_CHECK_TIMEOUT = 5.0
"""Seconds the once-per-session API server check may take per request (a paused VM costs this, not 30 s a call)."""

ENV_PASSED_THROUGH = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "SYSTEMROOT",
)
"""The only variables of the caller's environment a kubectl child sees (plus ``KUBECONFIG`` and ``KUBERC`` set by
the harness). Proxy variables are left out: the allowed contexts are local clusters, reached directly (a
kubeconfig's own ``proxy-url`` still applies); so are ``KUBECTL_*`` switches and ``KUBECACHEDIR``."""


@dataclass(frozen=True)
class ContextPick:
    """How the person reading a guard message picks the context, so its fix names flags they can pass.

    ``flag`` is the option that chooses the context (``--kube-context`` for pytest, ``--context`` for
    ``python -m harness diagnose``); ``example`` is a whole command line with ``{context}`` where the context goes.
    """

    flag: str
    example: str

    def example_for(self, context: str) -> str:
        """``example`` choosing ``context``, in backquotes."""
        return "`" + self.example.replace("{context}", context) + "`"


PYTEST_PICK = ContextPick("--kube-context", "pytest --kube-context {context}")
"""The pytest plugin's way to pick a context (the default of every guard message)."""


class Kube:
    """kubectl and kubernetes-client access bound to one allowed context and one namespace.

    Construct with :meth:`Kube.connect` (resolves and guards the context). ``context``, ``namespace``,
    ``kubectl_path`` and the kubeconfig files (``kubeconfig_path``, ``os.pathsep``-joined) are fixed for the
    object's life; :meth:`in_namespace` gives a Kube for another namespace, guarded the same way.
    """

    def __init__(
        self,
        context: str,
        namespace: str,
        *,
        allowed: tuple[str, ...],
        kubectl_path: str,
        kubeconfig: str | None = None,
        cache_dir: str | None = None,
        pick: ContextPick = PYTEST_PICK,
        allowed_origin: str | None = None,
    ) -> None:
        check_namespace(namespace)
        self.context = context
        self.namespace = namespace
        self.allowed = allowed
        self.kubectl_path = kubectl_path
        self.kubeconfig = kubeconfig
        #: kubectl's discovery cache directory (``--cache-dir``); None: kubectl's default (~/.kube/cache).
        self.cache_dir = cache_dir
        self.kubeconfig_path = resolve_kubeconfig(kubeconfig)
        self.env = kubectl_environment(self.kubeconfig_path)
        """The whole environment of every kubectl child (see :func:`kubectl_environment`)."""
        self._api_client: Any = None
        self._credential: kubeconfig_files.ExecCredential | None = None
        #: how a guard message tells its reader to pick another context (pytest's flags by default)
        self.pick = pick
        #: where the allow-list came from, for the guard's message (:meth:`harness.config.HarnessConfig.origin`)
        self.allowed_origin = allowed_origin
        check_allowed(context, allowed, pick, origin=allowed_origin, kubeconfig_path=self.kubeconfig_path)

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
        pick: ContextPick = PYTEST_PICK,
        read_files: bool = False,
    ) -> Kube:
        """Resolve the context (``context`` or kubectl's current one), guard it, and return a pinned :class:`Kube`.

        With ``read_files`` the current context and the defined contexts are read from the kubeconfig files
        themselves (:func:`kubeconfig_contexts`, merged as kubectl merges them) instead of ``kubectl config``:
        no child runs, so no time goes to a kubectl wrapper that asks the API server first (the gcloud SDK's
        ``kubectl`` dispatcher asks the server's version even for ``config``: up to 5 s against a hung server).
        ``pick`` says how the caller's user picks a context, for the fixes the messages give.

        The kubeconfig file is ``kubeconfig`` (``--kubeconfig``), else ``config.kubeconfig`` (``[tool.harness]
        kubeconfig``), else ``$KUBECONFIG``, else kubectl's default. The namespace is ``namespace``, else
        ``config.namespace``, else the context's own (its ``namespace`` in the kubeconfig), else ``default``.

        Raises ``ValueError`` for an empty ``context`` or a namespace that is not a Kubernetes name;
        :class:`ContextNotAllowed` when the context is outside ``config.allowed_contexts``, before anything runs for
        a requested one; :class:`KubectlNotFound` when kubectl is missing; :class:`NoKubeContext` when the
        kubeconfig file chosen does not exist (named, with where the choice came from), there is no kubeconfig
        (the message says where kubectl looked), no current context, or the context is not in the kubeconfig.
        """
        if context is not None and not context.strip():
            raise ValueError("context must be a non-empty name (or None for kubectl's current context)")
        config = config or load_config()
        origin = config.origin()
        kubeconfig, came_from = kubeconfig_choice(kubeconfig, config)
        files = resolve_kubeconfig(kubeconfig)
        if context is not None:  # refuse before running anything at all
            check_allowed(context, config.allowed_contexts, pick, origin=origin, kubeconfig_path=files)
        if kubeconfig is not None and not os.path.isfile(kubeconfig):
            raise NoKubeContext(f"kubeconfig {kubeconfig!r} (from {came_from}) does not exist")
        path = resolve_kubectl(kubectl)
        if read_files:
            resolved = context or current_context_from_files(files, pick, allowed=config.allowed_contexts)
        else:
            resolved = context or current_context(
                path, kubeconfig=kubeconfig, pick=pick, allowed=config.allowed_contexts
            )
        kube = cls(
            resolved,
            namespace or config.namespace or context_namespace(files, resolved),
            allowed=config.allowed_contexts,
            kubectl_path=path,
            kubeconfig=kubeconfig,
            pick=pick,
            allowed_origin=origin,
        )
        kube.require_context_in_kubeconfig(read_files=read_files)
        return kube

    def in_namespace(self, namespace: str) -> Kube:
        """The same pinned context for ``namespace``: the explicit, still guarded way to reach another namespace.

        Raises ``ValueError`` for a name Kubernetes would refuse (RFC 1123 label), :class:`ContextNotAllowed` if
        the context is no longer allowed.
        """
        self.guard()
        return Kube(
            self.context,
            namespace,
            allowed=self.allowed,
            kubectl_path=self.kubectl_path,
            kubeconfig=self.kubeconfig,
            cache_dir=self.cache_dir,
            pick=self.pick,
            allowed_origin=self.allowed_origin,
        )

    def require_context_in_kubeconfig(self, *, read_files: bool = False) -> None:
        """Raise :class:`NoKubeContext` unless the pinned context is defined in the kubeconfig: one bounded
        ``kubectl config get-contexts``, or with ``read_files`` the files themselves (:func:`kubeconfig_contexts`;
        :class:`~harness.errors.KubeconfigInvalid` for a file kubectl refuses too)."""
        if read_files:
            names = list(kubeconfig_files.load_kubeconfig(self.kubeconfig_path).contexts)
            found = self.context in names
        else:
            argv = [self.kubectl_path, *self._kubeconfig_flag(), "config", "get-contexts", "-o", "name"]
            try:
                done = process.run_bounded(argv, timeout=_CONFIG_TIMEOUT, env=self.env)
            except process.Timeout as exc:
                raise KubectlTimeout(argv, _CONFIG_TIMEOUT, exc.stderr) from None
            names = done.stdout.split()
            found = done.returncode == 0 and self.context in names
        if not found:
            known = ", ".join(names) or "none"
            raise ContextNotDefined(
                f"context {self.context!r} is not in the kubeconfig{_did_you_mean(self.context, names)} (its "
                f"contexts: {known}; {_looked_at(self.kubeconfig_path)}). Fix: pass {self.pick.flag} with a context "
                f"that exists, or {advice.create_cluster(self.allowed)}"
            )

    def guard(self) -> None:
        """Re-check the pinned context against the allow-list. Raises :class:`ContextNotAllowed`."""
        check_allowed(self.context, self.allowed, self.pick, origin=self.allowed_origin)

    # --- kubectl ---------------------------------------------------------------------------------------

    def argv(self, *args: str) -> list[str]:
        """The full kubectl argv for ``args``, pinned: ``kubectl [--kubeconfig K] --context C -n NS args...``.

        Raises ``ValueError`` when ``args`` hold a flag that would override the pin (see :func:`refuse_target_flags`).
        """
        refuse_target_flags(args, self)
        return [self.kubectl_path, *self._kubeconfig_flag(), "--context", self.context, "-n", self.namespace, *args]

    def kubectl(
        self,
        *args: str,
        timeout: float = DEFAULT_KUBECTL_TIMEOUT,
        input: str | None = None,
        check: bool = True,
        while_running: Callable[[], None] | None = None,
        every: float = 2.0,
    ) -> process.Completed:
        """Run kubectl with ``args`` within ``timeout`` seconds (shortened to the current wait attempt's bound).

        The call is complete when kubectl exits; a process it left behind (a wrapper's or a credential plugin's
        child) is killed and reported with a :class:`~harness.errors.StrayProcessWarning`. Raises ``ValueError``
        for a flag that would override the pinned context or namespace; :class:`KubectlTimeout` (group killed)
        on overrun; :class:`KubectlUnrecoverable` on a non-zero exit waiting cannot fix (API server refused,
        unauthorized, resource type not served, TLS, DNS) and :class:`KubectlError` on any other, when
        ``check``; :class:`ContextNotAllowed` if the pinned context is no longer allowed. ``while_running`` is
        called every ``every`` seconds while kubectl runs; what it raises stops kubectl (group killed) and propagates.
        """
        __tracebackhide__ = True
        self.guard()
        argv = self.argv(*args)
        bound = clamp_to_attempt(timeout)
        try:
            done = process.run_bounded(
                argv,
                timeout=bound,
                input=input.encode() if input is not None else None,
                env=self.env,
                while_running=while_running,
                every=every,
            )
        except process.Timeout as exc:
            raise KubectlTimeout(argv, bound, exc.stderr) from None
        except FileNotFoundError:
            raise KubectlNotFound(
                f"kubectl not found at {self.kubectl_path!r}; install kubectl or put it on PATH"
            ) from None
        if done.strays:
            _report_strays(args, done.strays)
        if check and done.returncode != 0:
            raise kubectl_failure(argv, done.returncode, done.stderr)
        return done

    def kubectl_json(self, *args: str, timeout: float = DEFAULT_KUBECTL_TIMEOUT) -> Any:
        """``kubectl args... -o json`` parsed; ``None`` when kubectl printed nothing at all.

        Printing nothing with exit 0 is how kubectl says an object is absent under ``--ignore-not-found``, so
        a "wait until deleted" probe reads ``None``. Raises as :meth:`kubectl`, and :class:`KubectlError` on
        output that is not JSON.
        """
        __tracebackhide__ = True
        done = self.kubectl(*args, "-o", "json", timeout=timeout)
        if not done.stdout.strip():
            return None
        try:
            return json.loads(done.stdout)
        except json.JSONDecodeError as exc:
            raise KubectlError(
                done.argv,
                done.returncode,
                done.stderr,
                cause=f"kubectl output is not JSON ({exc}): {done.stdout[:200]!r}",
            ) from None

    def rollout_restart(self, deployment: str, *, timeout: float = DEFAULT_KUBECTL_TIMEOUT) -> None:
        """``kubectl rollout restart deployment/NAME``. Pair it with :meth:`rollout_status`."""
        __tracebackhide__ = True
        self.kubectl("rollout", "restart", f"deployment/{deployment}", timeout=timeout)

    def rollout_status(
        self,
        deployment: str,
        *,
        timeout: float = 300.0,
        grace: float = 10.0,
        explain_budget: float | None = None,
        restart_limit: int | None = None,
        check_every: float = 2.0,
    ) -> str:
        """Wait (bounded) until the rollout of ``deployment`` completes; returns kubectl's last line (or, when kubectl's
        watch missed the end, the same verdict read from the object).

        ``deployment`` is a name or ``statefulset/NAME``. ``timeout`` seconds (finite, > 0) go to kubectl's own
        ``--timeout`` with millisecond precision, rounded up (``0.4`` becomes ``400ms``: kubectl reads ``0s`` as
        "wait forever"); the process is killed ``grace`` seconds later if kubectl has not exited by itself. Every
        ``check_every`` seconds while kubectl waits, the objects are read again (:class:`harness.rollout.RolloutWatch`):
        a completed rollout returns at once, and a terminal cause (an image that does not exist, a
        ``CreateContainerConfigError``, ``restart_limit`` restarts of one new container during the wait, default
        :data:`harness.terminal.DEFAULT_RESTART_LIMIT`, ``ProgressDeadlineExceeded``, a paused deployment, an
        ``OnDelete`` StatefulSet, a pod no node can take) stops kubectl and raises :class:`harness.RolloutTerminal`.
        A rollout that does not finish in time raises :class:`harness.errors.RolloutStatusFailed` (a
        :class:`harness.RolloutFailed`, an ``AssertionError``, and still the :class:`KubectlError` it explains,
        carried in its message, not chained) whose message explains why from the objects, read within
        ``explain_budget`` seconds (default 15, shortened to what is left of the test; see :mod:`harness.rollout`).
        Default 300 s (pass the budget your deployment's rollout needs).
        """
        __tracebackhide__ = True
        from harness import rollout
        from harness.terminal import DEFAULT_RESTART_LIMIT

        flag = duration_flag("--timeout", timeout)
        if not (math.isfinite(grace) and grace >= 0):
            raise ValueError(f"rollout_status: grace must be finite seconds >= 0, got {grace!r}")
        if not (math.isfinite(check_every) and check_every > 0):
            raise ValueError(f"rollout_status: check_every must be finite seconds > 0, got {check_every!r}")
        ref = deployment if "/" in deployment else f"deployment/{deployment}"
        deadline = time.monotonic() + timeout
        started = rollout.rollout_started(self, ref)  # the spec's evidence describes ref even if it is stopped here
        watch = rollout.RolloutWatch(
            self, ref, restart_limit=DEFAULT_RESTART_LIMIT if restart_limit is None else restart_limit, budget=timeout
        )
        failure: KubectlError | None = None
        try:
            done = self.kubectl(
                "rollout", "status", ref, flag, timeout=timeout + grace, while_running=watch.check, every=check_every
            )
        except RolloutDone as finished:
            rollout.rollout_succeeded(self, ref, started)
            return finished.message
        except TerminalStop as stop:
            raise rollout.rollout_failure(
                self,
                ref,
                cause=f"kubectl: {watch.last_status}",
                started=started,
                budget=explain_budget,
                watch=watch,
                terminal=stop,
            ) from None
        except KubectlError as exc:  # KubectlTimeout too: explain it from the objects, cause first
            failure = exc
        if failure is None:
            rollout.rollout_succeeded(self, ref, started)
            return process.tail(done.stdout, 1)
        try:
            if ONDELETE_REFUSAL in f"{failure.stderr_tail}\n{failure}":
                # kubectl cannot wait for an OnDelete rollout: the harness waits on the objects itself, in its budget
                recheck = _poll_verdict(watch, deadline, check_every)
            else:
                recheck = watch.verdict()  # kubectl's watch can miss the end of a rollout that did complete
        except TerminalStop as stop:
            raise rollout.rollout_failure(
                self,
                ref,
                cause=f"kubectl: {failure}",
                started=started,
                budget=explain_budget,
                watch=watch,
                terminal=stop,
                gave_up=failure,
            ) from None
        except KubectlError:
            recheck = None
        if recheck is not None:
            rollout.rollout_succeeded(self, ref, started)
            return recheck
        raise rollout.rollout_failure(
            self, ref, cause=str(failure), started=started, budget=explain_budget, kubectl_error=failure, watch=watch
        ) from None

    def _kubeconfig_flag(self) -> list[str]:
        flags = ["--kubeconfig", self.kubeconfig] if self.kubeconfig else []
        return flags + (["--cache-dir", self.cache_dir] if self.cache_dir else [])

    # --- the API server ---------------------------------------------------------------------------------

    def api_client(self, *, timeout: float = kubeconfig_files.CREDENTIAL_TIMEOUT) -> Any:
        """A kubernetes ``ApiClient`` built for this context only, from the kubeconfig files kubectl uses.

        The files are read as kubectl reads them (:func:`harness.kubeconfig.load_kubeconfig`) and the client gets
        this context's entries alone, with absolute paths. An exec credential plugin is run by the harness, not by
        the client (whose ``ExecProvider`` has no timeout): within ``timeout`` seconds, in its own process group
        (:func:`harness.kubeconfig.run_exec_plugin`); the client gets the token or certificate it printed. A token
        that expires is fetched again when the client next needs it (bounded by
        :data:`harness.kubeconfig.CREDENTIAL_TIMEOUT`), a certificate when this is called after it expired.

        The global default configuration is untouched. urllib3's retries are off, so a call's
        ``_request_timeout`` bounds it (the client would otherwise retry a refused connection three times,
        each with the full timeout). Raises :class:`~harness.errors.CredentialPluginFailed` (or its
        ``CredentialPluginTimeout``) for the plugin, :class:`~harness.errors.KubeconfigInvalid` for a file kubectl
        refuses too, :class:`NoKubeContext` when the client cannot load the context.
        """
        if self._api_client is not None and self._credential is not None and self._credential.expired():
            self.close()
        if self._api_client is None:
            from kubernetes import client as kube_client
            from kubernetes import config as kube_config

            minified = kubeconfig_files.load_kubeconfig(self.kubeconfig_path).minified(self.context)
            users = minified["users"]
            plugin: dict[str, Any] | None = None
            if users and kubeconfig_files.needs_plugin(users[0]["user"]):
                plugin = dict(users[0]["user"]["exec"])
                self._credential = self._run_plugin(plugin, users[0]["name"], minified, timeout)
                users[0]["user"] = kubeconfig_files.with_credential(users[0]["user"], self._credential)
            configuration = kube_client.Configuration()
            try:
                kube_config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
                    minified, context=self.context, client_configuration=configuration, persist_config=False
                )
            except kube_config.ConfigException as exc:
                raise NoKubeContext(f"the kubernetes client cannot load context {self.context!r}: {exc}") from None
            configuration.retries = False
            if plugin is not None and self._credential is not None and self._credential.token is not None:
                configuration.refresh_api_key_hook = self._token_refresher(  # type: ignore[assignment]
                    plugin, users[0]["name"], minified
                )
            self._api_client = kube_client.ApiClient(configuration)
        return self._api_client

    def _run_plugin(
        self, plugin: dict[str, Any], user: str, minified: dict[str, Any], timeout: float
    ) -> kubeconfig_files.ExecCredential:
        return kubeconfig_files.run_exec_plugin(
            plugin,
            timeout=timeout,
            env=self.env,
            user=user,
            context=self.context,
            cluster=minified["clusters"][0]["cluster"],
        )

    def _token_refresher(self, plugin: dict[str, Any], user: str, minified: dict[str, Any]) -> Callable[[Any], None]:
        """The client's ``refresh_api_key_hook``: a new token from the plugin once the one it gave expired."""

        def refresh(configuration: Any) -> None:
            if self._credential is not None and self._credential.expired():
                self._credential = self._run_plugin(plugin, user, minified, kubeconfig_files.CREDENTIAL_TIMEOUT)
                configuration.api_key["BearerToken"] = f"Bearer {self._credential.token}"

        return refresh

    def server_url(self) -> str:
        """The API server URL of the pinned context: as the kubernetes client loaded it once built, else read from
        the kubeconfig files (no credential plugin runs for it)."""
        if self._api_client is not None:
            return str(self._api_client.configuration.host)
        return self.kubeconfig_server().rstrip("/")

    def kubeconfig_server(self) -> str:
        """The pinned context's API server URL read from the kubeconfig files alone (no client, no credential
        plugin, no network), merged as kubectl merges them: the first file that defines a name wins."""
        return kubeconfig_server(self.kubeconfig_path, self.context)

    def server_time(self, *, timeout: float = 10.0) -> datetime:
        """The API server's clock, from the ``Date`` header of a ``GET /version`` (aware UTC datetime).

        The header has whole seconds (RFC 9110 §5.6.7), so this is the server's time floored to the second:
        a ``since`` anchored on it can only widen a window, never hide a run. ``timeout`` seconds bound the
        request (shortened to the current wait attempt). Raises :class:`ApiServerUnreachable` when no answer
        came (refused, no answer within the bound, TLS, DNS), :class:`ApiServerRejected` when the answer is an
        error status (a 404 here: the URL is not a Kubernetes API server), :class:`ApiServerUnusable` (kind
        ``no-date``) when the answer has no ``Date``.
        """
        __tracebackhide__ = True
        self.guard()
        response = self._get("/version", clamp_to_attempt(timeout))
        date = response.get("date")
        if not date:
            raise ApiServerUnusable(
                f"the API server of context {self.context!r} ({self.server_url()}) answered "
                "GET /version without a Date header",
                kind="no-date",
                context=self.context,
                server=self.server_url(),
            )
        return email.utils.parsedate_to_datetime(date).astimezone(UTC)

    def check_api_server(self, *, timeout: float = API_CHECK_TIMEOUT, deadline: float | None = None) -> ApiServerInfo:
        """Check once that the pinned API server can be used: ``GET /version``, then the namespace.

        Each request is bounded by ``timeout`` seconds, shortened so that none outlasts ``deadline`` (a
        ``time.monotonic()`` value; a request with less than 0.1 s left still gets 0.1 s). Returns
        :class:`ApiServerInfo`. Raises
        :class:`ApiServerUnreachable` / :class:`ApiServerRejected` (both :class:`ApiServerUnusable`) with a
        one-line message naming the context, the server URL, what happened and the likely fix; kinds as in
        :class:`~harness.errors.ApiServerUnusable` (``namespace-missing`` when the namespace does not exist).
        """
        __tracebackhide__ = True
        self.guard()

        def bound() -> float:
            return timeout if deadline is None else max(0.1, min(timeout, deadline - time.monotonic()))

        version = self._get("/version", bound())
        try:
            self._get(f"/api/v1/namespaces/{self.namespace}", bound())
        except ApiServerRejected as exc:
            if exc.status != 404:
                raise
            raise ApiServerRejected(
                f"namespace {self.namespace!r} does not exist on the API server of context {self.context!r} "
                f"({self.server_url()}); deploy what the specs test into it (or `kubectl --context "
                f"{shlex.quote(self.context)} create namespace {self.namespace}`), or choose another with --namespace "
                "or [tool.harness] namespace",
                kind="namespace-missing",
                context=self.context,
                server=self.server_url(),
                status=404,
                hint="deploy into it, or choose another with --namespace or [tool.harness] namespace",
            ) from None
        body = version.get("body") or {}
        return ApiServerInfo(self.server_url(), str(body.get("gitVersion", "unknown")), self.namespace)

    def _get(self, path: str, bound: float) -> dict[str, Any]:
        """``GET path`` on the API server within ``bound`` seconds, a credential plugin's run included:
        ``{"date", "body"}``, or a classified error."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        start = time.monotonic()
        api = self.api_client(timeout=bound)
        left = max(0.1, bound - (time.monotonic() - start))  # the message names the whole bound the caller gave
        method, url, headers, _, _ = api.param_serialize(
            "GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
        )
        try:
            response = api.call_api(method, url, header_params=headers, _request_timeout=(left, left))
            data = response.read()
        except ApiException as exc:  # the client reports a failed TLS handshake as status 0
            if exc.status == 0:
                raise self._unreachable(path, bound, exc, kind="tls", detail=str(exc.reason)) from exc
            raise self._rejected(path, exc.status, exc.reason) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:  # no HTTP answer came back
            raise self._unreachable(path, bound, exc) from exc
        if not 200 <= response.status < 300:
            raise self._rejected(path, response.status, response.reason)
        try:
            body = json.loads(data) if data else {}
        except ValueError:
            body = {}
        return {"date": response.headers.get("Date"), "body": body}

    def _rejected(self, path: str, status: int, reason: str | None) -> ApiServerRejected:
        server = self.server_url()
        kind, hint = {
            401: (
                "unauthorized",
                (
                    f"the credentials the credential plugin `{self._credential.command}` gave are not accepted by "
                    "this server: check what the plugin logs in to and the kubeconfig user's exec entry"
                )
                if self._credential is not None
                else "the server does not accept the context's credentials: "
                + advice.refresh_credentials(self.context),
            ),
            403: ("forbidden", "the context's user is authenticated but lacks the rights: check its RBAC bindings"),
        }.get(
            status,
            (
                "http-status",
                "check the server URL in the kubeconfig (`kubectl config view --minify`): "
                "it may not be a Kubernetes API server, or the cluster is still starting",
            ),
        )
        said = {401: "rejected the credentials (401 Unauthorized)", 403: "refused access (403 Forbidden)"}.get(
            status, f"answered with HTTP {status} {reason or ''}".rstrip()
        )
        return ApiServerRejected(
            f"the API server of context {self.context!r} ({server}) {said} on GET {path}; {hint}",
            kind=kind,
            context=self.context,
            server=server,
            status=status,
            hint=hint,
        )

    def _unreachable(
        self, path: str, bound: float, exc: BaseException, kind: str | None = None, detail: str | None = None
    ) -> ApiServerUnreachable:
        server = self.server_url()
        kind = kind or classify_connection_error(exc)
        said, hint = _UNREACHABLE_TEXT[kind]
        hint = hint.format(start=advice.start_cluster(self.context), renew=advice.refresh_credentials(self.context))
        said = said.format(bound=f"{bound:.1f}", host=urlsplit(server).hostname or server)
        return ApiServerUnreachable(
            f"the API server of context {self.context!r} ({server}) {said} on GET {path}; {hint} "
            f"[{detail.replace(chr(10), ': ')[:200] if detail else f'{type(exc).__name__}: {_first_line(exc)}'}]",
            kind=kind,
            context=self.context,
            server=server,
            hint=hint,
        )

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


@dataclass(frozen=True)
class ApiServerInfo:
    """What :meth:`Kube.check_api_server` found: the ``server`` URL, its ``version`` (gitVersion), the ``namespace``."""

    server: str
    version: str
    namespace: str


_UNREACHABLE_TEXT = {
    "refused": (
        "refused the connection",
        "nothing listens there: the cluster is stopped; {start}",
    ),
    "no-answer": (
        "did not answer within {bound}s",
        "the cluster (or its VM) may be paused or overloaded; if it is stopped, {start}",
    ),
    "closed": (
        "closed the connection without an answer",
        "the API server may be restarting; if it is stopped, {start}",
    ),
    "tls": (
        "failed the TLS handshake",
        "the kubeconfig's certificates or scheme do not match this server (a recreated cluster?): {renew}",
    ),
    "dns": (
        "could not be found ({host} does not resolve)",
        "check the server URL in the kubeconfig (`kubectl config view --minify`)",
    ),
}


def classify_connection_error(exc: BaseException) -> str:
    """How a request got no HTTP answer: ``refused``, ``no-answer``, ``closed``, ``tls`` or ``dns``.

    Reads the exception and its causes (urllib3 wraps the socket error; with retries off it is raised as is).
    """
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 8:
        chain.append(seen)
        seen = (
            getattr(seen, "reason", None)
            if isinstance(getattr(seen, "reason", None), BaseException)
            else (seen.__cause__ or seen.__context__)
        )
    names = " ".join(type(e).__name__ for e in chain)
    text = " ".join(str(e) for e in chain)
    if any(isinstance(e, ssl.SSLError) for e in chain) or "SSLError" in names:
        return "tls"
    if "NameResolutionError" in names or any(isinstance(e, OSError) and "resolution" in str(e).lower() for e in chain):
        return "dns"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "dns"
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "Connection refused" in text:
        return "refused"
    if "Timeout" in names or any(isinstance(e, TimeoutError) for e in chain) or "timed out" in text:
        return "no-answer"
    return "closed"


# --- kubectl failures: what waiting can and cannot fix -----------------------------------------------------

_UNRECOVERABLE = [
    (
        re.compile(r"The connection to the server (\S+) was refused"),
        "api-server-refused",
        "nothing listens at {0}: the cluster is stopped; {start}",
    ),
    (
        re.compile(r"You must be logged in to the server|\(Unauthorized\)"),
        "unauthorized",
        "the API server rejected the context's credentials: {renew}",
    ),
    (
        re.compile(r"the server doesn't have a resource type \"([^\"]+)\""),
        "not-served",
        "the API server does not serve {0}: is its CustomResourceDefinition installed?",
    ),
    (
        re.compile(r"no matches for kind \"([^\"]+)\""),
        "not-served",
        "the API server does not serve kind {0}: is its CustomResourceDefinition installed?",
    ),
    (
        re.compile(r"x509: |tls: |server gave HTTP response to HTTPS client"),
        "tls",
        "the kubeconfig's certificates or scheme do not match the API server: {renew}",
    ),
    (
        re.compile(r"no such host"),
        "dns",
        "the API server's host name does not resolve: check the kubeconfig's server URL",
    ),
    (  # kubectl's loader stats --kubeconfig (client-go clientcmd loader.go): gone, as a stopped cluster removes its own
        re.compile(r"^error: stat (\S+): no such file or directory"),
        "kubeconfig-gone",
        "the kubeconfig {0} is gone (a cluster or API double that stopped removes its own): start it again, or "
        "point --kubeconfig at one that exists",
    ),
    (  # clientcmd's validation of the chosen context (client-go tools/clientcmd/validation.go)
        re.compile(r"context was not found for specified context: (\S+)|context \"([^\"]+)\" does not exist"),
        "context-gone",
        "the kubeconfig no longer defines context {} (its cluster was deleted, or a tool rewrote the kubeconfig): "
        "recreate it, or pass --kube-context with a context that exists",
    ),
]


def kubectl_failure(argv: list[str], returncode: int, stderr: str) -> KubectlError:
    """The error for a kubectl that exited ``returncode``: :class:`KubectlUnrecoverable` when its closing line says
    waiting cannot help (API server refused, unauthorized, resource type not served, TLS, DNS, the kubeconfig file
    or the pinned context gone), else
    :class:`KubectlError`."""
    cause = process.final_line(stderr)
    context = argv[argv.index("--context") + 1] if "--context" in argv[:-1] else ""
    fixes = {"start": advice.start_cluster(context), "renew": advice.refresh_credentials(context)}
    for pattern, reason, hint in _UNRECOVERABLE:
        found = pattern.search(cause)
        if found:
            text = hint.format(*(g for g in found.groups() if g is not None), **fixes)
            return KubectlUnrecoverable(argv, returncode, stderr, reason=reason, hint=text)
    return KubectlError(argv, returncode, stderr)


def _report_strays(args: tuple[str, ...], strays: tuple[str, ...]) -> None:
    text = (
        f"kubectl {' '.join(args)} exited, but processes it started were still running and were killed: "
        f"{'; '.join(strays)}"
    )
    note(text)
    warnings.warn(StrayProcessWarning(text), stacklevel=3)


# --- arguments a caller may not pass ------------------------------------------------------------------------

_CONTEXT_HINT = (
    "the context is chosen once per session (--kube-context, or kubectl's current context) and checked "
    "against [tool.harness] allowed_contexts; to use another local cluster, allow it there and pass "
    "--kube-context"
)
_CREDENTIALS_HINT = "credentials come from the pinned context's kubeconfig entry only"
_TARGET_FLAGS: dict[str, str] = {
    **dict.fromkeys(("--context", "--kubeconfig", "--cluster", "--server", "-s"), _CONTEXT_HINT),
    **dict.fromkeys(
        (
            "--user",
            "--token",
            "--as",
            "--as-group",
            "--as-uid",
            "--as-user-extra",
            "--username",
            "--password",
            "--client-certificate",
            "--client-key",
            "--certificate-authority",
            "--insecure-skip-tls-verify",
            "--tls-server-name",
        ),
        _CREDENTIALS_HINT,
    ),
    **dict.fromkeys(
        ("--namespace", "-n"),
        "for another namespace use kube.in_namespace('NAME'), a Kube pinned to it (the context guard still applies)",
    ),
    **dict.fromkeys(
        ("--all-namespaces", "-A"),
        "a call across all namespaces reaches beyond the pinned one; list "
        "one namespace at a time with kube.in_namespace('NAME')",
    ),
    "--kuberc": "user preferences are off for every harness call (KUBERC=off), so no preferences file can change "
    "what a call does",
}
_SHORT_TARGETS = {"n": "-n", "s": "-s", "A": "-A"}
_SHORT_WITH_VALUE = frozenset("olcLkvns")
"""kubectl's short flags that take a value: in a cluster such as ``-ojson`` the rest is that value."""


def refuse_target_flags(args: tuple[str, ...] | list[str], kube: Kube | None = None) -> None:
    """Raise ``ValueError`` if ``args`` hold a flag that chooses where or as whom kubectl acts.

    Both ``--flag value`` and ``--flag=value`` forms, short forms (``-n x``, ``-nx``, ``-n=x``, ``-A``, ``-s``)
    and short clusters (``-wA``) are found; arguments after ``--`` (a command for ``kubectl exec``) are not
    kubectl's and are left alone. The message names the flag and says what to use instead.
    """
    for arg in args:
        if arg == "--":
            return
        flag = _target_flag(arg)
        if flag is not None:
            pinned = f" (pinned: context {kube.context!r}, namespace {kube.namespace!r})" if kube is not None else ""
            raise ValueError(
                f"kubectl argument {arg!r} is refused: the harness pins the context and namespace on every call"
                f"{pinned}, and kubectl takes the last {flag} given, so this flag would override the pin. "
                f"{_TARGET_FLAGS[flag]}."
            )


def _target_flag(arg: str) -> str | None:
    if arg.startswith("--"):
        name = arg.split("=", 1)[0]
        return name if name in _TARGET_FLAGS else None
    if arg.startswith("-") and len(arg) > 1:
        for letter in arg[1:]:
            if letter in _SHORT_TARGETS:
                return _SHORT_TARGETS[letter]
            if letter in _SHORT_WITH_VALUE or letter == "=":
                return None  # the rest of the cluster is this flag's value
    return None


def check_namespace(namespace: str) -> None:
    """Raise ``ValueError`` unless ``namespace`` is a name Kubernetes accepts for a namespace (RFC 1123 label)."""
    if not is_namespace_name(namespace):
        raise ValueError(
            f"namespace {namespace!r} is not a Kubernetes namespace name (RFC 1123 label: lowercase "
            "letters, digits and '-', at most 63 characters)"
        )


# --- durations kubectl reads ----------------------------------------------------------------------------------

_WHOLE_SECOND_FLAGS = frozenset({"--grace-period"})
"""Duration flags kubectl reads as an integer number of seconds (``0`` there means "immediately", with --force)."""


def duration_flag(name: str, seconds: float) -> str:
    """``NAME=VALUE`` for a kubectl duration flag, never shorter than ``seconds`` and never zero.

    kubectl reads ``--timeout=0s`` (rollout status), ``--request-timeout=0`` and ``--grace-period=0`` as "forever",
    "no timeout" or "force", and ``--since=0s`` as "everything": rounding a small positive budget down to zero
    flips its meaning. So durations round *up*: to whole seconds for ``--grace-period`` (an int flag), else to
    milliseconds as a Go duration (``400ms``, ``120s``). Raises ``ValueError`` for a non-positive, infinite or
    NaN ``seconds``, ``TypeError`` for a non-number.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{name}: seconds must be a number, got {seconds!r}")
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(
            f"{name}: a duration must be finite and > 0 seconds (kubectl reads 0 as forever), got {seconds!r}"
        )
    if name in _WHOLE_SECOND_FLAGS:
        return f"{name}={max(1, math.ceil(seconds - 1e-9))}"
    millis = max(1, math.ceil(seconds * 1000 - 1e-6))
    return f"{name}={millis // 1000}s" if millis % 1000 == 0 else f"{name}={millis}ms"


# --- kubeconfig and environment -------------------------------------------------------------------------------


def resolve_kubeconfig(explicit: str | None = None) -> str:
    """The kubeconfig files kubectl would read now, ``os.pathsep``-joined (:func:`harness.kubeconfig.kubeconfig_paths`:
    ``explicit``, else ``$KUBECONFIG`` without repeats or empty entries, else ``~/.kube/config``; ``""`` when
    ``KUBECONFIG`` names no file). Resolved once per :class:`Kube`, so a later change of ``KUBECONFIG`` cannot
    redirect it."""
    return os.pathsep.join(kubeconfig_files.kubeconfig_paths(explicit))


def kubectl_environment(kubeconfig_path: str | None = None) -> dict[str, str]:
    """The environment of a harness kubectl child: :data:`ENV_PASSED_THROUGH` from this process, ``KUBECONFIG``
    (``kubeconfig_path`` when given; ``""``: no file at all), ``KUBERC=off`` and ``KUBECTL_KUBERC=false`` (user
    preferences off: kubectl 1.33 reads them behind ``KUBECTL_KUBERC=true``, later releases by default)."""
    env = {name: os.environ[name] for name in ENV_PASSED_THROUGH if name in os.environ}
    env.setdefault("PATH", os.defpath)
    if kubeconfig_path is not None:
        env["KUBECONFIG"] = kubeconfig_path or os.pathsep  # a lone separator names no file, as the caller's did
    env["KUBERC"] = "off"
    env["KUBECTL_KUBERC"] = "false"
    return env


def kubeconfig_contexts(kubeconfig_path: str) -> tuple[str | None, list[str]]:
    """``(current_context, context_names)`` of the kubeconfig files ``kubeconfig_path`` (``os.pathsep``-joined),
    read without kubectl and merged as kubectl merges them (:func:`harness.kubeconfig.load_kubeconfig`): the first
    file that sets ``current-context`` gives it; a context name defined in several files is listed once. ``None``
    when no file sets a current context. A file kubectl would refuse is left out here (the messages that list
    contexts use this); :func:`current_context_from_files` raises for it."""
    merged = kubeconfig_files.load_kubeconfig(kubeconfig_path, strict=False)
    return merged.current_context, list(merged.contexts)


def context_namespace(kubeconfig_path: str, context: str) -> str:
    """The ``namespace`` of ``context`` in the kubeconfig files ``kubeconfig_path``, else ``default``: the namespace
    kubectl uses for that context when none is given (client-go's ``clientcmd`` ``Namespace()``)."""
    entry = kubeconfig_files.load_kubeconfig(kubeconfig_path, strict=False).contexts.get(context)
    namespace = entry.value.get("namespace") if entry is not None else None
    return str(namespace) if namespace else "default"


def kubeconfig_server(kubeconfig_path: str, context: str) -> str:
    """The ``server`` of ``context``'s cluster in the kubeconfig files ``kubeconfig_path`` (``os.pathsep``-joined),
    or a short note saying why there is none."""
    merged = kubeconfig_files.load_kubeconfig(kubeconfig_path, strict=False)
    entry = merged.contexts.get(context)
    cluster = merged.clusters.get(str(entry.value.get("cluster") or "")) if entry is not None else None
    if cluster is None or not cluster.value.get("server"):
        return f"(no server for context {context!r} in {kubeconfig_path or 'no kubeconfig file'})"
    return str(cluster.value["server"])


def _did_you_mean(context: str, names: list[str]) -> str:
    close = difflib.get_close_matches(context, names, n=3, cutoff=0.6)
    return f": did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _looked_at(kubeconfig_path: str) -> str:
    paths = [p for p in kubeconfig_path.split(os.pathsep) if p]
    if not paths:
        return "KUBECONFIG names no file"
    found = [p for p in paths if os.path.isfile(p)]
    where = ", ".join(paths)
    return f"kubeconfig read from {where}" if found else f"no kubeconfig file at {where}"


def resolve_kubectl(kubectl: str = "kubectl") -> str:
    """The absolute path of ``kubectl``. Raises :class:`KubectlNotFound` with the fix."""
    path = shutil.which(kubectl)
    if path is None:
        raise KubectlNotFound(f"kubectl not found ({kubectl!r} is not on PATH): install kubectl to run cluster specs")
    return path


def current_context(
    kubectl_path: str, *, kubeconfig: str | None = None, pick: ContextPick = PYTEST_PICK, allowed: tuple[str, ...] = ()
) -> str:
    """``kubectl config current-context``. Raises :class:`NoKubeContext` when there is none; when no kubeconfig
    file exists at all, the message says so and where kubectl looked (``pick``: the flag its fix names;
    ``allowed``: the allow-list, whose local cluster tools the fix suggests)."""
    kubeconfig_path = resolve_kubeconfig(kubeconfig)
    argv = [kubectl_path, *(["--kubeconfig", kubeconfig] if kubeconfig else []), "config", "current-context"]
    try:
        done = process.run_bounded(argv, timeout=_CONFIG_TIMEOUT, env=kubectl_environment(kubeconfig_path))
    except process.Timeout as exc:
        raise KubectlTimeout(argv, _CONFIG_TIMEOUT, exc.stderr) from None
    except FileNotFoundError:
        raise KubectlNotFound(f"kubectl not found at {kubectl_path!r}") from None
    name = done.stdout.strip()
    if done.returncode == 0 and name:
        return name
    _require_a_kubeconfig_file(kubeconfig_path, explicit=kubeconfig is not None, allowed=allowed)
    said = process.tail(done.stderr, 1) or "no output"
    raise NoKubeContext(f"no current kube context ({said}); {_pick_or_create(kubeconfig_path, allowed, pick)}")


def current_context_from_files(
    kubeconfig_path: str, pick: ContextPick = PYTEST_PICK, *, allowed: tuple[str, ...] = ()
) -> str:
    """The ``current-context`` of the kubeconfig files ``kubeconfig_path`` (see :func:`kubeconfig_contexts`), read
    without kubectl. Raises :class:`NoKubeContext` as :func:`current_context` does, and
    :class:`~harness.errors.KubeconfigInvalid` for a file kubectl refuses too."""
    _require_a_kubeconfig_file(kubeconfig_path, explicit=False, allowed=allowed)
    name = kubeconfig_files.load_kubeconfig(kubeconfig_path).current_context
    if name:
        return name
    raise NoKubeContext(
        f"no current kube context (none set in {kubeconfig_path}); {_pick_or_create(kubeconfig_path, allowed, pick)}"
    )


def _pick_or_create(kubeconfig_path: str, allowed: tuple[str, ...], pick: ContextPick) -> str:
    """The fix for "no current context": pick an allowed context the kubeconfig has, or create a cluster."""
    usable = advice.allowed_among(kubeconfig_contexts(kubeconfig_path)[1], allowed)
    if usable:
        listed = ", ".join(usable)
        return f"pick one of the allowed contexts your kubeconfig has ({listed}): {pick.example_for(usable[0])}"
    return f"{advice.create_cluster(allowed) if allowed else 'create a cluster'}, or pass {pick.flag}"


def _require_a_kubeconfig_file(kubeconfig_path: str, *, explicit: bool, allowed: tuple[str, ...] = ()) -> None:
    paths = [p for p in kubeconfig_path.split(os.pathsep) if p] or ["(KUBECONFIG names no file)"]
    if not any(os.path.isfile(p) for p in paths):
        source = "$KUBECONFIG" if os.environ.get("KUBECONFIG") and not explicit else "its default"
        create = advice.create_cluster(allowed) if allowed else "create a cluster"
        raise NoKubeContext(
            f"no kubeconfig found: kubectl looked at {', '.join(paths)} ({source}) and there is no file; "
            f"{create}, or pass --kubeconfig (or set [tool.harness] kubeconfig, or KUBECONFIG) to yours"
        )


def check_allowed(
    context: str,
    allowed: tuple[str, ...],
    pick: ContextPick = PYTEST_PICK,
    *,
    origin: str | None = None,
    kubeconfig_path: str | None = None,
) -> None:
    """Raise :class:`ContextNotAllowed` unless ``context`` matches one of the ``allowed`` glob patterns.

    The message says where the allow-list came from (``origin``, :meth:`harness.config.HarnessConfig.origin`; never
    a file that was not read) and builds its fix from the allow-list: the allowed contexts the kubeconfig files
    ``kubeconfig_path`` define (default: ``$KUBECONFIG`` or kubectl's default), picked the way ``pick`` says, or
    else how to create a local cluster whose context the list accepts.
    """
    if any(fnmatch.fnmatchcase(context, pattern) for pattern in allowed):
        return
    usable = advice.allowed_among(kubeconfig_contexts(kubeconfig_path or resolve_kubeconfig(None))[1], allowed)
    if usable:
        fix = (
            f"use an allowed context your kubeconfig has ({', '.join(usable)}): "
            f"`kubectl config use-context {shlex.quote(usable[0])}`, or for this run only "
            f"{pick.example_for(shlex.quote(usable[0]))}"
        )
    else:
        fix = f"no context in your kubeconfig is allowed: {advice.create_cluster(allowed)}"
    raise ContextNotAllowed(
        f"refusing kube context {context!r}: the harness may only touch {', '.join(allowed)} "
        f"({origin or 'its allow-list'}). Fix: {fix}; to allow another local cluster, add it to "
        "[tool.harness] allowed_contexts in a commit."
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else "(no message)"


ONDELETE_REFUSAL = "rollout status is only available for RollingUpdate strategy type"
"""What ``kubectl rollout status`` says at once for an ``OnDelete`` StatefulSet or DaemonSet (kubectl's
``polymorphichelpers/rollout_status.go``): it cannot wait for one, so the harness does."""


def _poll_verdict(watch: Any, deadline: float, every: float) -> str | None:
    """Read ``watch.verdict()`` every ``every`` seconds until it says done (its message) or ``deadline`` (monotonic)
    passes (``None``); a :class:`~harness.errors.TerminalStop` or ``KubectlError`` propagates."""
    while True:
        verdict: str | None = watch.verdict()
        left = deadline - time.monotonic()
        if verdict is not None or left <= 0:
            return verdict
        time.sleep(min(every, left))
