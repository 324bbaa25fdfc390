"""Inner pytest sessions for the diagnostics plugin's specs: a conftest that serves the Kubernetes API double (holding a
recorded scenario) as the ``kube`` fixture, and readers for what the plugin left behind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import RECORDED

INNER_CONFTEST = """
import json
import pytest
from fakes.kube.objects import bare_double, load_objects

SCENARIO = {scenario!r}


@pytest.fixture(scope="module")
def kd():
    with bare_double() as handle:
        if SCENARIO:
            with open(SCENARIO) as f:
                data = json.load(f)
            load_objects(handle, [data["workload"], *data["replicasets"], *data["pods"], *data["events"]])
        yield handle


@pytest.fixture
def kube(kd):
    return kd.kube(namespace="shop")
"""


def inner_session(pytester: pytest.Pytester, scenario: str | None, spec: str) -> None:
    """Write the inner conftest (the double loaded with ``scenario``) and one spec file ``test_inner.py``."""
    if os.system("command -v kubectl >/dev/null") != 0:
        pytest.skip("no kubectl on PATH: these specs need the real binary")
    path = os.path.join(RECORDED, f"{scenario}.json") if scenario else ""
    pytester.makeconftest(INNER_CONFTEST.format(scenario=path))
    pytester.makepyfile(test_inner=spec)


def run_folder(artifacts: Path) -> Path:
    """The single run folder under an ``--artifacts`` folder."""
    runs = [p for p in artifacts.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def evidence_folder(artifacts: Path, test: str) -> Path:
    folder = run_folder(artifacts) / f"test_inner.py__{test}"
    assert folder.is_dir(), sorted(p.name for p in run_folder(artifacts).iterdir())
    return folder


def index(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "index.json").read_text())


def steps(folder: Path) -> dict[str, dict[str, Any]]:
    """The index's steps by name."""
    return {step["step"]: step for step in index(folder)["steps"]}
