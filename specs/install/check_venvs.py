"""What each install holds and can do, in fresh virtual environments: ``make install-check`` (not in ``make test``).

The wheel of this checkout is built once; every other distribution comes from a wheelhouse in the per-user cache
(``$XDG_CACHE_HOME/stack-harness/wheelhouse``), filled from the package index only when it lacks one, so the
installs themselves never wait on a registry. The virtual environments are made without pip (this venv's pip installs
into them with ``--python``) and removed afterwards.

- base: holds exactly the base requirements and what they need, imports every module of ``harness``, runs a spec, and
  each fake's import names its extra;
- each fake's extra (with the specs' own clients, the ``specs`` dependency group): that fake's conformance specs pass
  from this checkout, and another fake's import names its extra;
- ``[fakes]``: an adopter's project, outside this checkout, uses every fixture of ``fakes.fixtures``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from fakes.extras import EXTRAS
from specs.install import imports as im

PIP_TIMEOUT = 900.0
"""Seconds for one pip command: a wheelhouse filled from the index on a cold cache (about 400 MB) is the longest."""
RUN_TIMEOUT = 600.0
"""Seconds for one run inside a fresh venv (a fake's conformance specs on two cores: about a minute)."""
SPEC_FOLDERS = {
    "fakes.kube": "specs/kube",
    "fakes.github": "specs/github",
    "fakes.qdrant": "specs/qdrant",
    "fakes.openai": "specs/fake_openai",
}
"""Each fake's own conformance specs."""
FAKES_ONLY = {"qdrant-edge-py", "qdrant-client", "numpy", "openai", "uvicorn", "pyjwt"}
WORKERS = str(max(2, len(os.sched_getaffinity(0))))


def wheelhouse() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "stack-harness" / "wheelhouse"


def pip(*args: str, timeout: float = PIP_TIMEOUT) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"pip failed ({' '.join(argv)}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}", pytrace=False)
    return done


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel, and every distribution any install below needs in the wheelhouse."""
    folder = tmp_path_factory.mktemp("wheel")
    pip("wheel", "--no-deps", "--wheel-dir", str(folder), str(im.ROOT))
    (wheel,) = folder.glob("stack_harness-*.whl")
    house = wheelhouse()
    house.mkdir(parents=True, exist_ok=True)
    wanted = [f"{wheel}[fakes]", "--group", f"{im.ROOT / 'pyproject.toml'}:specs"]
    offline = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--quiet",
            "wheel",
            "--no-index",
            "--find-links",
            str(house),
            "--wheel-dir",
            str(house),
            *wanted,
        ],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT,
    )
    if offline.returncode != 0:  # the wheelhouse lacks a distribution: fill it from the index once
        pip("wheel", "--find-links", str(house), "--wheel-dir", str(house), *wanted)
    for own in house.glob("stack_harness-*.whl"):
        own.unlink()  # the checkout's wheel is built fresh each run, never taken from the cache
    return wheel


def venv(root: Path, wheel: Path, *requirements: str, group: str | None = None) -> Path:
    """A fresh venv under ``root`` with ``requirements`` installed from the wheelhouse only; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=RUN_TIMEOUT)
    python = root / "bin" / "python"
    more = ["--group", f"{im.ROOT / 'pyproject.toml'}:{group}"] if group else []
    pip("--python", str(python), "install", "--no-index", "--find-links", str(wheelhouse()), *requirements, *more)
    return python


def run(python: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(python), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})},
    )
    return done


PROBE = """
import importlib.metadata as md, json, sys
from packaging.requirements import Requirement
def names(dist, extras=()):
    out = set()
    for line in md.requires(dist) or []:
        r = Requirement(line)
        if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in (*extras, "")):
            out.add(r)
    return out
closure, todo = set(), [Requirement(line) for line in md.requires("stack-harness") if "extra ==" not in line]
while todo:
    r = todo.pop()
    key = r.name.lower().replace("_", "-")
    if key in closure:
        continue
    closure.add(key)
    todo.extend(names(r.name, r.extras))
installed = {d.metadata["Name"].lower().replace("_", "-") for d in md.distributions()} - {"stack-harness"}
print(json.dumps({"requires": [l for l in md.requires("stack-harness") if "extra ==" not in l],
                  "closure": sorted(closure), "installed": sorted(installed)}))
"""

IMPORT_EVERY = """
import importlib, json, pkgutil, sys
import harness
names = [m.name for m in pkgutil.walk_packages(harness.__path__, "harness.")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"file": harness.__file__, "count": len(names)}))
"""

TRY_FAKE = """
import json
try:
    import {package}
except ImportError as error:
    print(json.dumps({{"type": type(error).__name__, "message": str(error)}}))
else:
    print(json.dumps({{"type": None}}))
"""


def missing_extra(python: Path, package: str, wheel: Path, cwd: Path) -> None:
    done = run(python, "-c", TRY_FAKE.format(package=package), cwd=cwd)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    extra = EXTRAS[package]
    assert outcome["type"] == "MissingExtraError", outcome
    assert outcome["message"].endswith(f"add it with: pip install '{wheel}[{extra}]'"), outcome["message"]


def test_the_base_install_holds_only_its_list_and_runs_the_harness(built: Path, tmp_path: Path) -> None:
    python = venv(tmp_path / "base", built, str(built))
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    probe = json.loads(run(python, "-c", PROBE, cwd=elsewhere).stdout)
    listed = im.pyproject()["project"]["dependencies"]
    assert sorted(str(Requirement(r)) for r in probe["requires"]) == sorted(str(Requirement(r)) for r in listed)
    assert sorted(probe["installed"]) == sorted(probe["closure"]), "installed beyond the base list's closure"
    # the heavy libraries only the fakes need (kubernetes itself brings aiohttp and pydantic to every install)
    assert FAKES_ONLY.isdisjoint(probe["installed"]), sorted(FAKES_ONLY & set(probe["installed"]))
    imported = run(python, "-c", IMPORT_EVERY, cwd=elsewhere)
    assert imported.returncode == 0, imported.stderr[-4000:]
    every = json.loads(imported.stdout)
    assert Path(every["file"]).is_relative_to(tmp_path / "base"), every  # the installed copy, not this checkout
    (elsewhere / "pyproject.toml").write_text('[project]\nname = "elsewhere"\nversion = "0"\n')
    (elsewhere / "test_plain.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    spec = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=elsewhere)
    assert spec.returncode == 0, spec.stdout[-4000:] + spec.stderr[-4000:]
    for package in EXTRAS:
        missing_extra(python, package, built, elsewhere)


@pytest.mark.parametrize("package", sorted(EXTRAS))
def test_one_extra_runs_its_fakes_conformance_specs(built: Path, tmp_path: Path, package: str) -> None:
    extra = EXTRAS[package]
    python = venv(tmp_path / extra, built, f"{built}[{extra}]", group="specs")
    installed = set(json.loads(run(python, "-c", PROBE, cwd=tmp_path).stdout)["installed"])
    lacking = [other for other in EXTRAS if not set(_extra_names(other)) <= installed]
    assert package not in lacking
    assert lacking, f"[{extra}] with the specs group holds every fake's libraries: nothing to check"
    for other in lacking:
        missing_extra(python, other, built, tmp_path)
    specs = run(
        python,
        "-m",
        "pytest",
        SPEC_FOLDERS[package],
        "-q",
        "-p",
        "no:cacheprovider",
        "-n",
        WORKERS,
        "-m",
        "not cluster and not twin and not control_plane",
        cwd=im.ROOT,
        env={"GOGC": "off", "GOMEMLIMIT": "256MiB"},
    )
    tail = specs.stdout[-6000:] + specs.stderr[-3000:]
    assert specs.returncode == 0, tail
    assert " passed" in specs.stdout.splitlines()[-1], tail


def _extra_names(package: str) -> list[str]:
    return sorted(im.requirement_names(im.pyproject()["project"]["optional-dependencies"][EXTRAS[package]]))


ADOPTER = textwrap.dedent("""
    import json

    import httpx
    import kubernetes
    import openai
    from qdrant_client import QdrantClient

    import harness


    def test_fake_github(fake_github):
        fake_github.app.add_user("alice", token="ghp_alice")
        fake_github.app.add_repo("octo/shop")
        got = httpx.get(fake_github.url + "/repos/octo/shop", headers={"Authorization": "token ghp_alice"}, timeout=10)
        assert got.json()["full_name"] == "octo/shop"


    def test_fake_openai(fake_openai):
        client = openai.OpenAI(base_url=fake_openai.url + "/v1", api_key="k", timeout=10)
        assert client.models.list().data


    def test_fake_qdrant(fake_qdrant):
        client = QdrantClient(url=fake_qdrant.url, timeout=10)
        assert client.get_collections().collections == []


    def test_fake_kube(fake_kube):
        assert fake_kube.kubectl("create", "configmap", "shop", "--from-literal=a=b").returncode == 0
        core = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(fake_kube.kubeconfig))
        assert core.read_namespaced_config_map("shop", "default").data == {"a": "b"}
        assert isinstance(fake_kube.kube(), harness.Kube)


    def test_fake_kube_module(fake_kube_module):
        got = json.loads(fake_kube_module.kubectl("get", "namespace", "default", "-o", "json").stdout)
        assert got["metadata"]["name"] == "default"
""")


def test_every_fixture_works_in_an_adopters_project_with_every_fake(built: Path, tmp_path: Path) -> None:
    python = venv(tmp_path / "fakes", built, f"{built}[fakes]")
    project = tmp_path / "shop"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "0"\n')
    (project / "conftest.py").write_text('pytest_plugins = ["fakes.fixtures"]\n')
    (project / "test_fixtures.py").write_text(ADOPTER)
    done = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "5 passed" in done.stdout, done.stdout[-2000:]
