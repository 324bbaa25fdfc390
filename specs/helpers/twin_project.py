"""An inner pytest project configured with this repository's twin plugin, for specs of the twin's options."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SPEC = "import pytest\npytestmark = pytest.mark.cluster\ndef test_x(kube):\n    pass\n"
"""One cluster spec that only asks for the ``kube`` fixture."""


def twin_project(pytester: pytest.Pytester) -> None:
    """A ``pyproject.toml`` naming the stack's twin plugin, with this repository on the inner run's pythonpath."""
    pytester.makefile(
        ".toml",
        pyproject=(
            '[tool.harness]\nallowed_contexts = ["minikube"]\nnamespace = "controller-agent"\n'
            'twin = "specs.agent_controller.twin_plugin"\n'
            f'\n[tool.pytest.ini_options]\npythonpath = [{str(ROOT)!r}, "."]\n'
        ),
    )
