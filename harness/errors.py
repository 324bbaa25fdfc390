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


class TimestampError(ValueError):
    """A Kubernetes timestamp that cannot be read (garbage, or no zone)."""
