"""End-to-end resilience test harness: bounded waits, pinned kube context, windows that cannot hide a run.

Public API (see README.md for a tour):

- waiting: :func:`wait_for`, :func:`wait_for_sync`, :class:`Done` (a falsy answer that ends a wait),
  :class:`StopWaiting`, :class:`WaitTimeout`, :func:`current_attempt`, :func:`clamp_to_attempt`;
- time: :func:`parse_k8s_time`, :func:`created_since`, :func:`window_cutoff`;
- kube: :class:`Kube` (pinned context, guard, bounded kubectl, rollouts, server clock);
- ids: :func:`unique_issue_number`;
- port-forwards: :class:`PortForward`, :func:`port_forward`, :class:`ForwardPool`, :func:`fetch_through`,
  :func:`fetch_through_sync` and the hop errors (:class:`PortForwardNotReady`, :class:`PortForwardGone`,
  :class:`PortForwardDied`, :class:`ServiceTimeout`, :class:`ServiceUnreachable`);
- Qdrant: :class:`QdrantView`, a bounded read-only view (exact counts, whole scrolls) of any Qdrant;
- chat: :func:`chat_turn`, :func:`chat_turn_sync` (one streamed chat turn, read incrementally under one deadline),
  :class:`ChatTurn`, :class:`ToolCall`, :class:`ChatRejected`, :class:`ChatStreamMalformed`; :func:`stream_through`
  (``fetch_through`` for a body read as it arrives).
- diagnosis: :class:`RolloutFailed` (:class:`RolloutTerminal` when waiting cannot help), :func:`rollout_complete`,
  :func:`explain_workload` (why a rollout did not finish), :class:`Ledger`; evidence, progress and the HTML report
  come with the pytest plugin (:mod:`harness.diagnostics_plugin`).
- errors: every exception the harness raises (:mod:`harness.errors` draws the tree). Catch a hop by class:
  :class:`PortForwardFailure`, :class:`ServiceFailure`, :class:`KubectlError`, :class:`ApiServerUnusable`.

Nothing here names a particular stack: a stack's own clients and helpers live in that stack's own layer, which
imports the harness, never the reverse.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.attempts import Attempt, clamp_to_attempt, current_attempt
    from harness.chat import ChatTurn, ToolCall, chat_turn, chat_turn_sync
    from harness.cleanup import Ledger
    from harness.errors import (
        ApiServerRejected,
        ApiServerUnreachable,
        ApiServerUnusable,
        ArtifactsNotWritable,
        BinariesMissing,
        BundleBroken,
        ChatError,
        ChatRejected,
        ChatStreamMalformed,
        ContextNotAllowed,
        ContextNotDefined,
        ControlPlaneBuildFailed,
        ControlPlaneError,
        ControlPlaneStartFailed,
        CredentialPluginFailed,
        CredentialPluginTimeout,
        DurationsFileError,
        ForwardLeak,
        HarnessConfigError,
        HarnessError,
        HopFailure,
        InClusterUnavailable,
        KubeconfigInvalid,
        KubectlError,
        KubectlNotFound,
        KubectlTimeout,
        KubectlUnrecoverable,
        NoKubeContext,
        PortForwardBroken,
        PortForwardDied,
        PortForwardFailure,
        PortForwardGone,
        PortForwardNotReady,
        ProbeNotCallable,
        ProcessTimeout,
        QdrantReadError,
        RolloutFailed,
        RolloutStatusFailed,
        RolloutTerminal,
        ServiceAnswerTooLarge,
        ServiceFailure,
        ServiceTimeout,
        ServiceUnreachable,
        StopWaiting,
        StrayProcessWarning,
        SyncCallInEventLoop,
        TimestampError,
        Unrecoverable,
        WaitStopped,
        WaitTimeout,
    )
    from harness.fetch import fetch_through, fetch_through_sync, stream_through
    from harness.forward_pool import ForwardPool
    from harness.ids import unique_issue_number
    from harness.kube import Kube
    from harness.portforward import ForwardExit, PortForward, port_forward
    from harness.qdrant import QdrantView
    from harness.rollout import explain_workload, rollout_complete
    from harness.timestamps import created_since, parse_k8s_time, window_cutoff
    from harness.waiting import Done, WaitSummary, wait_for, wait_for_sync

# Imported on first use: `import harness` (and so the pytest plugin, which every pytest run in the venv loads) costs
# this module alone; a name brings its module when a spec first uses it (the exceptions too: harness.errors is 650
# lines that a run without byte-code compiles). The heavy ones pull in anyio, httpx, the kubernetes client,
# cryptography and PyJWT (hundreds of modules), and a bigger sys.modules slows what scans it (inspect.getmodule in
# pytest's traceback formatting).
_ERRORS = (
    "ApiServerRejected",
    "ApiServerUnreachable",
    "ApiServerUnusable",
    "ArtifactsNotWritable",
    "BinariesMissing",
    "BundleBroken",
    "InClusterUnavailable",
    "ChatError",
    "ChatRejected",
    "ChatStreamMalformed",
    "ContextNotAllowed",
    "ContextNotDefined",
    "ControlPlaneBuildFailed",
    "ControlPlaneError",
    "ControlPlaneStartFailed",
    "CredentialPluginFailed",
    "CredentialPluginTimeout",
    "DurationsFileError",
    "ForwardLeak",
    "HarnessConfigError",
    "HarnessError",
    "HopFailure",
    "KubeconfigInvalid",
    "KubectlError",
    "KubectlNotFound",
    "KubectlTimeout",
    "KubectlUnrecoverable",
    "NoKubeContext",
    "PortForwardBroken",
    "PortForwardDied",
    "PortForwardFailure",
    "PortForwardGone",
    "PortForwardNotReady",
    "ProbeNotCallable",
    "ProcessTimeout",
    "QdrantReadError",
    "RolloutFailed",
    "RolloutStatusFailed",
    "RolloutTerminal",
    "ServiceAnswerTooLarge",
    "ServiceFailure",
    "ServiceTimeout",
    "ServiceUnreachable",
    "StopWaiting",
    "StrayProcessWarning",
    "SyncCallInEventLoop",
    "TimestampError",
    "Unrecoverable",
    "WaitStopped",
    "WaitTimeout",
)
_LAZY = {
    **dict.fromkeys(_ERRORS, "harness.errors"),
    **dict.fromkeys(("Attempt", "clamp_to_attempt", "current_attempt"), "harness.attempts"),
    **dict.fromkeys(("ChatTurn", "ToolCall", "chat_turn", "chat_turn_sync"), "harness.chat"),
    **dict.fromkeys(("Ledger",), "harness.cleanup"),
    **dict.fromkeys(("fetch_through", "fetch_through_sync", "stream_through"), "harness.fetch"),
    **dict.fromkeys(("ForwardPool",), "harness.forward_pool"),
    **dict.fromkeys(("unique_issue_number",), "harness.ids"),
    **dict.fromkeys(("Kube",), "harness.kube"),
    **dict.fromkeys(("ForwardExit", "PortForward", "port_forward"), "harness.portforward"),
    **dict.fromkeys(("QdrantView",), "harness.qdrant"),
    **dict.fromkeys(("explain_workload", "rollout_complete"), "harness.rollout"),
    **dict.fromkeys(("created_since", "parse_k8s_time", "window_cutoff"), "harness.timestamps"),
    **dict.fromkeys(("Done", "WaitSummary", "wait_for", "wait_for_sync"), "harness.waiting"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


__all__ = [
    "ApiServerRejected",
    "ApiServerUnreachable",
    "ApiServerUnusable",
    "ArtifactsNotWritable",
    "BinariesMissing",
    "BundleBroken",
    "InClusterUnavailable",
    "Attempt",
    "ChatError",
    "ChatRejected",
    "ChatStreamMalformed",
    "ChatTurn",
    "ContextNotAllowed",
    "ControlPlaneBuildFailed",
    "ControlPlaneError",
    "ControlPlaneStartFailed",
    "CredentialPluginFailed",
    "CredentialPluginTimeout",
    "Done",
    "ForwardExit",
    "ForwardLeak",
    "ForwardPool",
    "HarnessConfigError",
    "DurationsFileError",
    "HarnessError",
    "HopFailure",
    "Kube",
    "KubectlError",
    "KubectlNotFound",
    "KubectlTimeout",
    "KubectlUnrecoverable",
    "KubeconfigInvalid",
    "Ledger",
    "ContextNotDefined",
    "NoKubeContext",
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
    "RolloutFailed",
    "RolloutTerminal",
    "RolloutStatusFailed",
    "ServiceAnswerTooLarge",
    "ServiceFailure",
    "ServiceTimeout",
    "ServiceUnreachable",
    "StopWaiting",
    "StrayProcessWarning",
    "SyncCallInEventLoop",
    "TimestampError",
    "ToolCall",
    "Unrecoverable",
    "WaitStopped",
    "WaitSummary",
    "WaitTimeout",
    "chat_turn",
    "chat_turn_sync",
    "clamp_to_attempt",
    "created_since",
    "current_attempt",
    "explain_workload",
    "fetch_through",
    "fetch_through_sync",
    "parse_k8s_time",
    "port_forward",
    "rollout_complete",
    "stream_through",
    "unique_issue_number",
    "wait_for",
    "wait_for_sync",
    "window_cutoff",
]
