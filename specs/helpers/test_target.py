"""Specs of the target choice (harness.targets) and its plugin: a twin only where ``[tool.harness] twin`` names one;
then auto picks the cluster when there is a context, the twin otherwise; the header and summary say which and why; a
twin's context is never accepted any other way; a clamped budget fails a cluster spec against the twin. The inner
runs are projects of their own (a pyproject.toml each); this repository's twin module is reached on their pythonpath.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.targets import TargetChoice, choose_target, current_kube_context

ROOT = Path(__file__).resolve().parents[2]
STACK_TWIN = "specs.agent_controller.twin_plugin"


def _project(pytester: pytest.Pytester, twin: str | None = STACK_TWIN) -> None:
    """A pyproject.toml for the inner run: this repository's allow-list and namespace, and ``twin`` (or none)."""
    line = f'twin = "{twin}"\n' if twin else ""
    pytester.makefile(
        ".toml",
        pyproject=(
            '[tool.harness]\nallowed_contexts = ["minikube"]\nnamespace = "controller-agent"\n'
            f'{line}\n[tool.pytest.ini_options]\npythonpath = [{str(ROOT)!r}, "."]\n'
        ),
    )


def _none() -> tuple[None, str]:
    return None, "error: current-context is not set"


def test_auto_picks_the_twin_without_any_context() -> None:
    choice = choose_target("auto", None, twin=STACK_TWIN, current=_none)
    why = "no --kube-context and no current kube context: error: current-context is not set"
    assert choice == TargetChoice("twin", why)
    assert choice.line().startswith("target: twin (")


def test_auto_without_a_configured_twin_is_the_cluster_whatever_the_context() -> None:
    def never() -> tuple[str, str]:
        raise AssertionError("with no twin there is nothing to choose: the context is the guard's business")

    assert choose_target("auto", None, current=never) == TargetChoice("cluster", "no twin configured")


def test_target_twin_without_a_configured_twin_is_refused_with_the_key_to_set() -> None:
    with pytest.raises(ValueError, match=r"configures no twin: name the pytest plugin module .* \[tool.harness\] twin"):
        choose_target("twin", None, current=_none)


def test_auto_picks_the_cluster_when_kubectl_has_a_current_context() -> None:
    choice = choose_target("auto", None, twin=STACK_TWIN, current=lambda: ("minikube", ""))
    assert choice.kind == "cluster"
    assert "current context is 'minikube'" in choice.reason


def test_auto_picks_the_cluster_for_an_explicit_context_without_asking_kubectl() -> None:
    def never() -> tuple[str, str]:
        raise AssertionError("kubectl's current context must not be consulted")

    chosen = choose_target("auto", "minikube", twin=STACK_TWIN, current=never)
    assert chosen == TargetChoice("cluster", "--kube-context minikube given")


def test_forced_targets_say_so() -> None:
    assert choose_target("twin", None, twin=STACK_TWIN, current=_none).reason == "forced by --target twin"
    assert choose_target("cluster", None, twin=STACK_TWIN, current=_none).reason == "forced by --target cluster"


def test_a_twin_with_a_context_is_refused() -> None:
    with pytest.raises(ValueError, match="the twin has its own context"):
        choose_target("twin", "minikube", twin=STACK_TWIN)


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
# Inner runs are in-process but for the two with NO_TWIN: it patches harness classes for the whole process, and their
# inner specs' pytest-timeout markers arm SIGALRM timers, which in-process would replace the outer spec's own.
NO_TWIN = (
    "import harness.kube, specs.agent_controller.twin\n"
    "specs.agent_controller.twin.TwinSession.ensure_started = lambda self: None\n"
    "harness.kube.Kube.check_api_server = (\n"
    "    lambda self, **kw: harness.kube.ApiServerInfo('twin', 'v1.32.4', self.namespace)\n"
    ")\n"
)


def test_header_and_summary_name_the_twin_and_why(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context(None)
    _project(pytester)
    pytester.makeconftest(NO_TWIN)
    pytester.makepyfile(test_inner=INNER_CLUSTER_SPEC)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "fits")
    result.assert_outcomes(passed=1, deselected=1)
    header = [line for line in result.stdout.lines if line.startswith("target:")]
    assert (
        header[0] == "target: twin (no --kube-context and no current kube context: error: current-context is not set)"
    )
    assert header[-1].startswith("target: twin (no --kube-context")
    assert len(header) == 2
    result.stdout.fnmatch_lines(
        [
            "harness: cluster specs use the stack twin this run starts on the API double (kube context "
            "'stack-twin-*', namespace 'controller-agent', time scale 5: every stack timing divided by 5, floors "
            "kept; --time-scale 1 for its own)"
        ]
    )


def test_a_clamped_budget_fails_a_cluster_spec_against_the_twin(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context(None)
    _project(pytester)
    pytester.makeconftest(NO_TWIN)
    pytester.makepyfile(test_inner=INNER_CLUSTER_SPEC)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--target", "twin")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*budget does not fit: the wait for a thing that is there at once had its budget clamped*",
            "*budgets that do not fit their spec's timeout (1)*",
            "*test_budget_too_long_for_its_timeout: a thing that is there at once: budget clamped*",
        ]
    )


def test_twin_bug_switches_need_the_twin(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context("minikube")
    _project(pytester)
    result = pytester.runpytest("--twin-bug", "subject-keying")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--twin-bug applies to the stack twin only, but the target is not the twin (*"])


def test_an_unknown_bug_switch_is_a_usage_error(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context(None)
    _project(pytester)
    result = pytester.runpytest("--twin-bug", "no-such-bug")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown twin bug switch(es) no-such-bug; known: *subject-keying*"])


def test_a_twin_context_is_not_accepted_as_a_cluster_context(pytester: pytest.Pytester, kubectl_standin) -> None:
    # Only a twin this session started is allowed; naming one as --kube-context goes through the committed allow-list.
    kubectl_standin.set_contexts(["minikube", "stack-twin-1-abcdef"])
    _project(pytester)
    pytester.makepyfile(test_inner="import pytest\npytestmark = pytest.mark.cluster\ndef test_x(kube):\n    pass\n")
    result = pytester.runpytest("--kube-context", "stack-twin-1-abcdef")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*target: cluster (--kube-context stack-twin-1-abcdef given)*",
            "*refusing kube context 'stack-twin-1-abcdef'*",
        ]
    )


def test_without_kubectl_the_twin_target_skips_cluster_specs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(pytester.path))  # no kubectl anywhere
    _project(pytester)
    pytester.makepyfile(test_inner="import pytest\npytestmark = pytest.mark.cluster\ndef test_x():\n    pass\n")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*target: twin (no --kube-context and no current kube context: kubectl not found*",
            "*no cluster, and the twin cannot run here: kubectl not found*",
        ]
    )


TINY_TWIN = '''
"""A stand-in target of another stack: it only records that it started."""
from pathlib import Path

from harness.kube import Kube


class Tiny:
    def __init__(self):
        self.kube = Kube("tiny-twin", "default", allowed=("tiny-twin",), kubectl_path="/bin/true")
        self.marker = Path("tiny-started")

    def start(self):
        self.marker.write_text("started")

    def stop(self):
        pass

    def report(self):
        return {"started": True} if self.marker.exists() else None

    def header(self):
        return ["tiny twin: starts before the first spec that needs it"]

    def describe(self, reports):
        return f"the tiny twin started in {len(reports)} process(es)"


def make_stand_in(config):
    return Tiny()
'''


def test_no_context_and_no_twin_configured_skips_cluster_specs_with_the_fix(
    pytester: pytest.Pytester, kubectl_standin
) -> None:
    kubectl_standin.set_current_context(None)
    _project(pytester, twin=None)
    pytester.makepyfile(test_inner="import pytest\npytestmark = pytest.mark.cluster\ndef test_x(kube):\n    pass\n")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*no cluster: *or pass --kube-context NAME, or configure a twin*"])
    assert "target:" not in result.stdout.str()  # no twin configured: no target to name
    assert "twin this run starts" not in result.stdout.str()
    assert "stack-twin" not in result.stdout.str()


def test_target_twin_without_a_configured_twin_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _project(pytester, twin=None)
    result = pytester.runpytest("--target", "twin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--target twin, but this project configures no twin*"])


def test_a_configured_twin_that_cannot_be_imported_is_a_usage_error_naming_the_key(pytester: pytest.Pytester) -> None:
    _project(pytester, twin="no_such_twin_module")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(['*[[]tool.harness[]] twin = "no_such_twin_module": cannot import it*'])


def test_another_stacks_twin_is_started_for_an_unmarked_spec_that_uses_kube_as_for_a_cluster_spec(
    pytester: pytest.Pytester, kubectl_standin
) -> None:
    kubectl_standin.set_current_context(None)
    _project(pytester, twin="tiny_twin")
    pytester.makepyfile(tiny_twin=TINY_TWIN)
    pytester.makepyfile(test_inner="def test_unmarked(kube):\n    pass\n")
    result = pytester.runpytest()
    # Using the harness's kube fixture makes it a cluster spec: the twin's header, the twin started first, then the
    # once-per-session API server check, which this tiny twin (no API server at all) cannot pass.
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "tiny twin: starts before the first spec that needs it",
            "*cluster unusable: *",
            "*target: twin (no --kube-context*; the tiny twin started in 1 process(es)",
        ]
    )
    assert (pytester.path / "tiny-started").read_text() == "started"
    assert "stack twin" not in result.stdout.str()
