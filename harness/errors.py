"""Every exception the harness raises, in one place so a spec can catch by kind.

Failures of the system under test are ``AssertionError`` subclasses (pytest reports them as failures);
failures of the harness's own set-up (no kubectl, a refused context) are ``HarnessError``s (pytest
reports them as errors, or the plugin turns them into a one-line skip). A request that fails names its hop by
class: catch :class:`PortForwardFailure` for "kubectl port-forward failed", :class:`ServiceFailure` for "the
service behind it did", :class:`KubectlError` for a kubectl call, :class:`ApiServerUnusable` for the API server.

The tree (``harness`` exports every public name; the module where each error is raised imports it from here; a
stack layer adds its own subclasses in its own module)::

    Exception
    ├── HarnessError ··························· the harness's own set-up or infrastructure failed
    │   ├── HarnessConfigError ················· [tool.harness] is wrong (also a ValueError)
    │   ├── DurationsFileError ················· the cluster specs' durations file is not what the harness writes
    │   ├── KubectlNotFound
    │   ├── KubectlError ······················· the kubectl hop: a kubectl call exited non-zero
    │   │   ├── KubectlTimeout ················· ...or was killed at its bound
    │   │   ├── KubectlUnrecoverable ··········· ...in a way waiting cannot fix (also Unrecoverable)
    │   │   └── RolloutStatusFailed ············ ...in `rollout status` (also a RolloutFailed)
    │   ├── ApiServerUnusable ·················· the API server hop: the pinned context's server cannot be used
    │   │   ├── ApiServerUnreachable ··········· no HTTP answer (refused, silent, closed, TLS, DNS)
    │   │   ├── ApiServerRejected ·············· an error status
    │   │   └── CredentialPluginFailed ········· the hop before it: the kubeconfig's exec credential plugin failed
    │   │       └── CredentialPluginTimeout ···· ...or did not answer within the bound (its group killed)
    │   ├── NoKubeContext
    │   │   ├── ContextNotDefined ·············· the pinned context is not in the kubeconfig
    │   │   └── KubeconfigInvalid ·············· a kubeconfig file kubectl refuses too (named)
    │   ├── ContextNotAllowed
    │   ├── ProcessTimeout ····················· run_bounded killed a child at its bound
    │   ├── ForwardLeak
    │   ├── ArtifactsNotWritable
    │   ├── QdrantReadError
    │   ├── BundleBroken ······················· a shard's files did not arrive whole (harness.jobrun)
    │   ├── InClusterUnavailable ··············· --in-cluster without the pod's service account (harness.incluster)
    │   └── ControlPlaneError ·················· the real control plane (harness.controlplane)
    │       ├── BinariesMissing ················ a binary it needs is neither built nor given (skips, naming the fix)
    │       ├── ControlPlaneBuildFailed ········ Go is missing or too old, the proxy refused, `go build` failed
    │       └── ControlPlaneStartFailed ········ a component did not start or become ready within its bound
    ├── AssertionError ························· the system under test failed
    │   ├── HopFailure ························· a request failed; the class names the hop
    │   │   ├── PortForwardFailure ············· the port-forward hop (kubectl port-forward)
    │   │   │   ├── PortForwardNotReady ········ not ready within its budget
    │   │   │   ├── PortForwardGone ············ already exited or closed: refused before sending
    │   │   │   ├── PortForwardBroken ·········· alive but broken (before sending, or while a request hung)
    │   │   │   └── PortForwardDied ············ exited while a request was in flight
    │   │   └── ServiceFailure ················· the service hop (the forward, if any, stayed up)
    │   │       ├── ServiceTimeout ············· no complete answer within the budget
    │   │       ├── ServiceUnreachable ········· refused, reset or closed without an answer
    │   │       ├── ServiceAnswerTooLarge ······ the body passed max_body
    │   │       └── ChatError ·················· a chat turn answered, but not with a usable stream
    │   │           ├── ChatRejected
    │   │           └── ChatStreamMalformed
    │   └── WaitTimeout ························ a wait ran out of budget
    │       └── RolloutFailed
    │           ├── RolloutStatusFailed
    │           └── RolloutTerminal ············ terminal, not a timeout: waiting cannot help
    ├── StopWaiting ···························· a probe ends its wait at once
    │   └── WaitStopped ························ the wait ended early: an error waiting cannot fix
    ├── Unrecoverable ·························· mixin: waiting cannot fix it (wait_for stops early)
    ├── ValueError
    │   └── TimestampError
    ├── TypeError
    │   └── ProbeNotCallable ··················· wait_for was given something it cannot call
    ├── RuntimeError
    │   └── SyncCallInEventLoop ················ a blocking entry point called inside a running event loop
    └── Warning
        └── UserWarning
            └── StrayProcessWarning ············ kubectl left a process behind; the harness killed it

Internal, never escapes the harness: ``BodyOverLimit`` (``fetch_through`` turns it into ServiceAnswerTooLarge),
``TerminalStop`` (a StopWaiting: a rollout probe's wait turns it into RolloutTerminal), ``RolloutDone`` (stops a
``kubectl rollout status`` whose rollout completed).
"""

from __future__ import annotations

from typing import Any

from harness.stderr_text import condense, final_line

# The modules that raise these errors import this one, so it imports none of them, not even for types: the
# attributes holding their objects are typed Any, and each docstring names the class they hold.
_ChatTurn = Any  # harness.chat.ChatTurn
_Explanation = Any  # harness.rollout.Explanation
_WaitSummary = Any  # harness.waiting.WaitSummary


class HarnessError(Exception):
    """Base of the harness's own set-up and infrastructure errors."""


class StopWaiting(Exception):
    """Raised by a probe to end a ``wait_for`` at once: the condition can no longer be met.

    ``wait_for`` re-raises it unchanged (with the cause the probe chained), e.g. a Job that reached
    ``Failed`` while the spec waits for ``Complete``.
    """


class Unrecoverable(Exception):
    """Mixed into errors that waiting cannot fix (a refused API server, rejected credentials, a resource type the
    server does not serve). ``wait_for`` ends early when its probe fails this way twice in a row
    (:class:`WaitStopped`), instead of spending its whole budget on identical failures."""


UNRECOVERABLE_API_KINDS = frozenset(
    {"refused", "tls", "dns", "unauthorized", "forbidden", "namespace-missing", "credential-plugin"}
)
"""API server failures that do not go away while a spec waits (a stopped cluster, wrong credentials)."""


def waiting_cannot_fix(error: BaseException) -> bool:
    """True for an error no amount of waiting fixes: an :class:`Unrecoverable`, or one flagged ``unrecoverable``."""
    return isinstance(error, Unrecoverable) or getattr(error, "unrecoverable", False) is True


def hide_for_named_failures(excinfo: Any) -> bool:
    """A ``__tracebackhide__`` value for the harness's own frames (pytest calls it with the ``ExceptionInfo``).

    A failed hop or a harness error the message already explains (:class:`HopFailure`, :class:`HarnessError`) hides
    the frame, so the spec's line and the one-line message are what pytest shows; any other exception (a bug in the
    harness) keeps it, so the report says where the bug is.
    """
    return excinfo is not None and bool(excinfo.errisinstance((HopFailure, HarnessError)))


class StrayProcessWarning(UserWarning):
    """A process that kubectl started was still running after kubectl exited (it held kubectl's output pipes or
    just lingered); the harness killed it. Usually a wrapper script or an exec credential plugin that hangs."""


# --- the harness's own set-up --------------------------------------------------------------------------


class HarnessConfigError(HarnessError, ValueError):
    """The ``[tool.harness]`` table is wrong: an unknown key (the message names it and the known keys) or a value
    of the wrong shape (the message names the file, the key and what it must be). The pytest plugin turns it into
    one usage error at session start."""


class DurationsFileError(HarnessError):
    """The durations file (``[tool.harness] durations_file``, :mod:`harness.shards`) exists but is not a JSON object
    of node ids to non-negative seconds, cannot be read, or its lock stayed held by another run. The message names
    the file and the fix (correct it or delete it: the next run writes it again)."""


class BundleBroken(HarnessError):
    """A shard's files (:mod:`harness.jobrun.wire`) did not arrive whole: their size or sha256 differs from the header,
    the archive cannot be unpacked, is too large, or names a path outside its folder. The message says which."""


class InClusterUnavailable(HarnessError):
    """``--in-cluster`` was given but the pod's service account cannot be read: no token (neither the mounted
    file nor the environment), no CA certificate, or no ``KUBERNETES_SERVICE_HOST``/``PORT``. The message names
    what is missing and where it was looked for."""


class KubectlNotFound(HarnessError):
    """The ``kubectl`` binary is not on PATH (or the configured path does not exist)."""


class NoKubeContext(HarnessError):
    """There is no kubeconfig or no current context: cluster specs are skipped with this message."""


class ContextNotDefined(NoKubeContext):
    """The pinned context is not a context of the kubeconfig. Named on purpose (``--kube-context``), cluster specs
    fail with it, its close matches and the fix; as the kubeconfig's own ``current-context``, they are skipped."""


class KubeconfigInvalid(NoKubeContext):
    """A kubeconfig file that kubectl refuses too (``error loading config file``: not YAML, not a mapping, a name
    twice in one list, a directory, unreadable). The message names the file and why (:mod:`harness.kubeconfig`)."""


class ContextNotAllowed(HarnessError):
    """The requested or current context is outside the committed allow-list: cluster specs fail, touching nothing."""


class ProcessTimeout(HarnessError):
    """:func:`harness.process.run_bounded` killed the child's group at its timeout (``timeout`` seconds). Carries
    ``argv`` and what the child had printed (``stdout``, ``stderr``). Also importable as ``harness.process.Timeout``."""

    def __init__(self, argv: list[str], timeout: float, stdout: str, stderr: str) -> None:
        super().__init__(f"{argv[0]} did not finish within {timeout:.1f}s")
        self.argv, self.timeout, self.stdout, self.stderr = argv, timeout, stdout, stderr


class ForwardLeak(HarnessError):
    """At the end of the session a port-forward's kubectl (or one of its group) was still alive after being stopped."""


class ArtifactsNotWritable(HarnessError):
    """The artifacts folder cannot be created or written (raised at session start, not at the first failure)."""


class ControlPlaneError(HarnessError):
    """The real control plane (:mod:`harness.controlplane`) cannot be built, found or started."""


class BinariesMissing(ControlPlaneError):
    """A binary the control plane needs is neither in the build cache nor given by ``KUBEBUILDER_ASSETS`` /
    ``TEST_ASSET_<NAME>``; ``missing`` names them, ``fix`` is the command that provides them."""

    def __init__(self, message: str, *, missing: tuple[str, ...], fix: str) -> None:
        super().__init__(message)
        self.missing, self.fix = missing, fix


class ControlPlaneBuildFailed(ControlPlaneError):
    """The binaries could not be built: no Go or too old a Go, the module proxy refused a version, or ``go``
    failed (its last lines quoted)."""


class ControlPlaneStartFailed(ControlPlaneError):
    """A component did not start, exited, or was not ready within its bound; ``component`` names it and ``log_tail``
    is the end of its log."""

    def __init__(self, message: str, *, component: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.component, self.log_tail = component, log_tail


class QdrantReadError(HarnessError):
    """Qdrant answered, but not with what a read expects: an error status, a body that is not Qdrant's envelope, a
    scroll that does not end. ``status`` is the HTTP status (``None`` if the answer was not HTTP-level wrong) and
    ``detail`` Qdrant's ``status.error`` text when it sent one."""

    def __init__(self, message: str, *, status: int | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


# --- the kubectl hop -------------------------------------------------------------------------------------


class KubectlError(HarnessError):
    """``kubectl`` exited non-zero. Carries ``argv``, ``returncode``, ``cause`` and ``stderr_tail``.

    The message reads cause first: kubectl's own closing line (``error: ...``, ``The connection to the server ...``,
    ``Error from server (...)``) on the first line, then the command and exit code, then stderr with repeated
    lines folded into one with a count (kubectl repeats its ``memcache.go`` discovery errors five times) and
    only the last few kept. ``stderr_tail`` holds that condensed stderr, one line per distinct line.
    """

    hint: str = ""

    def __init__(
        self, argv: list[str], returncode: int, stderr: str, *, cause: str | None = None, what: str | None = None
    ) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stderr_tail = "\n".join(condense(stderr))
        self.cause = cause or final_line(stderr) or f"kubectl exited {returncode} without a word on stderr"
        super().__init__(self._message(what or f"kubectl exited {returncode}"))

    def _message(self, what: str) -> str:
        lines = [self.cause, f"  {what}: {_command(self.argv)}"]
        shown = self.stderr_tail.splitlines()
        if shown and shown[-1] == self.cause:  # the cause is already the first line
            shown.pop()
        if shown:
            lines.append("  stderr: " + "\n          ".join(shown))
        if self.hint:
            lines.append(f"  fix: {self.hint}")
        return "\n".join(lines)


class KubectlTimeout(KubectlError):
    """``kubectl`` did not finish within ``timeout`` seconds; its whole process group was killed (``returncode``
    -9)."""

    def __init__(self, argv: list[str], timeout: float, stderr: str) -> None:
        self.timeout = timeout
        said = final_line(stderr)
        cause = f"kubectl did not finish within {timeout:.1f}s and its process group was killed" + (
            f"; its last word: {said}" if said else ""
        )
        super().__init__(argv, -9, stderr, cause=cause, what="killed at its bound")


class KubectlUnrecoverable(KubectlError, Unrecoverable):
    """``kubectl`` failed in a way waiting cannot fix. ``reason`` is one of ``"api-server-refused"``,
    ``"unauthorized"``, ``"not-served"`` (the resource type is unknown to the server), ``"tls"``, ``"dns"``;
    ``hint`` says what to do."""

    def __init__(self, argv: list[str], returncode: int, stderr: str, *, reason: str, hint: str) -> None:
        self.reason = reason
        self.hint = hint
        super().__init__(argv, returncode, stderr)


def _command(argv: list[str]) -> str:
    """``argv`` for a message: the program's base name, then its arguments."""
    if not argv:
        return "(no command)"
    return " ".join([argv[0].rsplit("/", 1)[-1], *argv[1:]])


# --- the API server hop ----------------------------------------------------------------------------------


class ApiServerUnusable(HarnessError):
    """The pinned context's API server cannot be used. ``kind`` says how, ``context`` and ``server`` say which.

    ``kind`` is ``"refused"`` (nothing listens), ``"no-answer"`` (no answer within the bound: a paused VM),
    ``"closed"`` (the connection was closed without an answer), ``"tls"`` (the TLS handshake failed), ``"dns"``
    (the host name does not resolve), ``"unauthorized"`` (401: the credentials were rejected), ``"forbidden"``
    (403), ``"http-status"`` (any other error status: ``status`` holds it), ``"namespace-missing"``, ``"no-date"``,
    ``"credential-plugin"`` or ``"credential-plugin-timeout"`` (:class:`CredentialPluginFailed`). ``hint`` is the
    likely fix. ``unrecoverable`` is true for the kinds waiting cannot fix within a
    spec (:data:`UNRECOVERABLE_API_KINDS`): :func:`waiting_cannot_fix` reads it.
    """

    def __init__(
        self, message: str, *, kind: str, context: str = "", server: str = "", status: int | None = None, hint: str = ""
    ) -> None:
        super().__init__(message)
        self.kind, self.context, self.server, self.status, self.hint = kind, context, server, status, hint
        self.unrecoverable = kind in UNRECOVERABLE_API_KINDS or status in (401, 403, 404)


class ApiServerUnreachable(ApiServerUnusable):
    """No HTTP answer came back from the API server (refused, no answer within the bound, closed, TLS, DNS)."""


class ApiServerRejected(ApiServerUnusable):
    """The API server answered, with an error status (``status``): 401 unauthorized, 403, 404 on ``/version``, ..."""


class CredentialPluginFailed(ApiServerUnusable):
    """The hop before the API server: the context's exec credential plugin (``command``) could not be run, exited
    non-zero (``returncode``; ``stderr_tail`` quotes its stderr), printed no valid ExecCredential, or needs a
    terminal. Nothing was sent to the API server. ``kind`` is ``"credential-plugin"`` (waiting cannot fix it)."""

    def __init__(
        self,
        message: str,
        *,
        command: str,
        context: str = "",
        returncode: int | None = None,
        stderr_tail: str = "",
        kind: str = "credential-plugin",
    ) -> None:
        super().__init__(message, kind=kind, context=context)
        self.command, self.returncode, self.stderr_tail = command, returncode, stderr_tail


class CredentialPluginTimeout(CredentialPluginFailed):
    """The exec credential plugin did not answer within ``timeout`` seconds (the caller's bound); its process group
    was killed. ``kind`` is ``"credential-plugin-timeout"``."""

    def __init__(self, message: str, *, command: str, context: str = "", timeout: float, stderr_tail: str = "") -> None:
        super().__init__(
            message, command=command, context=context, stderr_tail=stderr_tail, kind="credential-plugin-timeout"
        )
        self.timeout = timeout


# --- waiting -----------------------------------------------------------------------------------------------


class WaitTimeout(AssertionError):
    """A wait ran out of budget. ``summary`` holds what the ``wait_for`` did (a :class:`harness.waiting.WaitSummary`;
    ``None`` only for :class:`RolloutStatusFailed`, where kubectl did the waiting)."""

    def __init__(self, message: str, summary: _WaitSummary | None) -> None:
        super().__init__(message)
        self.summary = summary


class WaitStopped(StopWaiting):
    """``wait_for`` gave up before its budget: the probe failed twice in a row with an error no amount of waiting
    can fix (:func:`waiting_cannot_fix`). ``error`` is that error (its text is in the message), ``summary`` the
    wait's data."""

    def __init__(self, message: str, summary: _WaitSummary, error: BaseException) -> None:
        super().__init__(message)
        self.summary = summary
        self.error = error


class RolloutFailed(WaitTimeout):
    """A deployment, statefulset or pod did not roll out: ``Kube.rollout_status`` gave up, or a ``wait_for`` on
    :func:`harness.rollout.rollout_complete` ran out or stopped. The message says why, cause first, from the objects
    themselves, then what gave up in its own words (kubectl's, or the wait's); ``explanation`` holds the data (a
    :class:`harness.rollout.Explanation`), ``summary`` the wait's :class:`harness.waiting.WaitSummary` (``None`` for
    ``rollout_status``), ``gave_up`` the original failure. It is raised without a chained cause (its message already
    carries it), so a traceback shows the explanation first."""

    carries_cause = True  # wait_for does not chain the failure this explains: the message holds it

    def __init__(
        self,
        message: str,
        *,
        explanation: _Explanation,
        summary: _WaitSummary | None = None,
        gave_up: BaseException | None = None,
    ) -> None:
        super().__init__(message, summary)
        self.explanation = explanation
        self.gave_up = gave_up


class RolloutTerminal(RolloutFailed):
    """A rollout that cannot finish however long one waits: a terminal cause, not a timeout. Raised at once by
    ``Kube.rollout_status`` and a ``wait_for`` on :func:`harness.rollout.rollout_complete` when the objects show an
    image that does not exist or may not be pulled, a ``CreateContainerConfigError``, a container of the new
    revision restarted ``restart_limit`` times during the wait, ``ProgressDeadlineExceeded``, a paused Deployment,
    an ``OnDelete`` StatefulSet waiting for its pods to be deleted, or a pod no node can ever take (see
    :mod:`harness.terminal`). ``cause`` is the short verdict (``"image not found (pod web-1, container app:
    ErrImagePull)"``); the message's second line says it is terminal. Never a :class:`KubectlError`: the harness
    stopped kubectl, or kubectl gave up on its own."""

    def __init__(
        self,
        message: str,
        *,
        explanation: _Explanation,
        cause: str,
        summary: _WaitSummary | None = None,
        gave_up: BaseException | None = None,
    ) -> None:
        super().__init__(message, explanation=explanation, summary=summary, gave_up=gave_up)
        self.cause = cause


class RolloutStatusFailed(RolloutFailed, KubectlError):
    """``Kube.rollout_status`` gave up: a :class:`RolloutFailed` that is also the :class:`KubectlError` it explains
    (``argv``, ``returncode``, ``cause``, ``stderr_tail`` of kubectl's exit; ``returncode`` -9 when it was killed at
    its bound), so code that caught ``KubectlError`` from ``rollout_status`` still does."""

    def __init__(self, message: str, *, explanation: _Explanation, kubectl_error: KubectlError) -> None:
        RolloutFailed.__init__(self, message, explanation=explanation, gave_up=kubectl_error)
        self.argv, self.returncode = kubectl_error.argv, kubectl_error.returncode
        self.cause, self.stderr_tail = kubectl_error.cause, kubectl_error.stderr_tail


class TerminalStop(StopWaiting):
    """Internal: raised by :class:`harness.rollout.RolloutWatch` (and so by a ``rollout_complete`` probe) when the
    objects show a cause waiting cannot fix; ``explanation`` is what showed it. ``wait_for`` ends at once and the
    probe's ``explain`` turns it into a :class:`RolloutTerminal`."""

    def __init__(self, explanation: _Explanation) -> None:
        super().__init__(f"{explanation.ref}: terminal: {explanation.terminal}")
        self.explanation = explanation


class RolloutDone(Exception):
    """Internal: raised by ``RolloutWatch.check`` to stop a ``kubectl rollout status`` whose rollout completed."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TimestampError(ValueError):
    """A Kubernetes timestamp that cannot be read (garbage, or no zone)."""


# --- misuse of the harness's own entry points -------------------------------------------------------------


class ProbeNotCallable(TypeError):
    """``wait_for`` / ``wait_for_sync`` was given a probe it cannot call without arguments (a value such as
    ``is_ready()`` instead of the function ``is_ready``). Raised at the call, before any attempt."""


class SyncCallInEventLoop(RuntimeError):
    """A blocking entry point that runs its own event loop (``wait_for_sync``, ``fetch_through_sync``,
    ``chat_turn_sync`` and the sync clients built on them) was called from inside a running event loop. The message
    names the async function to await instead. Raised at the call, before anything is sent or polled."""


# --- requests: the port-forward hop and the service hop ---------------------------------------------------


class HopFailure(AssertionError):
    """A request or a port-forward failed. The subclass names the hop: :class:`PortForwardFailure` (kubectl
    port-forward) or :class:`ServiceFailure` (the service); ``hop`` holds the same as text (``"port-forward"`` or
    ``"service"``) for messages.

    Common attributes: ``target`` (``svc/x`` or the base URL), ``path`` (``None`` outside a request),
    ``budget`` in seconds (or ``None``), ``exit_code`` (``None`` while kubectl lives), ``stderr_tail``
    (kubectl's last stderr lines, ``""`` without a forward) and ``partial`` (raised by :func:`harness.chat_turn`:
    the :class:`harness.chat.ChatTurn` so far, ``None`` before response headers; ``None`` otherwise).
    """

    hop = "service"
    partial: _ChatTurn | None = None

    def __init__(
        self,
        message: str,
        *,
        target: str = "",
        path: str | None = None,
        budget: float | None = None,
        exit_code: int | None = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message)
        self.target, self.path, self.budget = target, path, budget
        self.exit_code, self.stderr_tail = exit_code, stderr_tail


class PortForwardFailure(HopFailure):
    """The port-forward is the hop that failed: kubectl never became ready, exited, or reported the tunnel broken."""

    hop = "port-forward"


class PortForwardNotReady(PortForwardFailure):
    """A port-forward did not become ready within its budget (no banner, no TCP answer, or kubectl exited).

    Its process group was killed first. Extra attribute: ``kubectl_version`` (client gitVersion or a note).
    """

    def __init__(
        self,
        message: str,
        *,
        kubectl_version: str = "unknown",
        target: str = "",
        budget: float | None = None,
        exit_code: int | None = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message, target=target, budget=budget, exit_code=exit_code, stderr_tail=stderr_tail)
        self.kubectl_version = kubectl_version


class PortForwardGone(PortForwardFailure):
    """``fetch_through`` refused at once: the forward had already exited (or was closed) before the request."""


class PortForwardBroken(PortForwardFailure):
    """The forward's kubectl is alive but reported ``an error occurred forwarding`` / ``lost connection to pod``,
    or several requests in a row were reset: it will never recover (kubernetes/kubectl#686). Reopen it.

    Raised before sending when the forward is already known broken, and while a request hangs when kubectl reports
    the tunnel broken then (``path`` and ``budget`` say which request)."""


class PortForwardDied(PortForwardFailure):
    """kubectl exited while a request was in flight (raised a few milliseconds after the exit, not at the timeout)."""


class ServiceFailure(HopFailure):
    """The service is the hop that failed: the forward (if any) stayed up, and the service did not answer within
    the budget, refused or dropped the connection, or answered outside its contract."""

    hop = "service"


class ServiceTimeout(ServiceFailure):
    """The forward (if any) is alive, but the service did not finish answering within the request's total budget."""


class ServiceUnreachable(ServiceFailure):
    """The connection was refused, reset or closed without an answer while the forward (if any) stayed alive."""


class ServiceAnswerTooLarge(ServiceFailure):
    """The service's answer body passed ``fetch_through``'s ``max_body`` bytes; reading stopped there, so a
    service streaming without end cannot exhaust memory (one pushed a probe to 1 GB in 3 s). Extra attributes:
    ``max_body``, ``received`` (bytes read before stopping), ``declared`` (its ``Content-Length``, or ``None``),
    ``status``."""

    def __init__(
        self,
        message: str,
        *,
        max_body: int,
        received: int,
        declared: int | None,
        status: int | None,
        target: str = "",
        path: str | None = None,
        budget: float | None = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message, target=target, path=path, budget=budget, stderr_tail=stderr_tail)
        self.max_body, self.received, self.declared, self.status = max_body, received, declared, status


class BodyOverLimit(Exception):
    """Internal: an answer's body passed ``max_body`` (``received`` bytes read, ``declared`` Content-Length or
    ``None``, ``status``). Raised inside :func:`harness.fetch_through`, which turns it into
    :class:`ServiceAnswerTooLarge`; it never reaches a caller."""

    def __init__(self, received: int, declared: int | None, status: int) -> None:
        super().__init__(received, declared, status)
        self.received, self.declared, self.status = received, declared, status


# --- the service hop: answers outside their contract --------------------------------------------------------


class ChatError(ServiceFailure):
    """A chat turn the service answered, but not with a usable stream. ``partial``: the :class:`ChatTurn` so far."""

    partial: _ChatTurn

    def __init__(
        self,
        message: str,
        *,
        partial: _ChatTurn,
        target: str = "",
        path: str | None = None,
        budget: float | None = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message, target=target, path=path, budget=budget, stderr_tail=stderr_tail)
        self.partial = partial


class ChatRejected(ChatError):
    """An HTTP error status instead of a stream (``status``, ``body``), or an ``error`` event inside the stream;
    ``error`` is the OpenAI-style ``error`` object when there is one (a JSON value: usually a dict, else ``None``)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None,
        body: str,
        error: Any,
        partial: _ChatTurn,
        target: str = "",
        path: str | None = None,
        budget: float | None = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message, partial=partial, target=target, path=path, budget=budget, stderr_tail=stderr_tail)
        self.status, self.body, self.error = status, body, error


class ChatStreamMalformed(ChatError):
    """A data frame that cannot be read as a chat completion chunk: not JSON, not an object, or a field of the wrong
    type or shape (see :mod:`harness.chat`). ``frame``: the offending frame's data, clipped to 500 characters;
    ``frame_number``: its place among the stream's data frames (1-based); ``partial``: the turn as it stood before that
    frame (text, tool calls and counters so far)."""

    def __init__(
        self,
        message: str,
        *,
        partial: _ChatTurn,
        frame: str,
        frame_number: int,
        target: str = "",
        path: str | None = None,
        budget: float | None = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message, partial=partial, target=target, path=path, budget=budget, stderr_tail=stderr_tail)
        self.frame, self.frame_number = frame, frame_number


# --- specs' own helpers --------------------------------------------------------------------------------------
