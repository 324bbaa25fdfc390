"""The generic harness carries nothing of the agent-controller stack: importing it and its pytest plugin loads no module
of the stack layer or of the fakes, and its public names are all generic (a stack's names live in its own layer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[2]
STACK_NAMES = {
    "AgentRunRecord",
    "agent_runs_since",
    "cleanup_agent_runs_since",
    "InvokeClient",
    "Invocation",
    "CredentialStore",
    "RedisSessions",
    "mint_user_jwt",
    "TwinStartFailed",
    "InvokeTimeout",
    "SeedFailed",
}


def test_importing_the_harness_and_its_plugin_loads_nothing_of_the_stack_layer_or_the_fakes() -> None:
    probe = (
        "import json, sys\n"
        "import harness, harness.pytest_plugin, harness.diagnostics_plugin, harness.targets\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(done.stdout)
    assert "harness.pytest_plugin" in loaded  # the probe did import what it names
    foreign = [m for m in loaded if m.split(".")[0] in ("specs", "fakes")]
    assert foreign == []


def test_the_public_api_names_nothing_of_the_stack() -> None:
    assert STACK_NAMES.isdisjoint(harness.__all__)
    for name in harness.__all__:
        module = getattr(getattr(harness, name), "__module__", "harness") or "harness"
        assert module.split(".")[0] in ("harness", "typing", "builtins"), (name, module)
    for name in STACK_NAMES:
        assert not hasattr(harness, name), f"harness.{name} still resolves (a re-export, lazy or not)"
