"""End-to-end resilience test harness: bounded waits, pinned kube context, windows that cannot hide a run.

Public API (see README.md for a tour):

- waiting: :func:`wait_for`, :func:`wait_for_sync`, :class:`Done` (a falsy answer that ends a wait),
  :class:`StopWaiting`, :class:`WaitTimeout`, :func:`current_attempt`, :func:`clamp_to_attempt`;
- time: :func:`parse_k8s_time`, :func:`created_since`, :func:`agent_runs_since`;
- kube: :class:`Kube` (pinned context, guard, bounded kubectl, rollouts, server clock);
- ids: :func:`unique_issue_number`;
- port-forwards: :class:`PortForward`, :func:`port_forward`, :class:`ForwardPool`, :func:`fetch_through`,
  :func:`fetch_through_sync` and the hop errors (:class:`PortForwardNotReady`, :class:`PortForwardGone`,
  :class:`PortForwardDied`, :class:`ServiceTimeout`, :class:`ServiceUnreachable`);
- Qdrant: :class:`QdrantView`, a bounded read-only view (exact counts, whole scrolls) of any Qdrant;
- chat: :func:`chat_turn`, :func:`chat_turn_sync` (one streamed chat turn, read incrementally under one deadline),
  :class:`ChatTurn`, :class:`ToolCall`, :class:`ChatRejected`, :class:`ChatStreamMalformed`; :func:`stream_through`
  (``fetch_through`` for a body read as it arrives).
- stack clients: :func:`mint_user_jwt` / :func:`resolve_user_jwt` (Open WebUI user JWTs), :class:`InvokeClient`
  (``/invoke`` accept-then-poll), :class:`CredentialStore` (credential Secrets, AES-256-GCM fields),
  :class:`RedisSessions` (``sess:*`` sweeps in one ``kubectl exec``).
- diagnosis: :class:`RolloutFailed` (:class:`RolloutTerminal` when waiting cannot help), :func:`rollout_complete`,
  :func:`explain_workload` (why a rollout did not finish), :func:`cleanup_agent_runs_since`, :class:`Ledger`;
  evidence, progress and the HTML report come with the pytest plugin (:mod:`harness.diagnostics_plugin`).
- errors: every exception the harness raises (:mod:`harness.errors` draws the tree). Catch a hop by class:
  :class:`PortForwardFailure`, :class:`ServiceFailure`, :class:`KubectlError`, :class:`ApiServerUnusable`.
"""

import importlib
from typing import TYPE_CHECKING, Any

from harness.agentruns import AgentRunRecord, agent_runs_since
from harness.attempts import Attempt, clamp_to_attempt, current_attempt
from harness.chat import ChatTurn, ToolCall, chat_turn, chat_turn_sync
from harness.cleanup import Ledger, cleanup_agent_runs_since
from harness.errors import (
    ApiServerRejected,
    ApiServerUnreachable,
    ApiServerUnusable,
    ArtifactsNotWritable,
    BounceRefused,
    ChatError,
    ChatRejected,
    ChatStreamMalformed,
    ContextNotAllowed,
    CredentialDecryptError,
    CredentialError,
    CredentialKeyError,
    ForwardLeak,
    HarnessError,
    HopFailure,
    InvocationNotFound,
    InvokeError,
    InvokeProtocolError,
    InvokeRejected,
    InvokeTimeout,
    JournalUnreadable,
    KubectlError,
    KubectlNotFound,
    KubectlTimeout,
    KubectlUnrecoverable,
    ModelJournalUnreadable,
    NoKubeContext,
    PacingNotRestored,
    PortForwardBroken,
    PortForwardDied,
    PortForwardFailure,
    PortForwardGone,
    PortForwardNotReady,
    ProbeNotCallable,
    ProcessTimeout,
    QdrantReadError,
    RedisPodNotFound,
    RedisSweepError,
    RolloutFailed,
    RolloutStatusFailed,
    RolloutTerminal,
    SecretMissing,
    SeedFailed,
    ServiceAnswerTooLarge,
    ServiceFailure,
    ServiceTimeout,
    ServiceUnreachable,
    StopWaiting,
    StrayProcessWarning,
    SyncCallInEventLoop,
    TimestampError,
    TwinStartFailed,
    Unrecoverable,
    WaitStopped,
    WaitTimeout,
)
from harness.fetch import fetch_through, fetch_through_sync, stream_through
from harness.forward_pool import ForwardPool
from harness.ids import unique_issue_number
from harness.invoke import Invocation, InvokeClient, PendingToolCall
from harness.kube import Kube
from harness.portforward import ForwardExit, PortForward, port_forward
from harness.qdrant import QdrantView
from harness.redis_sessions import RedisSessions, SweepResult
from harness.rollout import explain_workload, rollout_complete
from harness.timestamps import created_since, parse_k8s_time, window_cutoff
from harness.waiting import Done, WaitSummary, wait_for, wait_for_sync

if TYPE_CHECKING:
    from harness.credentials import (
        CLAUDE_LOGIN,
        CLAUDE_SETUP_TOKEN,
        GITHUB_LINK,
        CredentialRecord,
        CredentialStore,
        secret_name,
    )
    from harness.openwebui_jwt import OpenWebUIIdentity, mint_user_jwt, resolve_user_jwt

# Imported on first use: they pull in cryptography and PyJWT (about 70 modules), which every `import harness` would
# otherwise pay for, and a bigger sys.modules slows what scans it (inspect.getmodule in pytest's traceback formatting).
_LAZY = {
    **dict.fromkeys(
        (
            "CLAUDE_LOGIN",
            "CLAUDE_SETUP_TOKEN",
            "GITHUB_LINK",
            "CredentialRecord",
            "CredentialStore",
            "secret_name",
        ),
        "harness.credentials",
    ),
    **dict.fromkeys(("OpenWebUIIdentity", "mint_user_jwt", "resolve_user_jwt"), "harness.openwebui_jwt"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


__all__ = [
    "AgentRunRecord",
    "ApiServerRejected",
    "ApiServerUnreachable",
    "ApiServerUnusable",
    "ArtifactsNotWritable",
    "Attempt",
    "BounceRefused",
    "CLAUDE_LOGIN",
    "CLAUDE_SETUP_TOKEN",
    "ChatError",
    "ChatRejected",
    "ChatStreamMalformed",
    "ChatTurn",
    "ContextNotAllowed",
    "CredentialDecryptError",
    "CredentialError",
    "CredentialKeyError",
    "CredentialRecord",
    "CredentialStore",
    "Done",
    "ForwardExit",
    "ForwardLeak",
    "ForwardPool",
    "GITHUB_LINK",
    "HarnessError",
    "HopFailure",
    "Invocation",
    "InvocationNotFound",
    "InvokeClient",
    "InvokeError",
    "InvokeProtocolError",
    "InvokeRejected",
    "InvokeTimeout",
    "JournalUnreadable",
    "ModelJournalUnreadable",
    "Kube",
    "KubectlError",
    "KubectlNotFound",
    "KubectlTimeout",
    "KubectlUnrecoverable",
    "Ledger",
    "NoKubeContext",
    "OpenWebUIIdentity",
    "PacingNotRestored",
    "PendingToolCall",
    "PortForward",
    "PortForwardBroken",
    "PortForwardDied",
    "PortForwardFailure",
    "PortForwardGone",
    "PortForwardNotReady",
    "ProbeNotCallable",
    "ProcessTimeout",
    "QdrantReadError",
    "QdrantView",
    "RedisPodNotFound",
    "RedisSessions",
    "RedisSweepError",
    "RolloutFailed",
    "RolloutTerminal",
    "RolloutStatusFailed",
    "SecretMissing",
    "SeedFailed",
    "ServiceAnswerTooLarge",
    "ServiceFailure",
    "ServiceTimeout",
    "ServiceUnreachable",
    "StopWaiting",
    "StrayProcessWarning",
    "SweepResult",
    "SyncCallInEventLoop",
    "TimestampError",
    "ToolCall",
    "TwinStartFailed",
    "Unrecoverable",
    "WaitStopped",
    "WaitSummary",
    "WaitTimeout",
    "agent_runs_since",
    "chat_turn",
    "chat_turn_sync",
    "clamp_to_attempt",
    "cleanup_agent_runs_since",
    "created_since",
    "current_attempt",
    "explain_workload",
    "fetch_through",
    "fetch_through_sync",
    "mint_user_jwt",
    "parse_k8s_time",
    "port_forward",
    "resolve_user_jwt",
    "rollout_complete",
    "secret_name",
    "stream_through",
    "unique_issue_number",
    "wait_for",
    "wait_for_sync",
    "window_cutoff",
]
