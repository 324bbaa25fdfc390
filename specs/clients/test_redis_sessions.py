"""Redis session sweeps through the real kubectl against the Kubernetes API double: one ``kubectl exec`` per sweep,
the sweep script run for real by the host's POSIX ``sh`` with a stand-in ``redis-cli``, and the pod chosen by the
chart's selector (exactly one Running pod)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import fakes.kube
from fakes.kube import KubeHandle
from harness.kube import Kube
from specs.agent_controller.errors import RedisPodNotFound, RedisSweepError
from specs.agent_controller.redis_sessions import RedisSessions
from specs.clients.redis_double import LABELS, RedisPod, pod
from specs.kube.conftest import kubectl_build, require_kubectl

pytestmark = pytest.mark.timeout(120)

AWKWARD = [
    "sess:github:e2e-org/e2e-repo#12",
    "sess:with space",
    "sess:$(touch /tmp/pwned)",
    "sess:quote'\"`",
    "sess:back\\slash",
    "sess:-n",
    "sess:*star",
]
OTHERS = {"sesspage:1": "x", "cred:github:e2e-user": "x", "SESS:upper": "x"}


@pytest.fixture(scope="module")
def kd() -> Iterator[KubeHandle]:
    require_kubectl()
    with fakes.kube.serve(controllers=False) as handle:  # pods here are scripted by hand
        yield handle


@pytest.fixture
def redis(kd: KubeHandle, tmp_path: Path) -> RedisPod:
    kd.reset()
    double = RedisPod(kd, str(tmp_path))
    double.install()
    return double


def exec_requests(kd: KubeHandle) -> int:
    return len(
        [e for e in kd.requests(path_prefix=f"/api/v1/namespaces/{kd.namespace}/pods/") if e.path.endswith("/exec")]
    )


def test_a_sweep_deletes_every_session_key_in_one_exec(kd: KubeHandle, redis: RedisPod) -> None:
    redis.set_keys({**dict.fromkeys(AWKWARD, "v"), **OTHERS})
    result = RedisSessions(kd.kube()).sweep()
    assert result.pod == "agent-orchestrator-redis-0"
    assert sorted(result.keys) == sorted(AWKWARD)
    assert result.deleted == len(AWKWARD)
    assert result.truncated is False
    assert redis.keys == OTHERS
    assert len(redis.execs) == 1
    assert exec_requests(kd) == 1
    assert not Path("/tmp/pwned").exists()


def test_deletes_go_in_batches_and_a_second_sweep_finds_nothing(kd: KubeHandle, redis: RedisPod) -> None:
    redis.set_keys({f"sess:{i:03d}": "v" for i in range(25)})
    sessions = RedisSessions(kd.kube())
    assert sessions.sweep(batch=10).deleted == 25
    dels = [c for c in redis.redis_cli_calls() if c[0] == "DEL"]
    assert [len(c) - 1 for c in dels] == [10, 10, 5]
    again = sessions.sweep()
    assert again.keys == []
    assert again.deleted == 0
    assert len(redis.execs) == 2


def test_a_sweep_is_bounded_and_says_when_keys_remain(kd: KubeHandle, redis: RedisPod) -> None:
    redis.set_keys({f"sess:{i:02d}": "v" for i in range(12)})
    result = RedisSessions(kd.kube()).sweep(limit=5)
    assert result.truncated is True
    assert result.keys == [f"sess:{i:02d}" for i in range(5)]
    assert result.deleted == 5
    assert sorted(redis.keys) == [f"sess:{i:02d}" for i in range(5, 12)]


def test_listing_never_deletes(kd: KubeHandle, redis: RedisPod) -> None:
    redis.set_keys({"sess:a": "1", "sess:b": "2", "other": "3"})
    result = RedisSessions(kd.kube()).keys()
    assert result.keys == ["sess:a", "sess:b"]
    assert result.deleted == 0
    assert len(redis.keys) == 3
    assert [c[0] for c in redis.redis_cli_calls()] == ["--scan"]


def test_the_chart_selector_not_app_is_what_finds_the_pod(kd: KubeHandle, tmp_path: Path) -> None:
    kd.reset()
    RedisPod(kd, str(tmp_path)).install("redis-by-app-label", labels={"app": "agent-orchestrator-redis"})
    with pytest.raises(RedisPodNotFound) as missing:
        RedisSessions(kd.kube()).sweep()
    assert "no Running pod matches -l app.kubernetes.io/name=agent-orchestrator-redis" in str(missing.value)
    assert "(matched: none)" in str(missing.value)
    assert exec_requests(kd) == 0


def test_pending_and_terminating_pods_are_not_swept(kd: KubeHandle, tmp_path: Path) -> None:
    kd.reset()
    pod(kd, "redis-old", labels=LABELS, phase="Running", terminating=True)
    pod(kd, "redis-new", labels=LABELS, phase="Pending")
    sessions = RedisSessions(kd.kube())
    with pytest.raises(RedisPodNotFound) as waiting:
        sessions.sweep()
    assert "redis-old (Running, terminating)" in str(waiting.value)
    assert "redis-new (Pending)" in str(waiting.value)
    double = RedisPod(kd, str(tmp_path))
    double.install("redis-newest")
    double.set_keys({"sess:x": "1"})
    assert sessions.sweep().pod == "redis-newest"


def test_two_running_pods_are_refused(kd: KubeHandle, redis: RedisPod) -> None:
    pod(kd, "agent-orchestrator-redis-1", labels=LABELS, phase="Running")
    with pytest.raises(RedisPodNotFound, match="2 Running pods match"):
        RedisSessions(kd.kube()).sweep()


def test_an_unreachable_redis_is_a_sweep_error_with_redis_clis_words(kd: KubeHandle, redis: RedisPod) -> None:
    redis.configure(reachable=False)
    with pytest.raises(RedisSweepError) as failed:
        RedisSessions(kd.kube()).sweep()
    assert "redis-cli --scan exited 1" in str(failed.value)
    assert "Could not connect to Redis at 127.0.0.1:6379" in str(failed.value)


def test_a_failing_delete_is_a_sweep_error(kd: KubeHandle, redis: RedisPod) -> None:
    redis.set_keys({"sess:a": "1"})
    redis.configure(fail_del=True)
    with pytest.raises(RedisSweepError, match="redis-cli DEL said 'ERR injected DEL failure'"):
        RedisSessions(kd.kube()).sweep()
    assert redis.keys == {"sess:a": "1"}


@pytest.mark.parametrize("pattern", ["*", "?ess:*", "[s]ess:*", ""])
def test_a_pattern_without_a_literal_prefix_is_refused_before_anything_runs(
    kd: KubeHandle, redis: RedisPod, pattern: str
) -> None:
    with pytest.raises(ValueError, match="pattern"):
        RedisSessions(kd.kube()).sweep(pattern)
    assert redis.execs == []


def test_a_sweep_over_spdy_with_kubectl_1_29(kd: KubeHandle, redis: RedisPod) -> None:
    path = kubectl_build(29)
    if path is None:
        pytest.skip("no kubectl.1.29 beside the kubectl on PATH (exec over SPDY/3.1)")
    redis.set_keys({"sess:a": "1", "sess:b": "2"})
    kube = Kube(
        kd.context,
        kd.namespace,
        allowed=(kd.context,),
        kubectl_path=path,
        kubeconfig=kd.kubeconfig,
        cache_dir=kd.cache_dir,
    )
    assert RedisSessions(kube).sweep().deleted == 2
    assert redis.keys == {}
