"""Every exception the harness raises, in one place so a spec can catch by kind.

Failures of the system under test are ``AssertionError`` subclasses (pytest reports them as failures);
failures of the harness's own set-up (no kubectl, a refused context) are ``HarnessError``s (pytest
reports them as errors, or the plugin turns them into a one-line skip).
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base of the harness's own set-up and infrastructure errors."""


class StopWaiting(Exception):
    """Raised by a probe to end a ``wait_for`` at once: the condition can no longer be met.

    ``wait_for`` re-raises it unchanged (with the cause the probe chained), e.g. an AgentRun that reached
    ``Failed`` while the spec waits for ``Succeeded``.
    """


# --- kube access and the context guard ---------------------------------------------------------------


class KubectlNotFound(HarnessError):
    """The ``kubectl`` binary is not on PATH (or the configured path does not exist)."""


class KubectlError(HarnessError):
    """``kubectl`` exited non-zero. Carries ``argv``, ``returncode``, ``cause`` and ``stderr_tail``.

    The message reads cause first: kubectl's own closing line (``error: ...``, ``The connection to the server ...``,
    ``Error from server (...)``) on the first line, then the command and exit code, then stderr with repeated
    lines folded into one with a count (kubectl repeats its ``memcache.go`` discovery errors five times) and
    only the last few kept. ``stderr_tail`` holds that condensed stderr, one line per distinct line.
    """

    hint: str = ""

    def __init__(self, argv: list[str], returncode: int, stderr: str, *, cause: str | None = None) -> None:
        from harness.process import condense, final_line  # errors stays importable without the rest

        self.argv = argv
        self.returncode = returncode
        self.stderr_tail = "\n".join(condense(stderr))
        self.cause = cause or final_line(stderr) or f"kubectl exited {returncode} without a word on stderr"
        super().__init__(self._message(f"kubectl exited {returncode}"))

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
    """``kubectl`` did not finish within its timeout; its whole process group was killed."""

    def __init__(self, argv: list[str], timeout: float, stderr: str) -> None:
        from harness.process import condense, final_line

        self.timeout = timeout
        self.argv = argv
        self.returncode = -9
        self.stderr_tail = "\n".join(condense(stderr))
        said = final_line(stderr)
        self.cause = f"kubectl did not finish within {timeout:.1f}s and its process group was killed" + (
            f"; its last word: {said}" if said else ""
        )
        HarnessError.__init__(self, self._message("killed at its bound"))


class Unrecoverable(Exception):
    """Mixed into errors that waiting cannot fix (a refused API server, rejected credentials, a resource type the
    server does not serve). ``wait_for`` ends early when its probe fails this way twice in a row
    (:class:`WaitStopped`), instead of spending its whole budget on identical failures."""


class KubectlUnrecoverable(KubectlError, Unrecoverable):
    """``kubectl`` failed in a way waiting cannot fix. ``reason`` is one of ``"api-server-refused"``,
    ``"unauthorized"``, ``"not-served"`` (the resource type is unknown to the server), ``"tls"``, ``"dns"``;
    ``hint`` says what to do."""

    def __init__(self, argv: list[str], returncode: int, stderr: str, *, reason: str, hint: str) -> None:
        self.reason = reason
        self.hint = hint
        super().__init__(argv, returncode, stderr)


UNRECOVERABLE_API_KINDS = frozenset({"refused", "tls", "dns", "unauthorized", "forbidden", "namespace-missing"})
"""API server failures that do not go away while a spec waits (a stopped cluster, wrong credentials)."""


def waiting_cannot_fix(error: BaseException) -> bool:
    """True for an error no amount of waiting fixes: an :class:`Unrecoverable`, or one flagged ``unrecoverable``."""
    return isinstance(error, Unrecoverable) or getattr(error, "unrecoverable", False) is True


class StrayProcessWarning(UserWarning):
    """A process that kubectl started was still running after kubectl exited (it held kubectl's output pipes or
    just lingered); the harness killed it. Usually a wrapper script or an exec credential plugin that hangs."""


def _command(argv: list[str]) -> str:
    """``argv`` for a message: the program's base name, then its arguments."""
    if not argv:
        return "(no command)"
    return " ".join([argv[0].rsplit("/", 1)[-1], *argv[1:]])


class ApiServerUnusable(HarnessError):
    """The pinned context's API server cannot be used. ``kind`` says how, ``context`` and ``server`` say which.

    ``kind`` is ``"refused"`` (nothing listens), ``"no-answer"`` (no answer within the bound: a paused VM),
    ``"closed"`` (the connection was closed without an answer), ``"tls"`` (the TLS handshake failed), ``"dns"``
    (the host name does not resolve), ``"unauthorized"`` (401: the credentials were rejected), ``"forbidden"``
    (403), ``"http-status"`` (any other error status: ``status`` holds it), ``"namespace-missing"`` or
    ``"no-date"``. ``hint`` is the likely fix. ``unrecoverable`` is true for the kinds waiting cannot fix within a
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


class NoKubeContext(HarnessError):
    """There is no kubeconfig or no current context: cluster specs are skipped with this message."""


class ContextNotAllowed(HarnessError):
    """The requested or current context is outside the committed allow-list: cluster specs fail, touching nothing."""


# --- waiting -----------------------------------------------------------------------------------------


class WaitTimeout(AssertionError):
    """A ``wait_for`` ran out of budget. ``summary`` holds the data (a :class:`harness.waiting.WaitSummary`)."""

    def __init__(self, message: str, summary: object) -> None:
        super().__init__(message)
        self.summary = summary


class WaitStopped(StopWaiting):
    """``wait_for`` gave up before its budget: the probe failed twice in a row with an error no amount of waiting
    can fix (:func:`waiting_cannot_fix`). ``error`` is that error (its text is in the message), ``summary`` the
    wait's data."""

    def __init__(self, message: str, summary: object, error: BaseException) -> None:
        super().__init__(message)
        self.summary = summary
        self.error = error


class RolloutFailed(WaitTimeout):
    """A deployment, statefulset or pod did not roll out: ``Kube.rollout_status`` gave up, or a ``wait_for`` on
    :func:`harness.rollout.rollout_complete` ran out or stopped. The message says why, cause first, from the objects
    themselves; ``explanation`` holds the data (a :class:`harness.rollout.Explanation`), ``summary`` the wait's
    :class:`harness.waiting.WaitSummary` (``None`` for ``rollout_status``). The original failure is ``__cause__``."""

    def __init__(self, message: str, *, explanation: object, summary: object = None) -> None:
        super().__init__(message, summary)
        self.explanation = explanation


class RolloutStatusFailed(RolloutFailed, KubectlError):
    """``Kube.rollout_status`` gave up: a :class:`RolloutFailed` that is also the :class:`KubectlError` it explains
    (``argv``, ``returncode``, ``stderr_tail`` of kubectl's exit; ``returncode`` -9 when it was killed at its bound),
    so code that caught ``KubectlError`` from ``rollout_status`` still does."""

    def __init__(self, message: str, *, explanation: object, kubectl_error: KubectlError) -> None:
        RolloutFailed.__init__(self, message, explanation=explanation)
        self.argv, self.returncode = kubectl_error.argv, kubectl_error.returncode
        self.stderr_tail = kubectl_error.stderr_tail


class TimestampError(ValueError):
    """A Kubernetes timestamp that cannot be read (garbage, or no zone)."""


# --- port-forwards and fetch_through --------------------------------------------------------------


class HopFailure(AssertionError):
    """A request or a port-forward failed; ``hop`` says where: ``"port-forward"`` (kubectl) or ``"service"``.

    Common attributes: ``target`` (``svc/x`` or the base URL), ``path`` (``None`` outside a request),
    ``budget`` in seconds (or ``None``), ``exit_code`` (``None`` while kubectl lives) and ``stderr_tail``
    (kubectl's last stderr lines, ``""`` without a forward).
    """

    hop = "service"

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


class PortForwardNotReady(HopFailure):
    """A port-forward did not become ready within its budget (no banner, no TCP answer, or kubectl exited).

    Its process group was killed first. Extra attribute: ``kubectl_version`` (client gitVersion or a note).
    """

    hop = "port-forward"

    def __init__(self, message: str, *, kubectl_version: str = "unknown", **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.kubectl_version = kubectl_version


class PortForwardGone(HopFailure):
    """``fetch_through`` refused at once: the forward had already exited (or was closed) before the request."""

    hop = "port-forward"


class PortForwardBroken(PortForwardGone):
    """The forward's kubectl is alive but reported ``an error occurred forwarding`` / ``lost connection to pod``,
    or several requests in a row were reset: it will never recover (kubernetes/kubectl#686). Reopen it."""


class PortForwardDied(HopFailure):
    """kubectl exited while a request was in flight (raised within about 200 ms of the exit, not at the timeout)."""

    hop = "port-forward"


class ServiceTimeout(HopFailure):
    """The forward (if any) is alive, but the service did not finish answering within the request's total budget."""


class ServiceUnreachable(HopFailure):
    """The connection was refused, reset or closed without an answer while the forward (if any) stayed alive."""


class ServiceAnswerTooLarge(HopFailure):
    """The service's answer body passed ``fetch_through``'s ``max_body`` bytes; reading stopped there, so a
    service streaming without end cannot exhaust memory (one pushed a probe to 1 GB in 3 s). Extra attributes:
    ``max_body``, ``received`` (bytes read before stopping), ``declared`` (its ``Content-Length``, or ``None``),
    ``status``."""

    def __init__(
        self, message: str, *, max_body: int, received: int, declared: int | None, status: int | None, **kw: object
    ) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.max_body, self.received, self.declared, self.status = max_body, received, declared, status


class ForwardLeak(HarnessError):
    """At the end of the session a port-forward's kubectl (or one of its group) was still alive after being stopped."""
