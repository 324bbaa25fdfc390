"""Where the control plane's binaries come from, and what is said when they cannot come: cluster-free (in `make
test`), with the real Go where Go is what is checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.controlplane import assets, build
from harness.controlplane.plane import Settings, go_duration
from harness.controlplane.release import BINARIES, MODULES, NAMES, module_digest, pinned
from harness.errors import BinariesMissing, ControlPlaneBuildFailed, ControlPlaneStartFailed
from specs.controlplane.local_http import Quiet, serving

REPO = Path(__file__).resolve().parents[2]
INNER_TIMEOUT = 120.0
"""Seconds an inner pytest run may take (it starts no control plane: it only finds none to start)."""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty build cache of this spec's own, and no envtest variables from the caller's environment."""
    root = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CONTROL_PLANE_CACHE", str(root))
    for name in [*os.environ]:
        if name == "KUBEBUILDER_ASSETS" or name.startswith("TEST_ASSET_"):
            monkeypatch.delenv(name)
    return root


def _executable(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)


def _current_build(cache: Path) -> Path:
    """A cache folder as a finished build leaves it: every binary, kwok's stages, a stamp of the committed modules."""
    folder = cache / pinned().folder
    for name in NAMES:
        _executable(folder / "bin" / name)
    (folder / build.STAGES).write_text("kind: Stage\n")
    (folder / build.CRDS).write_text("kind: CustomResourceDefinition\n")
    (folder / build.STAMP).write_text(json.dumps({"digest": module_digest(), "recipe": build.RECIPE}))
    return folder


def test_test_asset_variables_win_over_kubebuilder_assets_which_win_over_the_cache(cache: Path, tmp_path: Path):
    folder = _current_build(cache)
    given = _executable(tmp_path / "mine" / "kube-apiserver")
    envtest = tmp_path / "envtest"
    _executable(envtest / "etcd")
    _executable(envtest / "kube-apiserver")
    found = assets.find({"TEST_ASSET_KUBE_APISERVER": given, "KUBEBUILDER_ASSETS": str(envtest)})
    assert found.paths["kube-apiserver"] == given
    assert found.origins["kube-apiserver"] == "TEST_ASSET_KUBE_APISERVER"
    assert found.paths["etcd"] == str(envtest / "etcd")
    assert found.paths["kwok"] == str(folder / "bin" / "kwok")
    assert found.missing() == ()


def test_an_envtest_folder_alone_runs_an_api_server_and_names_the_rest_and_the_build(cache: Path, tmp_path: Path):
    envtest = tmp_path / "envtest"
    _executable(envtest / "etcd")
    _executable(envtest / "kube-apiserver")
    found = assets.find({"KUBEBUILDER_ASSETS": str(envtest)})
    found.require(("etcd", "kube-apiserver"))  # enough for Settings(components=ENVTEST_PAIR)
    with pytest.raises(BinariesMissing) as missing:
        found.require()
    assert missing.value.missing == ("kube-controller-manager", "kube-scheduler", "kwok")
    assert missing.value.fix == "python -m harness.controlplane build"
    assert "with etcd and kube-apiserver alone an API server runs, with no controllers, scheduler or nodes" in str(
        missing.value
    )


def test_a_cache_built_from_other_module_files_is_stale_and_says_rebuild(cache: Path):
    folder = _current_build(cache)
    (folder / build.STAMP).write_text(json.dumps({"digest": "from-other-modules"}))
    found = assets.find({})
    assert found.stale
    with pytest.raises(BinariesMissing, match=r"the build cache is from other module files: rebuild"):
        found.require()


def test_a_current_cache_builds_nothing_and_needs_no_go(cache: Path, monkeypatch: pytest.MonkeyPatch):
    folder = _current_build(cache)
    monkeypatch.setenv("PATH", "/nonexistent")
    said: list[str] = []
    assert build.build(say=said.append) == folder
    assert len(said) == 1
    assert said[0].startswith(f"control plane {pinned().kubernetes} is built: {folder}")
    assert said[0].endswith("nothing to do")


def test_no_go_on_path_is_one_error_naming_the_version_and_the_envtest_variables(cache: Path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ControlPlaneBuildFailed, match=r"no Go toolchain on PATH") as failed:
        build.build(say=lambda _line: None)
    need = ".".join(map(str, pinned().go))
    assert f"needs Go {need} or newer" in str(failed.value)
    assert "KUBEBUILDER_ASSETS / TEST_ASSET_<NAME>" in str(failed.value)


def test_too_old_a_go_is_refused_before_anything_builds(cache: Path, tmp_path: Path, monkeypatch):
    # A `go` that reports an old release (the real one cannot be made to): only `go env GOVERSION` is asked.
    old = tmp_path / "old-go" / "go"
    old.parent.mkdir()
    old.write_text('#!/bin/sh\n[ "$1 $2" = "env GOVERSION" ] && echo go1.20.14 && exit 0\necho "built!" >&2; exit 9\n')
    old.chmod(0o755)
    monkeypatch.setenv("PATH", f"{old.parent}:/usr/bin:/bin")
    with pytest.raises(ControlPlaneBuildFailed, match=r"is go1\.20\.14; the control plane's modules need Go 1\.\d+"):
        build.build(say=lambda _line: None)
    assert not (cache / pinned().folder / "bin").exists()


class _Refusing(Quiet):
    def do_GET(self) -> None:
        self.answer(410 if self.path.endswith((".zip", ".mod")) else 404)


@pytest.fixture
def refusing_proxy() -> Iterator[str]:
    with serving(_Refusing) as port:
        yield f"http://127.0.0.1:{port}"


def test_a_version_the_module_proxy_refuses_is_one_error_naming_module_and_answer(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusing_proxy: str
):
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain on PATH: this spec asks the real go")
    monkeypatch.setenv("GOPROXY", refusing_proxy)
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "modcache"))  # empty: every module must come from the proxy
    monkeypatch.setenv("GOSUMDB", "off")
    monkeypatch.setenv("GOFLAGS", "-modcacherw")
    with pytest.raises(ControlPlaneBuildFailed) as failed:
        build.build(say=lambda _line: None)
    message = str(failed.value)
    assert re.search(rf"the Go module proxy \({re.escape(refusing_proxy)}\) refused \S+@v\S+: 410 Gone", message)
    assert not (cache / pinned().folder / build.STAMP).exists()


def test_the_kubernetes_wrapper_pins_every_staging_module_to_the_release():
    release = pinned()
    text = (MODULES / "kubernetes" / "go.mod").read_text()
    staging = re.findall(r"^\s*(k8s\.io/\S+) => (k8s\.io/\S+) (v\S+)$", text, re.M)
    assert len(staging) >= 29  # 31 for 1.33: every `=> ./staging/...` replace of the release's own go.mod
    expected = "v0." + release.kubernetes.removeprefix("v1.")
    assert {(a == b, version) for a, b, version in staging} == {(True, expected)}
    for binary in BINARIES:
        if binary.package != ".":
            assert binary.package in (MODULES / binary.module / "go.mod").read_text()


@pytest.mark.parametrize(
    "text, seconds", [("90s", 90.0), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0), ("45", 45.0), ("1.5s", 1.5)]
)
def test_envtest_durations_are_read_as_go_writes_them(text: str, seconds: float):
    assert go_duration(text) == pytest.approx(seconds)


def test_the_envtest_start_and_stop_timeouts_are_honoured_and_a_bad_one_is_named(monkeypatch):
    monkeypatch.setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "2m")
    monkeypatch.setenv("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT", "7s")
    settings = Settings()
    assert (settings.start_timeout, settings.stop_timeout) == (120.0, 7.0)
    monkeypatch.setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "soon")
    with pytest.raises(ControlPlaneStartFailed, match=r"KUBEBUILDER_CONTROLPLANE_START_TIMEOUT='soon': not a duration"):
        Settings()


INNER_SPECS = """
import pytest

@pytest.mark.cluster
def test_on_the_target(kube):
    kube.kubectl("get", "namespaces")

def test_with_the_fixture(control_plane):
    pass
"""


def test_without_binaries_the_specs_that_need_them_skip_with_the_command_that_builds_them(cache: Path, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_needs_plane.py").write_text(INNER_SPECS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(HARNESS_CONTROL_PLANE_CACHE=str(cache), PATH="/usr/bin:/bin", HOME=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "--target", "control-plane", "."],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=INNER_TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 skipped" in done.stdout
    skips = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skips) == 2
    assert all("`python -m harness.controlplane build`" in line for line in skips)


def test_prune_removes_every_release_but_the_pinned_one_and_where_names_each(cache: Path):
    current = _current_build(cache)
    old = cache / "k8s-v1.32.9_etcd-v3.5.16_kwok-v0.7.0"
    _executable(old / "bin" / "kube-apiserver")
    said: list[str] = []
    build.describe_cache(say=said.append)
    assert said[0] == f"control-plane cache: {cache}"
    assert any(line.strip().startswith(f"{current.name}: ") and line.endswith("(current)") for line in said)
    assert any(line.strip().startswith(f"{old.name}: ") and not line.endswith("(current)") for line in said)
    assert build.prune(say=said.append) == [old]
    assert not old.exists()
    assert build.is_current(current)


def test_a_forced_control_plane_target_with_a_wrong_setting_is_a_usage_error_not_a_green_run(cache: Path, tmp_path):
    _current_build(cache)  # binaries "there": the setting is what is wrong
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_needs_plane.py").write_text(INNER_SPECS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(HARNESS_CONTROL_PLANE_CACHE=str(cache), HOME=str(tmp_path))
    env["KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"] = "nonsense"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--target", "control-plane", "."],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=INNER_TIMEOUT,
    )
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT='nonsense': not a duration" in done.stderr


@pytest.mark.parametrize("case", ["exists", "dangling link", "no folder", "no kwok config"])
def test_the_standalone_command_refuses_a_bad_path_before_it_starts_anything(tmp_path: Path, case: str):
    kubeconfig, extra = tmp_path / "kc", []
    if case == "exists":
        kubeconfig.write_text("mine\n")
    elif case == "dangling link":
        kubeconfig.symlink_to(tmp_path / "nowhere")
    elif case == "no folder":
        kubeconfig = tmp_path / "absent" / "kc"
    else:
        extra = ["--kwok-config", str(tmp_path / "absent.yaml")]
    argv = [sys.executable, "-m", "harness.controlplane", "run", "--kubeconfig", str(kubeconfig), *extra]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=INNER_TIMEOUT, cwd=REPO)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("control plane: ")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "nowhere").exists()
