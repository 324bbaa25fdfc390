"""A port-forward kubectl could never open is refused with ``ValueError`` naming the argument, before anything is
spawned (``remote_port=70000`` or ``target="; rm -rf /"`` used to wait out the whole ready timeout,
``ready_timeout=0`` gave a self-contradictory "did not spawn kubectl ... after the harness stopped it")."""

from __future__ import annotations

import math

import anyio
import pytest

from harness import process
from harness.forward_pool import ForwardPool
from harness.portforward import PortForward, check_forward_args, port_forward
from harness.testing.standin import KubectlStandIn
from harness.testing.target import TargetServer


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"remote_port": -1}, "remote_port"),
        ({"remote_port": 0}, "remote_port"),
        ({"remote_port": 70000}, "remote_port"),
        ({"target": "; rm -rf /"}, "target"),
        ({"target": "svc/"}, "target"),
        ({"target": "/x"}, "target"),
        ({"target": "svc/Fake_GitHub"}, "target"),
        ({"target": "sv/x"}, "target"),
        ({"target": "svc/x/y"}, "target"),
        ({"target": "pod/" + "a" * 254}, "target"),
        ({"ready_timeout": 0}, "ready_timeout"),
        ({"ready_timeout": -3}, "ready_timeout"),
        ({"ready_timeout": math.nan}, "ready_timeout"),
        ({"ready_timeout": math.inf}, "ready_timeout"),
        ({"stop_grace": 0}, "stop_grace"),
        ({"stop_grace": math.nan}, "stop_grace"),
        ({"reset_limit": 0}, "reset_limit"),
        ({"ready_path": "healthz"}, "ready_path"),
    ],
)
def test_impossible_forward_is_a_value_error_naming_the_argument_and_spawns_nothing(
    kubectl_standin: KubectlStandIn, args: dict[str, object], named: str
) -> None:
    call = {"target": "svc/x", "remote_port": 80, **args}
    children = set(process.LIVE_CHILDREN)
    with pytest.raises(ValueError, match=named), port_forward(kubectl_standin.kube(), **call):  # type: ignore[arg-type]
        pass
    assert kubectl_standin.argvs() == []
    assert set(process.LIVE_CHILDREN) == children


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"remote_port": "80"}, "remote_port"),
        ({"remote_port": True}, "remote_port"),
        ({"target": None}, "target"),
        ({"ready_timeout": "30"}, "ready_timeout"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_argument(
    kubectl_standin: KubectlStandIn, args: dict[str, object], named: str
) -> None:
    with pytest.raises(TypeError, match=named):
        PortForward(kubectl_standin.kube(), **{"target": "svc/x", "remote_port": 80, **args})  # type: ignore[arg-type]
    assert kubectl_standin.argvs() == []


@pytest.mark.parametrize(
    "form",
    [
        "svc/fake-github",
        "service/x",
        "pod/x-1.y",
        "deploy/x",
        "deployment/x",
        "deployments.apps/x",
        "sts/x",
        "rs/x",
        "Service/x",
        "my-pod-0",
    ],
)
def test_kubectl_target_forms_are_accepted(form: str) -> None:
    check_forward_args(form, 1)
    check_forward_args(form, 65535, ready_timeout=0.001, stop_grace=0.5, reset_limit=1, ready_path="/")


def test_bare_pod_name_and_edge_port_open(kubectl_standin: KubectlStandIn, target: TargetServer) -> None:
    kubectl_standin.script(target_port=target.port)
    with port_forward(kubectl_standin.kube(), "my-pod-0", 65535, ready_timeout=10.0) as fwd:
        assert fwd.alive
    assert kubectl_standin.argvs()[0][4:7] == ["port-forward", "my-pod-0", ":65535"]


def test_pool_refuses_before_running_kubectl_at_all(kubectl_standin: KubectlStandIn) -> None:
    pool = ForwardPool()
    try:
        with pytest.raises(ValueError, match="remote_port"):
            pool.get(kubectl_standin.kube(), "svc/x", 70000)
        with pytest.raises(ValueError, match="target"):
            anyio.run(lambda: pool.aget(kubectl_standin.kube(), "; rm -rf /", 80))
        assert pool.opened == 0
        assert kubectl_standin.argvs() == []  # not even `kubectl version`
    finally:
        pool.close()


@pytest.mark.parametrize("args", [{"ready_timeout": 0}, {"backoff": -1}, {"max_backoff": math.nan}])
def test_pool_durations_must_be_positive_and_finite(args: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(args))):
        ForwardPool(**args)
