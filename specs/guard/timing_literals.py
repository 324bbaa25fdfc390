"""Timing literals in the cluster specs: numbers of seconds written into ``specs/cluster/*.py`` where a formula over the
deployed profile belongs (none may stay there beyond failure-path budgets).

:func:`find_timing_literals` parses each file with :mod:`ast` (nothing is imported or run) and reports every numeric
literal that stands for a time:

- the value of a keyword argument, an assignment or a parameter default whose name says time (``timeout=``,
  ``interval=``, ``narrate_for=``, ``silent_for=``, ``expires_in=``, ``headroom=``, ``seconds=``, a constant named
  ``..._WINDOW``, ``..._BUDGET``, ``..._HOLD``, ...: :data:`TIMING_NAME`);
- a positional argument of a call that takes seconds (``pytest.mark.timeout``, ``timeout_for``, ``sleep``,
  ``timedelta``, ...: :data:`TIMING_CALLS`);
- a float given to a module or class constant or to a parameter default: in these specs a float is seconds (counts
  and indices are ints).

Inside such a value a literal that scales something (an operand of ``*`` or ``/`` beside a name: ``2 *
profile.idle_window``, ``TRIGGER_SPACING / 2``) is a factor, not a time; a literal added, subtracted, passed to
``min``/``max`` or standing alone is a time. Zero is never one (it switches a knob off), nor the whole-second floor
``max(1, ...)`` of a field Kubernetes counts in whole seconds.

The one exception is a failure-path budget (how long a spec waits before calling something broken: generous by
design, never a pacing): a constant named in the allow-list ``FAILURE_PATH_BUDGETS`` of ``specs/cluster/stack.py``
(``NAME`` for a constant of ``stack.py``, ``module.NAME`` for another module's) may be defined with a literal;
nothing else may, and a listed constant's literal is allowed where it is defined only.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ALLOW_LIST = "FAILURE_PATH_BUDGETS"
"""The allow-list's name in ``specs/cluster/stack.py``."""

TIMING_NAME = re.compile(
    r"(^|_)(timeouts?|intervals?|every|for|expires?|in|seconds|secs|ms|milliseconds|minutes|budgets?|deadlines?"
    r"|slack|windows?|holds?|wait|delay|grace|periods?|spacing|bound|pace|pacing|retry|drain|ttl|after|within"
    r"|headroom|sleep|cadence|keepalive|lifetime)(_|$)",
    re.IGNORECASE,
)
"""A name (keyword, constant, parameter) whose value is seconds."""

TIMING_CALLS = frozenset({"timeout", "timeout_for", "sleep", "timedelta", "fail_after", "move_on_after", "wait_for"})
"""Calls whose positional arguments are seconds (matched on the called name or attribute, case-insensitive)."""

_FACTOR_OPS = (ast.Mult, ast.Div, ast.FloorDiv, ast.Pow, ast.Mod)


@dataclass(frozen=True)
class TimingLiteral:
    """One finding: ``path:line``, the slot it was found in (``timeout=``, ``RUN_CREATED =``, ...) and the literal."""

    path: Path
    line: int
    slot: str
    literal: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.slot} {self.literal}"


def find_timing_literals(directory: Path, *, root: Path | None = None) -> list[TimingLiteral]:
    """Every timing literal in ``directory/*.py`` (paths shown relative to ``root``), in file and line order, except
    the definitions of the constants ``directory/stack.py`` allow-lists. Raises ``SyntaxError`` for a file that
    does not parse (its name and line in the message)."""
    allowed = allow_list(directory / "stack.py")
    found: list[TimingLiteral] = []
    for path in sorted(directory.glob("*.py")):
        shown = path.relative_to(root) if root is not None else path
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        seen: set[int] = set()  # a literal in a call inside an assignment is found twice
        for slot, node in _literals(tree, path.stem, allowed):
            if id(node) not in seen:
                seen.add(id(node))
                found.append(TimingLiteral(shown, node.lineno, slot, ast.unparse(node)))
    return sorted(found, key=lambda f: (str(f.path), f.line))


def allow_list(stack: Path) -> frozenset[str]:
    """The names in ``FAILURE_PATH_BUDGETS`` of ``stack`` (strings or bare names in its value: a tuple, set,
    frozenset or dict); empty when the file or the assignment is missing."""
    if not stack.is_file():
        return frozenset()
    for node in ast.parse(stack.read_text(encoding="utf-8"), filename=str(stack)).body:
        target, value = _assigned(node)
        if target == ALLOW_LIST and value is not None:
            calls = {id(n.func) for n in ast.walk(value) if isinstance(n, ast.Call)}
            names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and id(n) not in calls}
            strings = {n.value for n in ast.walk(value) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            return frozenset(names | strings)
    return frozenset()


def _assigned(node: ast.AST) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None


def _literals(tree: ast.Module, module: str, allowed: frozenset[str]) -> Iterator[tuple[str, ast.expr]]:
    top_level = {id(node) for node in tree.body}
    constants = top_level | {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in c.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield from _call_literals(node)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            name, value = _assigned(node)
            listed = f"{module}.{name}" in allowed or (module == "stack" and name in allowed)
            exempt = id(node) in top_level and listed
            if name is not None and value is not None and not exempt:
                yield from _named_literals(f"{name} =", name, value, floats=id(node) in constants)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _default_literals(node.args)


def _call_literals(call: ast.Call) -> Iterator[tuple[str, ast.expr]]:
    for keyword in call.keywords:
        if keyword.arg is not None and TIMING_NAME.search(keyword.arg):
            yield from ((f"{keyword.arg}=", lit) for lit in _times_in(keyword.value))
    called = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if called.lower() in TIMING_CALLS:
        for arg in call.args:
            yield from ((f"{called}(...)", lit) for lit in _times_in(arg))


def _named_literals(slot: str, name: str, value: ast.expr, *, floats: bool = True) -> Iterator[tuple[str, ast.expr]]:
    """Literals of ``value`` given to ``name``: every time in it when the name says time, else (for a constant or a
    parameter, ``floats``) its floats. A function's local variable is a time only by its name (``clock = [1e6]``
    is an instant, not a duration)."""
    if TIMING_NAME.search(name):
        yield from ((slot, lit) for lit in _times_in(value))
    elif floats:
        yield from ((slot, lit) for lit in _times_in(value, into_calls=False) if _is_float(lit))


def _default_literals(args: ast.arguments) -> Iterator[tuple[str, ast.expr]]:
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default]
    for arg, default in pairs:
        yield from _named_literals(f"{arg.arg}=", arg.arg, default)


def _times_in(value: ast.expr, *, into_calls: bool = True) -> list[ast.expr]:
    """The literals in ``value`` that stand for seconds: not factors, not zero, not inside strings or subscripts.
    An expression of literals only (``60.0 * 2``, ``-60.0``) is one time. Without ``into_calls`` the arguments of a
    call other than ``min``/``max`` are left alone (``committed_profile(1.0)`` is a scale, not seconds)."""
    if _literal_only(value):
        return [] if _is_zero(value) else [value]
    if isinstance(value, ast.Lambda):
        return _times_in(value.body, into_calls=into_calls)
    if isinstance(value, ast.BinOp) and isinstance(value.op, _FACTOR_OPS):
        sides = (value.left, value.right)
        return [lit for side in sides if not _literal_only(side) for lit in _times_in(side, into_calls=into_calls)]
    if isinstance(value, ast.Subscript | ast.JoinedStr | ast.Constant | ast.Name | ast.Attribute):
        return []
    if isinstance(value, ast.Call) and not into_calls and getattr(value.func, "id", "") not in ("min", "max"):
        return []
    if isinstance(value, ast.Call) and _whole_second_floor(value):
        return [lit for arg in value.args[1:] for lit in _times_in(arg, into_calls=into_calls)]
    children = [child for child in ast.iter_child_nodes(value) if isinstance(child, ast.expr)]
    return [lit for child in children for lit in _times_in(child, into_calls=into_calls)]


def _whole_second_floor(node: ast.Call) -> bool:
    """``max(1, ...)``: at least one whole second, for a field that counts whole seconds (Kubernetes' watch
    ``timeoutSeconds``, where 0 would mean the server's default): a unit's granularity, not a time."""
    return (
        getattr(node.func, "id", "") == "max"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and type(node.args[0].value) is int
        and node.args[0].value == 1
    )


def _literal_only(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _literal_only(node.operand)
    if isinstance(node, ast.BinOp):
        return _literal_only(node.left) and _literal_only(node.right)
    return False


def _is_zero(node: ast.expr) -> bool:
    try:
        return bool(ast.literal_eval(node) == 0)
    except ValueError:
        return False


def _is_float(node: ast.expr) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, float) for n in ast.walk(node))
