"""The exception tree drawn in harness/errors.py is the real one, and every harness error lives there.

The drawing is what a reader catches by; a class moved or re-parented without redrawing it would make the
documentation lie. So the drawing is parsed and compared with each class's ``__bases__``, both ways.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil
import re

import pytest

import harness
import harness.errors as errors
from harness.errors import (
    HarnessError,
    KubectlError,
    KubectlTimeout,
    PortForwardBroken,
    PortForwardFailure,
    PortForwardGone,
    ServiceFailure,
)

_BRANCH = re.compile(r"^(?P<indent>(?:│   |    )*)(?:├── |└── )(?P<name>\w+)(?P<note>.*)$")
_ALSO = re.compile(r"\(also (?:an? )?(\w+)\)")
# Named under the drawing as internal: never reaches a caller.
_INTERNAL = {"BodyOverLimit", "TerminalStop", "RolloutDone"}


def _drawing() -> list[str]:
    doc = errors.__doc__
    assert doc is not None
    lines = doc.split("::\n", 1)[1].splitlines()
    body = [line[4:] for line in lines if line.startswith("    ")]
    assert body[0] == "Exception"
    return body[1:]


def _drawn_edges() -> tuple[set[tuple[str, str]], dict[str, set[str]]]:
    """(parent, child) pairs as drawn, and for each child the extra bases its ``(also X)`` note names."""
    edges: set[tuple[str, str]] = set()
    also: dict[str, set[str]] = {}
    stack = ["Exception"]
    for line in _drawing():
        if not line.strip():
            break  # the blank line that ends the drawing
        match = _BRANCH.match(line)
        assert match, f"cannot read this line of the drawing: {line!r}"
        depth = len(match["indent"]) // 4 + 1
        del stack[depth:]
        edges.add((stack[-1], match["name"]))
        also.setdefault(match["name"], set()).update(_ALSO.findall(match["note"]))
        stack.append(match["name"])
    return edges, also


def _resolve(name: str) -> type[BaseException]:
    found = getattr(errors, name, None) or getattr(builtins, name, None)
    assert isinstance(found, type), f"the drawing names {name}, which is neither in harness.errors nor a builtin"
    assert issubclass(found, BaseException)
    return found


def _defined_in_errors() -> dict[str, type[BaseException]]:
    return {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == errors.__name__
    }


def test_every_line_of_the_drawing_is_a_real_base_class() -> None:
    edges, _ = _drawn_edges()
    for parent, child in sorted(edges):
        assert _resolve(parent) in _resolve(child).__bases__, f"drawn {child} under {parent}, but it is not its base"


def test_every_base_of_every_error_is_drawn() -> None:
    edges, also = _drawn_edges()
    drawn_children = {child for _, child in edges}
    for name, cls in sorted(_defined_in_errors().items()):
        if name in _INTERNAL:
            continue
        assert name in drawn_children, f"{name} is defined in harness.errors but missing from the drawing"
        for base in cls.__bases__:
            named = (base.__name__, name) in edges or base.__name__ in also.get(name, set())
            assert named, f"{name} derives from {base.__name__}, which the drawing neither draws nor notes"


def test_the_internal_errors_are_named_under_the_drawing() -> None:
    doc = errors.__doc__
    assert doc is not None
    for name in _INTERNAL:
        assert hasattr(errors, name)
        assert f"``{name}``" in doc.split("Internal, never escapes the harness:", 1)[1]


def _harness_modules() -> list[str]:
    names = [harness.__name__]
    for info in pkgutil.walk_packages(harness.__path__, prefix=f"{harness.__name__}."):
        if info.name != "harness.__main__":  # runs the command line when imported
            names.append(info.name)
    return names


@pytest.mark.parametrize("module_name", _harness_modules())
def test_every_exception_class_in_the_harness_lives_in_harness_errors(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name, value in vars(module).items():
        if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__.startswith("harness"):
            assert value.__module__ == errors.__name__, f"{module_name}.{name} is defined outside harness.errors"


def test_harness_exports_every_public_error_as_the_same_class() -> None:
    for name, cls in sorted(_defined_in_errors().items()):
        if name in _INTERNAL:
            continue
        assert getattr(harness, name, None) is cls, f"harness.{name} is not harness.errors.{name}"
        assert name in harness.__all__


@pytest.mark.parametrize(
    "old_path",
    [
        "harness.chat.ChatError",
        "harness.chat.ChatRejected",
        "harness.chat.ChatStreamMalformed",
        "specs.agent_controller.invoke.InvokeError",
        "specs.agent_controller.invoke.InvokeTimeout",
        "specs.agent_controller.invoke.InvocationNotFound",
        "harness.qdrant.QdrantReadError",
        "specs.agent_controller.redis_sessions.RedisPodNotFound",
        "specs.agent_controller.redis_sessions.RedisSweepError",
        "specs.agent_controller.credentials.CredentialError",
        "specs.agent_controller.cluster_secrets.SecretMissing",
        "specs.agent_controller.github_journal.JournalUnreadable",
        "specs.agent_controller.github_seed.SeedFailed",
        "specs.agent_controller.pacing.PacingNotRestored",
        "specs.agent_controller.bounce.BounceRefused",
        "harness.artifacts.ArtifactsNotWritable",
        "specs.agent_controller.twin.TwinStartFailed",
        "harness.process.Timeout",
    ],
)
def test_the_old_import_paths_still_give_the_same_class(old_path: str) -> None:
    module_name, name = old_path.rsplit(".", 1)
    found = getattr(importlib.import_module(module_name), name)
    # The stack layer's errors live in its own errors module, each a subclass of a generic harness error.
    home = importlib.import_module("specs.agent_controller.errors") if module_name.startswith("specs.") else errors
    assert found.__module__ == home.__name__
    assert found is getattr(home, found.__name__)


def test_a_broken_forward_is_not_a_gone_one() -> None:
    # PortForwardBroken is raised while a request hangs on a live kubectl: code that treats "gone" as "refused
    # before sending" must not catch it.
    assert not issubclass(PortForwardBroken, PortForwardGone)
    assert issubclass(PortForwardBroken, PortForwardFailure)
    assert issubclass(PortForwardGone, PortForwardFailure)
    assert not issubclass(PortForwardFailure, ServiceFailure)


def test_kubectl_timeout_is_a_whole_kubectl_error() -> None:
    err = KubectlTimeout(["/usr/bin/kubectl", "get", "pods"], 2.5, "I1201 dialing\nerror: still waiting\n")
    assert isinstance(err, KubectlError)
    assert isinstance(err, HarnessError)
    assert err.argv == ["/usr/bin/kubectl", "get", "pods"]
    assert err.returncode == -9
    assert err.timeout == 2.5
    assert err.cause.startswith("kubectl did not finish within 2.5s")
    assert "its last word: error: still waiting" in err.cause
    assert "error: still waiting" in err.stderr_tail
    lines = str(err).splitlines()
    assert lines[0] == err.cause  # cause first
    assert lines[1] == "  killed at its bound: kubectl get pods"
    assert err.args == (str(err),)  # Exception.__init__ ran: pickling and repr see the message
