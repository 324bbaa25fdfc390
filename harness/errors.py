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
    """``kubectl`` exited non-zero. Carries ``argv``, ``returncode`` and the tail of stderr."""

    def __init__(self, argv: list[str], returncode: int, stderr_tail: str) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        super().__init__(f"kubectl exited {returncode}: {' '.join(argv)}\n  stderr: {stderr_tail or '(empty)'}")


class KubectlTimeout(KubectlError):
    """``kubectl`` did not finish within its timeout; its whole process group was killed."""

    def __init__(self, argv: list[str], timeout: float, stderr_tail: str) -> None:
        self.timeout = timeout
        HarnessError.__init__(
            self,
            f"kubectl did not finish within {timeout:.1f}s and its process group was killed: {' '.join(argv)}\n"
            f"  stderr so far: {stderr_tail or '(empty)'}",
        )
        self.argv = argv
        self.returncode = -9
        self.stderr_tail = stderr_tail


class ApiServerUnreachable(HarnessError):
    """The kubernetes client could not get an answer from the context's API server within its bound."""


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


# --- port-forwards and fetch_through (issue #3) -------------------------------------------------------

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
    service streaming without end cannot exhaust memory (trial finding 8). Extra attributes: ``max_body``,
    ``received`` (bytes read before stopping), ``declared`` (its ``Content-Length``, or ``None``), ``status``."""

    def __init__(
        self, message: str, *, max_body: int, received: int, declared: int | None, status: int | None, **kw: object
    ) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.max_body, self.received, self.declared, self.status = max_body, received, declared, status


class ForwardLeak(HarnessError):
    """At the end of the session a port-forward's kubectl (or one of its group) was still alive after being stopped."""
