"""End-to-end resilience test harness: bounded waits, pinned kube context, windows that cannot hide a run.

Public API (see README.md for a tour):

- waiting: :func:`wait_for`, :func:`wait_for_sync`, :class:`StopWaiting`, :class:`WaitTimeout`,
  :func:`current_attempt`, :func:`clamp_to_attempt`;
- time: :func:`parse_k8s_time`, :func:`created_since`, :func:`agent_runs_since`;
- kube: :class:`Kube` (pinned context, guard, bounded kubectl, rollouts, server clock);
- ids: :func:`unique_issue_number`;
- port-forwards: :class:`PortForward`, :func:`port_forward`, :class:`ForwardPool`, :func:`fetch_through`,
  :func:`fetch_through_sync` and the hop errors (:class:`PortForwardNotReady`, :class:`PortForwardGone`,
  :class:`PortForwardDied`, :class:`ServiceTimeout`, :class:`ServiceUnreachable`);
- Qdrant: :class:`QdrantView`, a bounded read-only view (exact counts, whole scrolls) of any Qdrant.
- diagnosis: :class:`RolloutFailed`, :func:`rollout_complete`, :func:`explain_workload` (why a rollout did not
  finish), :func:`cleanup_agent_runs_since`, :class:`Ledger`; evidence, progress and the HTML report come with the
  pytest plugin (:mod:`harness.diagnostics_plugin`).
"""

from harness.agentruns import AgentRunRecord, agent_runs_since
from harness.cleanup import Ledger, cleanup_agent_runs_since
from harness.attempts import Attempt, clamp_to_attempt, current_attempt
from harness.errors import (
    ApiServerUnreachable,
    ContextNotAllowed,
    ForwardLeak,
    HarnessError,
    HopFailure,
    KubectlError,
    KubectlNotFound,
    KubectlTimeout,
    NoKubeContext,
    PortForwardBroken,
    PortForwardDied,
    PortForwardGone,
    PortForwardNotReady,
    RolloutFailed,
    ServiceAnswerTooLarge,
    ServiceTimeout,
    ServiceUnreachable,
    StopWaiting,
    TimestampError,
    WaitTimeout,
)
from harness.fetch import fetch_through, fetch_through_sync
from harness.forward_pool import ForwardPool
from harness.ids import unique_issue_number
from harness.kube import Kube
from harness.portforward import ForwardExit, PortForward, port_forward
from harness.qdrant import QdrantReadError, QdrantView
from harness.rollout import explain_workload, rollout_complete
from harness.timestamps import created_since, parse_k8s_time, window_cutoff
from harness.waiting import WaitSummary, wait_for, wait_for_sync

__all__ = [
    "AgentRunRecord",
    "ApiServerUnreachable",
    "Attempt",
    "ContextNotAllowed",
    "ForwardExit",
    "ForwardLeak",
    "ForwardPool",
    "HarnessError",
    "HopFailure",
    "Kube",
    "KubectlError",
    "KubectlNotFound",
    "KubectlTimeout",
    "Ledger",
    "NoKubeContext",
    "PortForward",
    "PortForwardBroken",
    "PortForwardDied",
    "PortForwardGone",
    "PortForwardNotReady",
    "QdrantReadError",
    "QdrantView",
    "RolloutFailed",
    "ServiceAnswerTooLarge",
    "ServiceTimeout",
    "ServiceUnreachable",
    "StopWaiting",
    "TimestampError",
    "WaitSummary",
    "WaitTimeout",
    "agent_runs_since",
    "cleanup_agent_runs_since",
    "clamp_to_attempt",
    "created_since",
    "current_attempt",
    "explain_workload",
    "fetch_through",
    "fetch_through_sync",
    "parse_k8s_time",
    "port_forward",
    "rollout_complete",
    "unique_issue_number",
    "wait_for",
    "wait_for_sync",
    "window_cutoff",
]
