"""Which kubectl verb and resource a command line names, and every pair the harness and the specs invoke.

:func:`pair` reads an argument list as kubectl does: global flags and their values dropped, two-word verbs
(``rollout status``, ``create deployment``, ``set image``) kept whole, the resource made canonical through the
double's discovery (short names, singular names and ``kind.group`` as kubectl resolves them), ``TYPE/NAME`` read as
its type, a file (``-f``) as ``manifest``, ``--raw`` as ``raw``. Verbs that act on a pod by name (``logs``, ``exec``,
``port-forward``, ``attach``) default to ``pods``.

:func:`invoked` scans source files (their syntax tree, never run) for calls of a ``kubectl``-named function or
method and for argument lists starting with a kubectl binary, keeping each call whose verb and resource are
literals (a computed resource is the caller's input: a kind the corpus covers through its own cases).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache

from fakes.kube.resources import Registry

#: kubectl's flags that take the next argument as their value (``kubectl options`` and the verbs' own).
VALUE_FLAGS = frozenset(
    [
        "-n",
        "--namespace",
        "--context",
        "--kubeconfig",
        "--cache-dir",
        "--request-timeout",
        "-o",
        "--output",
        "-l",
        "--selector",
        "-f",
        "--filename",
        "--field-selector",
        "-c",
        "--container",
        "--for",
        "--timeout",
        "--type",
        "-p",
        "--patch",
        "--field-manager",
        "--replicas",
        "--image",
        "--port",
        "--from-literal",
        "--from-file",
        "--tail",
        "--since",
        "--subresource",
        "--cluster",
        "--user",
        "--server",
        "--token",
        "-s",
        "--revision",
        "--to-revision",
        "--dry-run",
        "--cascade",
        "--grace-period",
        "--template",
        "--sort-by",
        "--restart",
        "--overrides",
        "--tcp",
        "--current-replicas",
        "--resource-version",
        "--address",
        "--pod-running-timeout",
        "--validate",
        "--raw",
    ]
)
TWO_WORD = frozenset({"rollout", "set", "config", "auth", "certificate", "top", "create"})
#: ``create`` subcommands that name their resource (``create secret generic`` is secrets).
CREATE_SUBCOMMANDS = {
    "deployment": "deployments",
    "namespace": "namespaces",
    "configmap": "configmaps",
    "secret": "secrets",
    "service": "services",
    "job": "jobs",
    "cronjob": "cronjobs",
    "serviceaccount": "serviceaccounts",
    "role": "roles",
    "rolebinding": "rolebindings",
    "clusterrole": "clusterroles",
    "clusterrolebinding": "clusterrolebindings",
    "quota": "resourcequotas",
    "priorityclass": "priorityclasses",
    "ingress": "ingresses",
    "poddisruptionbudget": "poddisruptionbudgets",
    "token": "serviceaccounts",
}
POD_VERBS = frozenset({"logs", "exec", "port-forward", "attach", "cp", "debug", "run"})
#: kubectl's verbs (``kubectl --help``): a list starting with anything else is not a kubectl command.
VERBS = frozenset(
    [
        "annotate",
        "api-resources",
        "api-versions",
        "apply",
        "attach",
        "auth",
        "autoscale",
        "certificate",
        "cluster-info",
        "config",
        "cordon",
        "cp",
        "create",
        "debug",
        "delete",
        "describe",
        "diff",
        "drain",
        "edit",
        "events",
        "exec",
        "explain",
        "expose",
        "get",
        "kustomize",
        "label",
        "logs",
        "patch",
        "plugin",
        "port-forward",
        "proxy",
        "replace",
        "rollout",
        "run",
        "scale",
        "set",
        "taint",
        "top",
        "uncordon",
        "version",
        "wait",
    ]
)
CUSTOM = "(custom resource)"
"""A resource the double's built-in catalog does not have: a CRD's (the corpus covers them through its own)."""
NO_RESOURCE = frozenset({"version", "api-resources", "api-versions", "cluster-info", "explain", "proxy", "plugin"})
KUBECTL_CALLS = frozenset({"kubectl", "kubectl_json", "_kubectl", "run_kubectl", "kubectl_argv"})


@dataclass(frozen=True, order=True)
class Pair:
    verb: str
    resource: str

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}".strip()


@cache
def _names() -> dict[str, str]:
    """Every name kubectl resolves to a resource (plural, singular, short, ``plural.group``) -> its plural."""
    names: dict[str, str] = {}
    for kind in Registry(33).all():
        canonical = kind.plural  # no two groups of the catalog serve one plural
        singular = kind.singular or kind.kind.lower()
        for name in (kind.plural, singular, kind.kind.lower(), *kind.short_names):
            names.setdefault(name, canonical)
            if kind.group:
                names.setdefault(f"{name}.{kind.group}", canonical)
    return names


def canonical(resource: str) -> str:
    """``deploy``, ``deployment.apps``, ``deployments`` -> ``deployments``; an unknown name (a CRD's): :data:`CUSTOM`;
    ``?`` for one computed where it was called."""
    if resource.startswith("?"):
        return "?"
    kind = resource.split("/", 1)[0].lower()
    return _names().get(kind, CUSTOM)


def pair(args: Sequence[str]) -> Pair | None:
    """The verb and resource of one kubectl argument list (the binary itself not included); None for no verb."""
    words, manifest, raw = _positionals(args)
    if not words or words[0] not in VERBS:
        return None
    verb, rest = words[0], words[1:]
    if verb in TWO_WORD and rest and (verb != "create" or rest[0] in CREATE_SUBCOMMANDS):
        verb, rest = f"{verb} {rest[0]}", rest[1:]
        if verb.startswith("create "):
            return Pair(verb, CREATE_SUBCOMMANDS[verb.split()[1]])
    if raw:
        return Pair(verb, "raw")
    if manifest:
        return Pair(verb, "manifest")
    if verb in NO_RESOURCE or verb.startswith(("config ", "auth ")):
        return Pair(verb, "")
    if verb in POD_VERBS:
        return Pair(verb, canonical(rest[0]) if rest and "/" in rest[0] else "pods")
    return Pair(verb, canonical(rest[0].split(",")[0])) if rest else Pair(verb, "")


def _positionals(args: Sequence[str]) -> tuple[list[str], bool, bool]:
    words: list[str] = []
    manifest = raw = False
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "--":
            break
        if arg.startswith("-"):
            name = arg.split("=", 1)[0]
            follow = name == "-f" and bool(words) and words[0] == "logs"  # logs -f is --follow
            manifest = manifest or (name in ("-f", "--filename", "-k", "--kustomize") and not follow)
            raw = raw or name == "--raw"
            skip = "=" not in arg and name in VALUE_FLAGS and not follow
            continue
        words.append(arg)
    return words, manifest, raw


def invoked(roots: Iterable[str]) -> dict[Pair, list[str]]:
    """Every literal pair invoked under ``roots`` (folders or files) -> the ``file:line`` places."""
    found: dict[Pair, list[str]] = {}
    for path in _python_files(roots):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        for line, args in _calls(tree):
            got = pair(args)
            if got is not None and "?" not in (got.verb + got.resource):
                found.setdefault(got, []).append(f"{path}:{line}")
    return found


def _python_files(roots: Iterable[str]) -> Iterator[str]:
    for root in roots:
        if root.endswith(".py"):
            yield root
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            yield from (os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))


def _calls(tree: ast.AST) -> Iterator[tuple[int, list[str]]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node.func) in KUBECTL_CALLS:
            yield node.lineno, _literals(node.args)
        elif isinstance(node, (ast.List, ast.Tuple)) and node.elts and _is_kubectl(node.elts[0]):
            yield node.lineno, _literals(node.elts[1:])


def _callee(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _is_kubectl(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return os.path.basename(node.value).startswith("kubectl") and " " not in node.value
    name = _callee(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""
    return name in ("kubectl", "kubectl_path", "KUBECTL", "binary") or name.endswith("kubectl")


def _typed_prefix(node: ast.JoinedStr) -> str:
    first = node.values[0] if node.values else None
    text = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
    return text if text.endswith("/") and not text.startswith("-") else ""


def _literals(nodes: Sequence[ast.expr]) -> list[str]:
    """The string literals, ``?`` where an argument is computed (a ``*args`` or a keyword is no argument)."""
    out: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr) and _typed_prefix(node):
            out.append(_typed_prefix(node) + "?")  # f"deployment/{name}": the type is literal
        elif not isinstance(node, ast.Constant):
            out.append("?")
    return out


__all__ = ["CUSTOM", "Pair", "canonical", "invoked", "pair"]
