"""Which image-pull errors and scheduler messages are terminal, read from the words containerd, CRI-O, Docker and
the scheduler write (messages as they appear in real pods' events and statuses)."""

from __future__ import annotations

import pytest

from harness.terminal import pull_verdict, unschedulable_terminal

REF = "registry.local/web:missing"


@pytest.mark.parametrize(
    ("message", "verdict"),
    [
        # containerd (the kubelet's "Failed to pull image" event carries the CRI error)
        (
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{REF}": failed to resolve reference '
            f'"{REF}": {REF}: not found',
            "image not found",
        ),
        (
            f'failed to pull and unpack image "{REF}": failed to resolve reference "{REF}": pull access denied, '
            "repository does not exist or may require authorization: server message: insufficient_scope: "
            "authorization failed",
            "pull access denied",
        ),
        # CRI-O / Docker
        (f"reading manifest missing in {REF}: manifest unknown: manifest unknown", "image not found"),
        (
            "initializing source docker://web:missing: reading manifest missing in docker.io/library/web: "
            "requested access to the resource is denied",
            "pull access denied",
        ),
        (
            "Error response from daemon: pull access denied for web, repository does not exist or may require "
            "'docker login'",
            "pull access denied",
        ),
        # transient: the registry is down, slow or rate-limiting
        (
            f'failed to pull and unpack image "{REF}": failed to resolve reference "{REF}": failed to do request: '
            "Head https://registry.local/v2/web/manifests/missing: dial tcp: lookup registry.local: i/o timeout",
            "transient",
        ),
        (
            f'failed to pull and unpack image "{REF}": failed to copy: httpReadSeeker: failed open: unexpected '
            "status code https://registry.local/v2/web/blobs/sha256:ab: 429 Too Many Requests - Server message: "
            "toomanyrequests: You have reached your pull rate limit",
            "transient",
        ),
        ("dial tcp 10.0.0.5:443: connect: connection refused", "transient"),
        (f'Back-off pulling image "{REF}"', None),  # before 1.31 the back-off message carries no error
    ],
)
def test_pull_errors_are_told_apart_by_the_pullers_words(message: str, verdict: str | None) -> None:
    assert pull_verdict(message) == verdict


PREEMPTION = " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."


@pytest.mark.parametrize(
    ("message", "terminal"),
    [
        ("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector." + PREEMPTION, True),
        (
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match "
            "Pod's node affinity/selector." + PREEMPTION,
            True,
        ),
        ("0/3 nodes are available: 3 Insufficient cpu." + PREEMPTION, False),  # old pods free it as they end
        (
            "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 node(s) "
            "didn't match Pod's node affinity/selector." + PREEMPTION,
            False,  # the node lifecycle controller clears condition taints by itself
        ),
        ("0/2 nodes are available: 2 node(s) were unschedulable." + PREEMPTION, False),  # cordoned, for now
        ("0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules." + PREEMPTION, False),
        ("something the scheduler has not said before", False),
    ],
)
def test_unschedulable_is_terminal_only_for_mismatches_nothing_in_the_rollout_changes(
    message: str, terminal: bool
) -> None:
    assert unschedulable_terminal(message, []) is terminal


def test_an_autoscaler_scaling_up_keeps_an_unschedulable_pod_waiting() -> None:
    message = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector." + PREEMPTION
    scale_up = {"reason": "TriggeredScaleUp", "message": "pod triggered scale-up: [{gpu-pool 0->1 (max: 3)}]"}
    assert unschedulable_terminal(message, [scale_up]) is False
