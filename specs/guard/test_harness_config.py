"""``[tool.harness]``: checked keys, stack-neutral defaults for a project without the table, the kubeconfig's
precedence (``--kubeconfig``, the key, ``$KUBECONFIG``, kubectl's default) and a missing kubeconfig named as such."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from harness import HarnessConfigError, Kube, NoKubeContext
from harness.config import DEFAULT_ALLOWED_CONTEXTS, KNOWN_KEYS, HarnessConfig, kubeconfig_choice, load_config
from harness.testing.apiserver import write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "other"\nversion = "0"\n\n{table}')
    return tmp_path


def test_an_unknown_key_is_an_error_naming_it_and_the_known_keys(tmp_path: Path) -> None:
    project(tmp_path, '[tool.harness]\nallowed_context = ["kind-*"]\n')
    with pytest.raises(HarnessConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'pyproject.toml'}: unknown [tool.harness] key 'allowed_context'; ")
    assert message.endswith(f"the known keys are {', '.join(KNOWN_KEYS)}")
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    "line, said",
    [
        ('twin = ""', "twin must be a module name (a non-empty string), or absent for no twin, got ''"),
        ("keep_runs = 0", "keep_runs must be an integer >= 1 (run folders kept under artifacts/), got 0"),
        ("keep_runs = true", "keep_runs must be an integer >= 1 (run folders kept under artifacts/), got True"),
        ("allowed_contexts = []", "allowed_contexts must be a non-empty list of non-empty strings"),
        (
            'namespace = ""',
            "namespace must be a namespace name (RFC 1123 label: lowercase letters, digits, '-'; 63 at most), got ''",
        ),
        (
            'namespace = "Bad_NS"',
            "namespace must be a namespace name (RFC 1123 label: lowercase letters, digits, '-'; 63 at most), "
            "got 'Bad_NS'",
        ),
        ("kubeconfig = 3", "kubeconfig must be a path (relative to"),
        ('durations_file = ""', "durations_file must be a path (relative to"),
        ('kwok_configs = "stages.yaml"', "kwok_configs must be a list of paths of files that exist (relative to"),
        ('kwok_configs = ["missing.yaml"]', "kwok_configs must be a list of paths of files that exist (relative to"),
    ],
)
def test_a_malformed_value_names_the_key_and_what_it_must_be(tmp_path: Path, line: str, said: str) -> None:
    project(tmp_path, f"[tool.harness]\n{line}\n")
    with pytest.raises(HarnessConfigError, match=re.escape(said)):
        load_config(tmp_path)


def test_every_key_is_read(tmp_path: Path) -> None:
    project(
        tmp_path,
        '[tool.harness]\nallowed_contexts = ["kind-*"]\nnamespace = "shop"\ntwin = "my_stack.twin"\n'
        'kubeconfig = "ci/kubeconfig"\nkeep_runs = 5\ndurations_file = "ci/durations.json"\n',
    )
    assert load_config(tmp_path) == HarnessConfig(
        ("kind-*",),
        "shop",
        tmp_path / "pyproject.toml",
        twin="my_stack.twin",
        kubeconfig=str(tmp_path / "ci" / "kubeconfig"),  # relative to the pyproject's folder, not the cwd
        keep_runs=5,
        durations_file=str(tmp_path / "ci" / "durations.json"),
    )
    assert load_config(tmp_path).durations_path(tmp_path / "elsewhere") == tmp_path / "ci" / "durations.json"


def test_a_project_without_the_table_gets_stack_neutral_defaults(tmp_path: Path) -> None:
    project(tmp_path, "")
    config = load_config(tmp_path)
    assert config == HarnessConfig()
    assert config.source is None
    assert config.namespace is None  # the context's own
    assert config.twin is None
    assert config.keep_runs == 20
    assert config.durations_path(tmp_path) == tmp_path / ".harness-durations.json"  # in the rootdir
    assert {"minikube", "kind-*", "k3d-*", "docker-desktop"} <= set(DEFAULT_ALLOWED_CONTEXTS)
    assert "controller-agent" not in repr(config)
    assert "no [tool.harness] table was found" in config.origin()


def test_a_parent_projects_table_is_not_this_projects(tmp_path: Path) -> None:
    project(tmp_path, '[tool.harness]\nallowed_contexts = ["minikube"]\n')
    inner = tmp_path / "inner"
    inner.mkdir()
    project(inner, "")
    assert load_config(inner).source is None


def test_this_repository_keeps_its_own_values() -> None:
    config = load_config(ROOT)
    # harness-control-plane-*: this machine's real control planes, which the sharded run (make e2e-job) is given.
    assert config.allowed_contexts == ("minikube", "harness-control-plane-*")
    assert config.namespace == "controller-agent"


def test_the_namespace_defaults_to_the_contexts_own_then_default(
    tmp_path: Path, kubectl_standin, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_ns = write_kubeconfig(tmp_path / "a", "http://127.0.0.1:9", context="kind-dev", namespace="team-a")
    monkeypatch.setenv("KUBECONFIG", str(with_ns))
    kubectl_standin.set_current_context("kind-dev").set_contexts("kind-dev")
    assert Kube.connect(config=HarnessConfig()).namespace == "team-a"
    without = write_kubeconfig(tmp_path / "b", "http://127.0.0.1:9", context="kind-dev")
    monkeypatch.setenv("KUBECONFIG", str(without))
    assert Kube.connect(config=HarnessConfig()).namespace == "default"
    assert Kube.connect(config=HarnessConfig(namespace="shop")).namespace == "shop"


def test_kubeconfig_precedence_is_the_option_then_the_key_then_kubectls_own(tmp_path: Path) -> None:
    keyed = HarnessConfig(kubeconfig=str(tmp_path / "from-key"), source=tmp_path / "pyproject.toml")
    assert kubeconfig_choice("/x/option", keyed) == ("/x/option", "--kubeconfig")
    assert kubeconfig_choice(None, keyed) == (
        str(tmp_path / "from-key"),
        f"[tool.harness] kubeconfig in {tmp_path / 'pyproject.toml'}",
    )
    assert kubeconfig_choice(None, HarnessConfig()) == (None, "$KUBECONFIG or kubectl's default")


def test_a_kubeconfig_that_does_not_exist_is_named_as_such(tmp_path: Path, kubectl_standin) -> None:
    keyed = HarnessConfig(kubeconfig=str(tmp_path / "gone"), source=tmp_path / "pyproject.toml")
    with pytest.raises(NoKubeContext) as caught:
        Kube.connect(config=keyed)
    assert str(caught.value) == (
        f"kubeconfig '{tmp_path / 'gone'}' (from [tool.harness] kubeconfig in {tmp_path / 'pyproject.toml'}) "
        "does not exist"
    )
    assert kubectl_standin.argvs() == []  # nothing ran against a file that is not there


def test_the_plugin_refuses_an_unknown_key_once_at_session_start(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", pyproject='[tool.harness]\nallowed_contexts = ["minikube"]\nnamespce = "x"\n')
    pytester.makepyfile("def test_never_runs():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if "unknown [tool.harness] key 'namespce'" in line]
    assert len(errors) == 1
    assert errors[0].startswith("ERROR: ")
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_missing_kubeconfig_fails_the_cluster_specs_at_once_naming_it(
    pytester: pytest.Pytester, kubectl_standin, tmp_path: Path
) -> None:
    pytester.makepyfile("import pytest\n\n@pytest.mark.cluster\ndef test_c(kube):\n    pass\n")
    started = time.monotonic()
    result = pytester.runpytest("--kubeconfig", str(tmp_path / "typo"), "--target", "cluster")
    took = time.monotonic() - started
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"kubeconfig '{tmp_path / 'typo'}' does not exist (from --kubeconfig)*"])
    assert took < 60  # named at once, not a kubectl stat error retried for a whole budget
    assert kubectl_standin.argvs() == []
