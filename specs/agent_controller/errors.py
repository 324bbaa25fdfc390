"""The agent-controller stack layer's exceptions; each subclasses the generic harness exception of its kind.

The tree below adds to the generic one in :mod:`harness.errors`::

    HarnessError
    ├── TwinStartFailed ························ the stack twin did not come up
    ├── CredentialError ························ the stack's credential Secrets
    │   ├── CredentialKeyError
    │   └── CredentialDecryptError
    ├── RedisPodNotFound
    ├── RedisSweepError
    └── ProfileUnreadable ······················ a deployed timing value could not be read
    ServiceFailure
    ├── InvokeError ···························· /invoke broke its contract
    │   ├── InvokeProtocolError
    │   ├── InvokeRejected
    │   └── InvocationNotFound
    ├── JournalUnreadable ······················ the fake GitHub's journal answered something else
    ├── ModelJournalUnreadable ················· the fake model's admin routes answered something else
    └── SeedFailed ····························· the fake GitHub refused an admin call
    WaitTimeout
    └── InvokeTimeout
    AssertionError
    ├── BounceRefused
    └── PacingNotRestored
    LookupError
    └── SecretMissing

It imports nothing of this layer, so every module of the layer (and the generic harness's waits, which only see the
generic bases) can import it without a circle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError, ServiceFailure, WaitTimeout

if TYPE_CHECKING:
    from harness.waiting import WaitSummary


class TwinStartFailed(HarnessError):
    """The stack twin did not come up; the message carries its own reason and the tail of its stderr."""


class CredentialError(HarnessError):
    """A credential could not be read, written or decrypted: the message names the Secret (never a value)."""


class CredentialKeyError(CredentialError):
    """The encryption key is missing or is not 32 bytes of base64 or hex."""


class CredentialDecryptError(CredentialError):
    """A field is not ``iv:tag:ciphertext``, or it does not decrypt under the key (another key, or tampered)."""


class RedisPodNotFound(HarnessError):
    """Not exactly one Running, non-terminating pod matched the Redis selector (the message lists what matched)."""


class RedisSweepError(HarnessError):
    """The sweep ran but did not finish cleanly: ``redis-cli`` failed, or the output was not the script's."""


class ProfileUnreadable(HarnessError):
    """A value of the stack's timing profile could not be read from the deployed target: ``object`` (kind and name),
    ``field`` (the key or path) and ``why`` (object missing, key missing, not a number, ...) are in the message."""

    def __init__(self, object: str, field: str, why: str) -> None:
        super().__init__(f"cannot read the stack's timing profile from the cluster: {object}, {field}: {why}")
        self.object, self.field, self.why = object, field, why


class InvokeError(ServiceFailure):
    """The orchestrator's ``/invoke`` did not keep its contract (a failure of the system under test)."""


class InvokeProtocolError(InvokeError):
    """A 200 answer whose JSON is not an invocation record (unknown status, malformed ``pendingToolCalls``)."""


class InvokeRejected(InvokeError):
    """``POST /invoke`` answered something other than 202. ``status`` and ``body`` (text, cut to 2000 chars)."""

    def __init__(self, message: str, *, status: int, body: str) -> None:
        super().__init__(message)
        self.status, self.body = status, body


class InvocationNotFound(InvokeError):
    """``GET /invoke/<id>`` answered 404: the orchestrator does not hold the id (restarted, or another replica)."""


class InvokeTimeout(WaitTimeout):
    """The invocation was still pending when the budget ran out; ``last`` is the last
    :class:`~specs.agent_controller.invoke.Invocation` seen (or ``None``)."""

    def __init__(self, message: str, summary: WaitSummary | None, last: Any) -> None:
        super().__init__(message, summary)
        self.last = last


class JournalUnreadable(ServiceFailure):
    """The fake GitHub's journal route answered something other than its JSON (the message says what)."""


class ModelJournalUnreadable(ServiceFailure):
    """The fake model's admin routes answered something other than their JSON (the message says what)."""


class SeedFailed(ServiceFailure):
    """The fake GitHub refused an admin (seeding) call; the message quotes its answer."""


class BounceRefused(AssertionError):
    """The selector does not name exactly one pod; nothing was deleted."""


class PacingNotRestored(AssertionError):
    """``spec.env`` did not read back as it was before the pacing (the message shows both)."""


class SecretMissing(LookupError):
    """The Secret or its key is not there (the message names both, never a value)."""
