"""The comparison's fixtures: the two sides (the run's real control plane, a double reporting its version)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from specs.parity import check, runner


@pytest.fixture(scope="module")
def real(control_plane: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[runner.Side]:
    cache = tmp_path_factory.mktemp("real-kubectl-cache")
    side = runner.Side("real", str(control_plane.kubeconfig), control_plane.context, str(cache))
    side.node_names = runner.node_names(side)
    yield side
    side.close()


@pytest.fixture(scope="module")
def double(real: runner.Side, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[runner.Side, Any]]:
    """A double with its controllers, reporting the real server's version (a minor it does not serve fails here)."""
    try:
        version = check.real_version(real)
    except LookupError as exc:
        pytest.fail(str(exc), pytrace=False)
    with check.double_side(version, os.fspath(tmp_path_factory.mktemp("double"))) as pair:
        yield pair
