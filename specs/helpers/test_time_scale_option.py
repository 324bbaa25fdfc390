"""Specs of the ``--time-scale`` option (specs/agent_controller/twin_plugin.py): the twin's default and what it is
passed on to, and the usage errors (not a number, below 1, any K but 1 on a cluster). Inner pytest runs are projects
of their own (a pyproject.toml each) with this repository on their pythonpath, run in this process (the option is
parsed and checked per session); no twin starts: the spec patches the twin's start for the inner run's length.
"""

from __future__ import annotations

import pytest

from harness.kube import ApiServerInfo, Kube
from specs.agent_controller.twin import DEFAULT_TIME_SCALE, TwinSession
from specs.helpers.twin_project import CLUSTER_SPEC, twin_project


@pytest.mark.parametrize(
    ("args", "scale"), [((), DEFAULT_TIME_SCALE), (("--time-scale", "1"), 1.0), (("--time-scale", "2.5"), 2.5)]
)
def test_the_twin_gets_the_sessions_scale(
    pytester: pytest.Pytester, kubectl_standin, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], scale: float
) -> None:
    kubectl_standin.set_current_context(None)
    twin_project(pytester)
    pytester.makepyfile(test_inner=CLUSTER_SPEC)
    started: list[float] = []  # the scale the inner run's twin would be started with, instead of starting one
    monkeypatch.setattr(TwinSession, "ensure_started", lambda self: started.append(self.time_scale))
    monkeypatch.setattr(Kube, "check_api_server", lambda self, **kw: ApiServerInfo("twin", "v1.32.4", self.namespace))
    result = pytester.runpytest("-p", "no:cacheprovider", "--target", "twin", *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*namespace 'controller-agent', time scale {scale:g}*"])
    assert started, "the twin was asked to start"
    assert set(started) == {scale}


@pytest.mark.parametrize("value", ["0.5", "fast", "inf"])
def test_a_scale_that_is_not_a_number_above_one_is_a_usage_error(
    pytester: pytest.Pytester, kubectl_standin, value: str
) -> None:
    kubectl_standin.set_current_context(None)
    twin_project(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider", "--time-scale", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--time-scale {value}: give a number >= 1 (1 is the stack's own cadence)*"])


def test_a_scale_on_a_cluster_is_a_usage_error(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context("minikube")
    twin_project(pytester)
    pytester.makepyfile(test_inner=CLUSTER_SPEC)
    result = pytester.runpytest("-p", "no:cacheprovider", "--time-scale", "5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--time-scale 5 applies to the stack twin only; the target is a cluster (*), which runs at its own cadence*"]
    )


def test_scale_one_on_a_cluster_is_its_own_cadence(pytester: pytest.Pytester, kubectl_standin) -> None:
    kubectl_standin.set_current_context("minikube")
    twin_project(pytester)
    pytester.makepyfile(test_inner="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--time-scale", "1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["harness: the cluster runs at its own cadence (time scale 1)*"])
