"""The generic harness carries nothing of the agent-controller stack: importing it and its pytest plugin loads no module
of the stack layer or of the fakes, and its public names are all generic (a stack's names live in its own layer)."""

from __future__ import annotations

import json
import re
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


STACK_WORDS = re.compile(
    r"agent|orchestrator|open ?webui|controller-agent|minikube|specs/cluster|fakes[./]stack|caller_tools", re.IGNORECASE
)
# (file, word) pairs that may stay: minikube is one of the default allowed contexts, and the advice for a context
# named minikube names minikube's own commands; an HTTP client's User-Agent header is no agent of any stack.
ALLOWED_MENTIONS = {
    ("harness/config.py", "minikube"),
    ("harness/advice.py", "minikube"),
}
ALLOWED_PHRASES = ("user-agent",)


def stack_mentions(root: Path) -> list[str]:
    """``file:line: word`` for every stack word in the files under ``root/harness`` that the allow-lists do not
    cover."""
    found = []
    for path in sorted((root / "harness").rglob("*")):
        if not path.is_file() or path.suffix not in (".py", ".md", ".txt", ".toml", ".json", ".html", ".css", ".js"):
            continue
        name = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            lowered = line.lower()
            for phrase in ALLOWED_PHRASES:
                lowered = lowered.replace(phrase, "")
            for match in STACK_WORDS.finditer(lowered):
                if (name, match.group(0).lower()) not in ALLOWED_MENTIONS:
                    found.append(f"{name}:{number}: {match.group(0)!r} in {line.strip()[:100]}")
    return found


def test_no_stack_word_appears_in_the_generic_harness() -> None:
    assert stack_mentions(ROOT) == []


def test_the_word_guard_sees_a_stack_word_and_honours_its_allow_list(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "config.py").write_text('ALLOWED = ["minikube"]\n')
    (tmp_path / "harness" / "chat.py").write_text('HEADER = "x-openwebui-chat-id"  # user-agent is fine\nMODEL = "m"\n')
    (tmp_path / "harness" / "kube.py").write_text('NAMESPACE = "controller-agent"  # minikube\n')
    assert stack_mentions(tmp_path) == [
        "harness/chat.py:1: 'openwebui' in HEADER = \"x-openwebui-chat-id\"  # user-agent is fine",
        "harness/kube.py:1: 'controller-agent' in NAMESPACE = \"controller-agent\"  # minikube",
        "harness/kube.py:1: 'minikube' in NAMESPACE = \"controller-agent\"  # minikube",
    ]
