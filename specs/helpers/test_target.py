"""Specs of the target choice (harness.targets) and its plugin: auto picks the cluster when there is a context,
the twin otherwise; the header and summary say which and why; a twin's context is never accepted any other way;
a clamped budget fails a cluster spec against the twin."""

from __future__ import annotations

import pytest

from harness.targets import TargetChoice, choose_target, current_kube_context


def _none() -> tuple[None, str]:
    return None, "error: current-context is not set"


def test_auto_picks_the_twin_without_any_context() -> None:
    choice = choose_target("auto", None, current=_none)
    why = "no --kube-context and no current kube context: error: current-context is not set"
    assert choice == TargetChoice("twin", why)
    assert choice.line().startswith("stack target: twin (")


def test_auto_picks_the_cluster_when_kubectl_has_a_current_context() -> None:
    choice = choose_target("auto", None, current=lambda: ("minikube", ""))
    assert choice.kind == "cluster"
    assert "current context is 'minikube'" in choice.reason


def test_auto_picks_the_cluster_for_an_explicit_context_without_asking_kubectl() -> None:
    def never() -> tuple[str, str]:
        raise AssertionError("kubectl's current context must not be consulted")

    assert choose_target("auto", "minikube", current=never) == TargetChoice("cluster", "--kube-context minikube given")


def test_forced_targets_say_so() -> None:
    assert choose_target("twin", None, current=_none).reason == "forced by --target twin"
    assert choose_target("cluster", None, current=_none).reason == "forced by --target cluster"


def test_a_twin_with_a_context_is_refused() -> None:
    with pytest.raises(ValueError, match="the twin has its own context"):
        choose_target("twin", "minikube")


def test_an_unknown_target_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, cluster, twin"):
        choose_target("kind", None)


def test_current_context_comes_from_kubectl(kubectl_standin) -> None:
    kubectl_standin.set_current_context("minikube")
    assert current_kube_context() == ("minikube", "")
    kubectl_standin.set_current_context(None)
    name, why = current_kube_context()
    assert name is None
    assert "current-context is not set" in why


INNER_CLUSTER_SPEC = """
import pytest
from harness import wait_for_sync

pytestmark = pytest.mark.cluster

@pytest.mark.timeout(5)
def test_budget_too_long_for_its_timeout():
    assert wait_for_sync("a thing that is there at once", lambda: True, timeout=30.0)

@pytest.mark.timeout(60)
def test_budget_that_fits():
    assert wait_for_sync("another thing", lambda: True, timeout=10.0)
"""
NO_TWIN = (
    "import harness.kube, specs.agent_controller.twin\n"
    "specs.agent_controller.twin.TwinSession.ensure_started = lambda self: None\n"
    "harness.kube.Kube.check_api_server = (\n"
    "    lambda self, **kw: harness.kube.ApiServerInfo('twin', 'v1.32.4', self.namespace)\n"
    ")\n"
)


def test_header_and_summary_name_the_twin_and_why(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context(None)
    pytester.makeconftest(NO_TWIN)
    pytester.makepyfile(test_inner=INNER_CLUSTER_SPEC)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "fits")
    result.assert_outcomes(passed=1, deselected=1)
    header = [line for line in result.stdout.lines if line.startswith("stack target:")]
    assert header[0] == (
        "stack target: twin (no --kube-context and no current kube context: error: current-context is not set)"
    )
    assert header[-1].startswith("stack target: twin (no --kube-context")
    assert len(header) == 2
    result.stdout.fnmatch_lines(
        [
            "harness: cluster specs use the stack twin this run starts (kube context "
            "'stack-twin-*', namespace 'controller-agent')"
        ]
    )


def test_a_clamped_budget_fails_a_cluster_spec_against_the_twin(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context(None)
    pytester.makeconftest(NO_TWIN)
    pytester.makepyfile(test_inner=INNER_CLUSTER_SPEC)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--target", "twin")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*budget does not fit (failure mode 43*a thing that is there at once*",
            "*budgets that do not fit their spec's timeout (1)*",
            "*test_budget_too_long_for_its_timeout: a thing that is there at once: budget clamped*",
        ]
    )


def test_twin_bug_switches_need_the_twin(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context("minikube")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--twin-bug", "subject-keying")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--twin-bug applies to the stack twin only, but the target is the cluster*"])


def test_an_unknown_bug_switch_is_a_usage_error(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context(None)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--twin-bug", "no-such-bug")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown twin bug switch(es) no-such-bug; known: *subject-keying*"])


def test_a_twin_context_is_not_accepted_as_a_cluster_context(pytester: pytest.Pytester, kubectl_standin) -> None:
    # Only a twin this session started is allowed; naming one as --kube-context goes through the committed allow-list.
    kubectl_standin.set_contexts(["minikube", "stack-twin-1-abcdef"])
    pytester.makepyfile(test_inner="import pytest\npytestmark = pytest.mark.cluster\ndef test_x(kube):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kube-context", "stack-twin-1-abcdef")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*stack target: cluster (--kube-context stack-twin-1-abcdef given)*",
            "*refusing kube context 'stack-twin-1-abcdef'*",
        ]
    )


def test_without_kubectl_the_twin_target_skips_cluster_specs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(pytester.path))  # no kubectl anywhere
    pytester.makepyfile(test_inner="import pytest\npytestmark = pytest.mark.cluster\ndef test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*stack target: twin (no --kube-context and no current kube context: kubectl not found*",
            "*no cluster, and no twin without kubectl*",
        ]
    )
