"""The install's requirement lists are what the code imports: the base is the harness's, each extra its fake's.

Read from the source (``specs.install.imports``: run-time imports, ``TYPE_CHECKING`` blocks left out) and from
``pyproject.toml``; ``make install-check`` then installs each list into a fresh virtual environment and runs the fakes
there. A fake used without its extra fails at its import naming the extra (``fakes.extras``), checked here with the
extra's module hidden from the import system.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from fakes import extras
from specs.install import imports as im

DESIGN_CARD = {"pytest", "pytest-timeout", "anyio", "httpx", "kubernetes", "tenacity", "pytest-xdist"}
"""The packages the design card puts in every install, imported by harness/ or not (pytest-timeout is a plugin)."""
CHILD_TIMEOUT = 60.0
"""Seconds for one child interpreter that imports a fake (a second or two when idle)."""

PROJECT: dict[str, Any] = im.pyproject()["project"]
GROUPS: dict[str, list[Any]] = im.pyproject()["dependency-groups"]
BASE = im.requirement_names(PROJECT["dependencies"])
OPTIONAL: dict[str, list[str]] = PROJECT["optional-dependencies"]


def needs(*packages: str, stop: tuple[str, ...] = ("fakes.stack",)) -> set[str]:
    start = [module for package in packages for module in im.modules_under(package)]
    return im.distributions(im.closure(start, stop=stop)[1])


def group(name: str) -> set[str]:
    lines: list[str] = []
    for entry in GROUPS[name]:
        if isinstance(entry, dict):
            lines.extend(sorted(group(entry["include-group"])))
        else:
            lines.append(entry)
    return im.requirement_names(lines)


def test_the_base_install_is_the_design_cards_packages_and_what_the_harness_imports() -> None:
    imported = needs("harness")
    assert DESIGN_CARD | imported == BASE, (
        f"missing from [project] dependencies: {sorted(DESIGN_CARD | imported - BASE)}; "
        f"listed but neither the design card's nor imported by harness/: {sorted(BASE - DESIGN_CARD - imported)}"
    )


@pytest.mark.parametrize("package", sorted(extras.EXTRAS))
def test_each_fakes_extra_holds_exactly_what_it_imports_beyond_the_base(package: str) -> None:
    extra = extras.EXTRAS[package]
    wanted = needs(package) - BASE
    listed = im.requirement_names(OPTIONAL[extra])
    assert listed == wanted, (
        f"[{extra}] lacks {sorted(wanted - listed)} that {package} imports; lists {sorted(listed - wanted)} it does not"
    )


def test_the_fakes_extra_is_every_fake_and_every_fake_has_one() -> None:
    packages = {f"fakes.{p.parent.name}" for p in (im.ROOT / "fakes").glob("*/__init__.py")} - {"fakes.stack"}
    assert set(extras.EXTRAS) == packages
    assert set(OPTIONAL) == {*extras.EXTRAS.values(), "fakes"}
    (everything,) = OPTIONAL["fakes"]
    bracket = re.fullmatch(r"stack-harness\[([^\]]+)\]", everything)
    assert bracket, everything
    assert set(bracket[1].split(",")) == set(extras.EXTRAS.values())


def test_this_repositorys_stack_layer_and_specs_need_nothing_the_dev_install_lacks() -> None:
    fakes_extras = {name for extra in extras.EXTRAS.values() for name in im.requirement_names(OPTIONAL[extra])}
    installed = BASE | fakes_extras | group("dev")
    stack = needs("fakes.stack", "specs.agent_controller", stop=())
    assert stack - BASE - fakes_extras <= group("stack")
    assert needs("specs", stop=()) <= installed


def test_every_module_a_pyproject_comment_names_exists() -> None:
    comments = [line.partition("#")[2] for line in (im.ROOT / "pyproject.toml").read_text().splitlines() if "#" in line]
    named = {m for text in comments for m in re.findall(r"(?<![-\w.])(?:harness|fakes|specs)(?:\.\w+)+", text)}
    assert named, "no module named in pyproject.toml's comments: this check reads nothing"
    assert sorted(m for m in named if im.module_file(m) is None) == []


BLOCKER = """
import importlib.abc, json, sys
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Missing())
try:
    import {package}
except ImportError as error:
    print(json.dumps({{"type": type(error).__name__, "name": error.name, "message": str(error)}}))
else:
    print(json.dumps({{"type": None}}))
"""

HIDDEN = {"fakes.kube": "aiohttp", "fakes.github": "jwt", "fakes.qdrant": "qdrant_edge", "fakes.openai": "openai"}
"""A module of each fake's extra that is not also part of the base install."""


@pytest.mark.parametrize("package", sorted(extras.EXTRAS))
def test_a_fake_without_its_extra_fails_at_import_with_the_install_line(package: str) -> None:
    code = BLOCKER.format(hidden=HIDDEN[package], package=package)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    extra = extras.EXTRAS[package]
    assert outcome["type"] == "MissingExtraError", outcome
    assert outcome["name"].partition(".")[0] == HIDDEN[package]
    # this checkout is installed editable (`make venv`): the line installs the extra from it
    assert outcome["message"].endswith(f"add it with: pip install -e '{im.ROOT}[{extra}]'"), outcome["message"]
    assert f"{package} needs the '{extra}' extra" in outcome["message"]


def test_a_missing_standard_or_first_party_module_is_not_blamed_on_an_extra() -> None:
    for name in ("fakes.nonexistent", "xml.nonexistent"):
        with pytest.raises(ModuleNotFoundError) as caught, extras.requires_extra("fakes.qdrant"):
            __import__(name)
        assert type(caught.value) is ModuleNotFoundError


class Recorded:
    def __init__(self, direct_url: dict[str, Any] | None) -> None:
        self.text = None if direct_url is None else json.dumps(direct_url)

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return self.text


@pytest.mark.parametrize(
    "direct_url, line",
    [
        ({"url": "file:///src/stack%20harness", "dir_info": {}}, "pip install '/src/stack harness[fake-qdrant]'"),
        ({"url": "file:///src/h", "dir_info": {"editable": True}}, "pip install -e '/src/h[fake-qdrant]'"),
        (
            {"url": "https://git.example/org/h.git", "vcs_info": {"vcs": "git", "commit_id": "ab12"}},
            "pip install 'stack-harness[fake-qdrant] @ git+https://git.example/org/h.git@ab12'",
        ),
        (
            {"url": "file:///w/stack_harness-0.1.0-py3-none-any.whl", "archive_info": {}},
            "pip install '/w/stack_harness-0.1.0-py3-none-any.whl[fake-qdrant]'",
        ),
        (None, "pip install 'stack-harness[fake-qdrant]'"),
    ],
    ids=["path", "editable", "git", "wheel", "index"],
)
def test_the_install_line_follows_how_the_harness_was_installed(monkeypatch, direct_url, line) -> None:
    monkeypatch.setattr("fakes.extras.metadata.distributions", lambda name: [Recorded(None), Recorded(direct_url)])
    assert extras.install_line("fake-qdrant") == line


def test_root_is_this_checkout() -> None:
    assert Path(extras.__file__).resolve().parent.parent == im.ROOT


def _table_rows(text: str) -> dict[str, set[str]]:
    """The extras table's rows: extra (or ``(none)``) to the libraries it names."""
    rows = {}
    table = text[text.index("| extra | adds | its libraries |") :].split("\n\n")[0]
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and (cells[0] == "(none)" or re.fullmatch(r"`[\w-]+`", cells[0])):
            rows[cells[0].strip("`")] = {im.normal(name) for name in re.split(r",\s*", cells[2]) if name}
    return rows


def test_the_adoption_docs_list_each_extra_with_its_libraries() -> None:
    rows = _table_rows((im.ROOT / "docs" / "your-stack.md").read_text())
    assert rows.pop("(none)") == BASE
    assert rows.pop("fakes") == set()  # "all four"
    assert rows == {extra: im.requirement_names(lines) for extra, lines in OPTIONAL.items() if extra != "fakes"}


@pytest.mark.parametrize("page", ["README.md", "docs/your-stack.md"])
def test_the_install_lines_show_a_path_a_path_with_an_extra_and_a_git_url(page: str) -> None:
    lines = [line for line in (im.ROOT / page).read_text().splitlines() if line.startswith("pip install ")]
    words = [line.split("#")[0].split()[2:] for line in lines]
    assert ["/path/to/stack-harness"] in words
    extras_named = {m[1] for line in lines for m in re.finditer(r"stack-harness\[([\w-]+)\]", line)}
    assert extras_named
    assert extras_named <= set(OPTIONAL)
    assert any("@ git+https://" in line for line in lines)


def test_an_extra_counts_as_installed_only_with_every_distribution_it_requires(monkeypatch) -> None:
    assert all(extras.installed(extra) for extra in OPTIONAL)  # `make venv` installs [fakes]
    real = metadata.distribution

    def without_aiohttp(name: str) -> Any:
        if im.normal(name) == "aiohttp":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr("fakes.extras.metadata.distribution", without_aiohttp)
    assert not extras.installed("kube-double")
    assert not extras.installed("fakes")  # made of extras, one of them incomplete
    assert extras.installed("fake-qdrant")
    with pytest.raises(ValueError, match="has no extra 'fake-redis'; its extras: fake-github, fake-openai"):
        extras.installed("fake-redis")
