"""Guard specs for Kube, the context guard and agent_runs_since, through a scripted kubectl on PATH."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness import (
    ApiServerUnreachable,
    ContextNotAllowed,
    Kube,
    KubectlError,
    KubectlNotFound,
    KubectlTimeout,
    NoKubeContext,
    RolloutFailed,
    WaitTimeout,
    wait_for_sync,
)
from harness.config import HarnessConfig, load_config
from harness.kube import kubeconfig_contexts
from harness.process import LIVE_CHILDREN, group_alive
from specs.agent_controller.agentruns import agent_runs_since

MINIKUBE_ONLY = HarnessConfig(("minikube",), "controller-agent")


def agentruns(*runs: tuple[str, str, str | None]) -> str:
    items = [
        {"metadata": {"name": name, "creationTimestamp": stamp}, **({"status": {"phase": phase}} if phase else {})}
        for name, stamp, phase in runs
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def test_agent_runs_since_pins_context_and_namespace_on_every_call(kubectl_standin) -> None:
    kubectl_standin.answer(
        "get",
        "agentruns.v1alpha1.core.controller-agent.dev",
        stdout=agentruns(("old", "2024-05-01T14:06:55Z", "Succeeded"), ("new", "2024-05-01T14:07:05Z", None)),
    )
    kube = Kube.connect(config=MINIKUBE_ONLY)
    runs = agent_runs_since(datetime(2024, 5, 1, 14, 7, 5, 200000, tzinfo=UTC), kube=kube)
    assert [(r.name, r.phase) for r in runs] == [("new", None)]
    calls = kubectl_standin.argvs()
    assert calls[:2] == [["config", "current-context"], ["config", "get-contexts", "-o", "name"]]  # kubeconfig reads
    assert calls[2:] == [
        [
            "--context",
            "minikube",
            "-n",
            "controller-agent",
            "get",
            "agentruns.v1alpha1.core.controller-agent.dev",
            "-o",
            "json",
        ]
    ]


def test_a_wait_on_agent_runs_shows_the_cutoff_it_applied(kubectl_standin) -> None:
    kubectl_standin.answer(
        "get",
        "agentruns.v1alpha1.core.controller-agent.dev",
        stdout=agentruns(("previous", "2024-05-01T14:06:55Z", "Succeeded")),
    )
    kube = Kube.connect(config=MINIKUBE_ONLY)
    since = datetime(2024, 5, 1, 14, 7, 5, tzinfo=UTC)
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync(
            "an AgentRun to be created", lambda: agent_runs_since(since, kube=kube) or None, timeout=0.6, interval=0.1
        )
    assert "window: AgentRuns created at or after 2024-05-01T14:07:02+00:00" in str(caught.value)
    summary = caught.value.summary  # listed fine, nothing new: not-yet (the last attempt may hang at its clamped bound)
    assert summary is not None
    assert summary.count("failed") == 0
    assert summary.count("not-yet") >= 1


def test_wrong_current_context_is_refused_before_any_other_call(
    kubectl_standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))  # no allowed context to suggest: create one
    kubectl_standin.set_current_context("prod-eu-1")
    with pytest.raises(ContextNotAllowed) as caught:
        Kube.connect(config=MINIKUBE_ONLY)
    assert "'prod-eu-1'" in str(caught.value)
    assert "create a local cluster whose context is allowed: `minikube start`" in str(caught.value)
    assert kubectl_standin.argvs() == [["config", "current-context"]]


def test_requested_context_outside_the_allow_list_is_refused_without_calling_kubectl(kubectl_standin) -> None:
    with pytest.raises(ContextNotAllowed):
        Kube.connect("gke_prod", config=MINIKUBE_ONLY)
    assert kubectl_standin.argvs() == []


def test_allow_list_globs_come_from_committed_config_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubectl_standin
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.harness]\nallowed_contexts = ["minikube", "kind-*"]\nnamespace = "e2e"\n'
    )
    config = load_config(tmp_path)
    kubectl_standin.set_contexts("minikube", "kind-dev")
    assert Kube.connect("kind-dev", config=config).namespace == "e2e"
    monkeypatch.setenv("HARNESS_ALLOWED_CONTEXTS", "*")  # no environment variable can widen the list
    with pytest.raises(ContextNotAllowed):
        Kube.connect("prod", config=load_config(tmp_path))


def test_malformed_config_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\nallowed_contexts = "minikube"\n')
    with pytest.raises(ValueError, match="allowed_contexts must be a non-empty list"):
        load_config(tmp_path)


def test_the_guard_runs_again_on_every_call(kubectl_standin) -> None:
    kube = Kube.connect(config=MINIKUBE_ONLY)
    kube.context = "prod"  # a pinned context can only change by mistake; the next call must still refuse
    with pytest.raises(ContextNotAllowed):
        kube.kubectl("get", "pods")
    assert len(kubectl_standin.argvs()) == 2  # current-context and get-contexts at connect, nothing since


def test_no_current_context_is_a_skip_reason(kubectl_standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncurrent-context: ''\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    kubectl_standin.set_current_context(None)
    with pytest.raises(NoKubeContext, match="current-context is not set"):
        Kube.connect(config=MINIKUBE_ONLY)


def test_no_kubeconfig_at_all_says_so_and_where_kubectl_looked(
    kubectl_standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    kubectl_standin.set_current_context(None)
    with pytest.raises(NoKubeContext) as caught:
        Kube.connect(config=MINIKUBE_ONLY)
    message = str(caught.value)
    assert message.startswith("no kubeconfig found: kubectl looked at ")
    assert str(tmp_path / ".kube" / "config") in message
    assert "current-context is not set" not in message


def test_a_context_missing_from_the_kubeconfig_is_a_skip_reason_not_a_failure_later(kubectl_standin) -> None:
    kubectl_standin.set_current_context(None).set_contexts()
    with pytest.raises(NoKubeContext, match="context 'minikube' is not in the kubeconfig"):
        Kube.connect("minikube", config=MINIKUBE_ONLY)


def test_read_files_resolves_the_context_from_the_kubeconfig_without_running_kubectl(
    kubectl_standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.write_text("apiVersion: v1\nkind: Config\ncontexts:\n- name: kind-dev\n  context: {cluster: c}\n")
    second.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: minikube\n"
        "contexts:\n- name: minikube\n  context: {cluster: c}\n- name: kind-dev\n  context: {cluster: d}\n"
    )
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'absent'}:{second}")
    kubectl_standin.set_current_context("gke_prod_europe")  # what kubectl would say: not asked
    kube = Kube.connect(config=MINIKUBE_ONLY, read_files=True)
    assert kube.context == "minikube"
    assert kubectl_standin.argvs() == []
    assert kubeconfig_contexts(f"{first}:{second}") == ("minikube", ["kind-dev", "minikube"])
    with pytest.raises(NoKubeContext, match="context 'minikube' is not in the kubeconfig"):
        Kube.connect("minikube", config=MINIKUBE_ONLY, kubeconfig=str(first), read_files=True)


def test_read_files_names_a_kubeconfig_without_a_current_context(
    kubectl_standin, empty_kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(NoKubeContext, match=r"no current kube context \(none set in .*\).*or pass --kube-context"):
        Kube.connect(config=MINIKUBE_ONLY, read_files=True)
    assert kubectl_standin.argvs() == []


def test_a_missing_kubeconfig_file_and_an_empty_context_are_named(kubectl_standin, tmp_path: Path) -> None:
    with pytest.raises(NoKubeContext, match="does not exist"):
        Kube.connect(config=MINIKUBE_ONLY, kubeconfig=str(tmp_path / "nope"))
    with pytest.raises(ValueError, match="non-empty"):
        Kube.connect("", config=MINIKUBE_ONLY)


def test_missing_kubectl_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KubectlNotFound, match="not on PATH"):
        Kube.connect(config=MINIKUBE_ONLY)


def test_kubectl_failure_carries_code_argv_and_stderr(kubectl_standin) -> None:
    kubectl_standin.answer(
        "get", "agentruns", stderr='error: the server doesn\'t have a resource type "agentruns"\n', exit=1
    )
    kube = Kube.connect(config=MINIKUBE_ONLY)
    with pytest.raises(KubectlError) as caught:
        kube.kubectl_json("get", "agentruns")
    assert caught.value.returncode == 1
    assert "--context" in caught.value.argv
    assert "doesn't have a resource type" in str(caught.value)


def test_kubectl_timeout_kills_its_whole_process_group(kubectl_standin) -> None:
    kubectl_standin.answer("get", "pods", sleep=60, grandchild=True)
    kube = Kube.connect(config=MINIKUBE_ONLY)
    started = time.monotonic()
    with pytest.raises(KubectlTimeout, match="process group was killed"):
        kube.kubectl("get", "pods", timeout=1.0)
    assert time.monotonic() - started < 1.0 + 2.0
    hung = kubectl_standin.pids()[-1]  # each kubectl leads its own process group
    settle = time.monotonic() + 2.0  # SIGKILL is sent; the grandchild (not our child) needs a moment to die
    while group_alive(hung) and time.monotonic() < settle:
        time.sleep(0.02)
    assert not group_alive(hung), "a process of the timed-out kubectl's group is still alive"
    assert hung not in LIVE_CHILDREN


def test_kubectl_inside_a_wait_is_shortened_to_the_attempt_bound(kubectl_standin) -> None:
    kubectl_standin.answer("get", "pods", sleep=60)
    kube = Kube.connect(config=MINIKUBE_ONLY)
    with pytest.raises(WaitTimeout) as caught:
        wait_for_sync(
            "pods", lambda: kube.kubectl("get", "pods", timeout=30.0), timeout=1.0, interval=0.1, probe_timeout=0.5
        )
    assert caught.value.summary is not None
    assert len(caught.value.summary.attempts) >= 2
    # Each kubectl was killed at its attempt's bound (not at its 30 s timeout), so none runs on.
    deadline = time.monotonic() + 5
    while any(group_alive(pid) for pid in kubectl_standin.pids()[1:]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(group_alive(pid) for pid in kubectl_standin.pids()[1:])


class _DateServer(BaseHTTPRequestHandler):
    offset = 0.0

    def do_GET(self) -> None:
        body = b'{"major":"1","minor":"32","gitVersion":"v1.32.0"}'
        self.send_response(200)  # adds Date from date_time_string() below
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def date_time_string(self, timestamp: float | None = None) -> str:
        return format_datetime(datetime.fromtimestamp(time.time() + self.offset, UTC), usegmt=True)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api_server(tmp_path: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DateServer)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: minikube\n"
        f"clusters: [{{name: mk, cluster: {{server: 'http://127.0.0.1:{server.server_port}'}}}}]\n"
        "contexts: [{name: minikube, context: {cluster: mk, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
    )
    yield kubeconfig
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_server_time_and_clock_skew_come_from_the_api_servers_date_header(api_server: Path, kubectl_standin) -> None:
    _DateServer.offset = -90.0  # the "minikube VM" is 90 s behind the host
    try:
        kube = Kube(
            "minikube",
            "controller-agent",
            allowed=("minikube",),
            kubectl_path=str(kubectl_standin.path),
            kubeconfig=str(api_server),
        )
        server_now = kube.server_time()
        assert server_now.tzinfo is not None
        assert abs((datetime.now(UTC) - server_now).total_seconds() - 90) < 2.5
        assert 87.5 < kube.clock_skew() < 92.5
        kube.close()
    finally:
        _DateServer.offset = 0.0


def test_global_kubernetes_configuration_is_untouched(api_server: Path, kubectl_standin) -> None:
    from kubernetes import client

    before = client.Configuration.get_default_copy().host
    kube = Kube(
        "minikube",
        "controller-agent",
        allowed=("minikube",),
        kubectl_path=str(kubectl_standin.path),
        kubeconfig=str(api_server),
    )
    kube.server_time()
    kube.close()
    assert client.Configuration.get_default_copy().host == before


def test_rollout_restart_and_status_are_pinned_and_bounded(kubectl_standin) -> None:
    kubectl_standin.answer("rollout", "restart", stdout="deployment.apps/agent-orchestrator restarted\n")
    kubectl_standin.answer(
        "rollout",
        "status",
        stdout='Waiting for deployment "agent-orchestrator" rollout to finish\n'
        'deployment "agent-orchestrator" successfully rolled out\n',
    )
    kube = Kube.connect(config=MINIKUBE_ONLY)
    kube.rollout_restart("agent-orchestrator")
    assert (
        kube.rollout_status("agent-orchestrator", timeout=120)
        == 'deployment "agent-orchestrator" successfully rolled out'
    )
    restart, status = kubectl_standin.argvs()[2:]
    assert restart == [
        "--context",
        "minikube",
        "-n",
        "controller-agent",
        "rollout",
        "restart",
        "deployment/agent-orchestrator",
    ]
    assert status[4:] == ["rollout", "status", "deployment/agent-orchestrator", "--timeout=120s"]


def test_rollout_status_that_never_finishes_is_killed_at_its_bound(kubectl_standin) -> None:
    kubectl_standin.answer("rollout", "status", sleep=60)
    kube = Kube.connect(config=MINIKUBE_ONLY)
    with pytest.raises(RolloutFailed) as caught:
        kube.rollout_status(
            "agent-orchestrator", timeout=0.5, grace=0.5, explain_budget=2.0
        )  # the stand-in ignores --timeout
    assert caught.value.__cause__ is None  # cause first: kubectl's failure is in the message, not a chained banner
    assert isinstance(caught.value.gave_up, KubectlTimeout)
    assert caught.value.gave_up.timeout == pytest.approx(1.0)
    assert str(caught.value).startswith(
        "deployment/agent-orchestrator did not roll out: kubectl did not finish within 1.0s"
    )


def test_server_time_of_a_silent_api_server_fails_within_its_bound_naming_the_hop(
    tmp_path: Path, kubectl_standin
) -> None:
    import socket

    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        kubeconfig = tmp_path / "silent-kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: minikube\n"
            f"clusters: [{{name: mk, cluster: {{server: 'http://127.0.0.1:{silent.getsockname()[1]}'}}}}]\n"
            "contexts: [{name: minikube, context: {cluster: mk, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
        )
        kube = Kube(
            "minikube",
            "controller-agent",
            allowed=("minikube",),
            kubectl_path=str(kubectl_standin.path),
            kubeconfig=str(kubeconfig),
        )
        kube.api_client()  # built first (imports, the kubeconfig read): the clock below is the request's alone
        started = time.monotonic()
        with pytest.raises(ApiServerUnreachable, match=r"did not answer within 0.5s on GET /version") as caught:
            kube.server_time(timeout=0.5)
        assert caught.value.kind == "no-answer"
        assert time.monotonic() - started < 0.5 + 1.0  # one attempt, no urllib3 retries
        kube.close()
