"""The double merges its cluster, user and context into an existing kubeconfig without touching anything else.

Before, ``python -m fakes.kube --kubeconfig ~/.kube/config`` rewrote the whole file through a YAML dump (comments
gone, keys reordered, quoting changed) and changed its mode from 0644 to 0600. Now the only bytes that change are the
double's three entries, inserted as list items; the mode stays; at stop the file is given back byte for byte. A file
the double cannot merge into that way is refused with a message that says so, and is left as it was.
"""

from __future__ import annotations

import difflib
import os
import re
import select
import shlex
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import fakes.kube
from fakes.kube.kubeconfig import KubeconfigNotMergeable
from harness import process
from specs.kube.conftest import require_kubectl

ROOT = Path(__file__).resolve().parents[2]

KUBECTL_STYLE = """\
# written by minikube; keep this comment
apiVersion: v1
clusters:
- cluster:
    certificate-authority: /home/dev/.minikube/ca.crt
    server: https://192.168.49.2:8443
  name: minikube
contexts:
- context:
    cluster: minikube
    namespace: "default"
    user: minikube
  name: minikube
current-context: minikube
kind: Config
preferences: {}
users:
- name: minikube
  user:
    client-certificate: /home/dev/.minikube/profiles/minikube/client.crt
    client-key: /home/dev/.minikube/profiles/minikube/client.key
"""

INDENTED_WITHOUT_USERS = """\
apiVersion: v1
kind: Config
current-context: ''   # none chosen yet

clusters:
    -   name: kind-dev
        cluster:
            server: 'https://127.0.0.1:39211'

contexts:
    -   name: kind-dev
        context: {cluster: kind-dev, user: kind-dev}
# trailing comment, no final newline"""

EMPTY_LISTS = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: null\nusers:\npreferences: {}\n"

LAYOUTS = {"kubectl": KUBECTL_STYLE, "indented": INDENTED_WITHOUT_USERS, "empty-lists": EMPTY_LISTS}


def _inserted_only(before: str, after: str) -> list[str]:
    """The lines ``after`` adds to ``before``; fails if any line of ``before`` changed or went missing."""
    if not before.endswith("\n"):
        before += "\n"  # the one byte a merge may add: a line break after a last line that had none
    # An empty list's header ("clusters: []", "contexts: null") now holds the double's entry: its value is theirs.
    before = re.sub(r"^(clusters|users|contexts): *(\[\]|null|~)$", r"\1:", before, flags=re.MULTILINE)
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        assert tag in ("equal", "insert"), f"{tag} of the user's lines {old[i1:i2]!r} -> {new[j1:j2]!r}"
        added.extend(new[j1:j2] if tag == "insert" else [])
    return added


def _entries_named(config: dict, name: str) -> dict[str, list]:
    return {s: [e for e in config.get(s) or [] if e.get("name") == name] for s in ("clusters", "users", "contexts")}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_merging_changes_only_the_doubles_entries_and_stop_gives_the_file_back(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "config"
    original = LAYOUTS[layout]
    path.write_text(original)
    path.chmod(0o644)
    with fakes.kube.serve(kubeconfig=path, context="double", namespace="team", controllers=False):
        merged_text = path.read_text()
        added = _inserted_only(original, merged_text)
        assert all(line.strip() for line in added)  # no blank lines, no stray bytes: entries (and list headers) only
        merged = yaml.safe_load(merged_text)
        before = yaml.safe_load(original)
        for section in ("clusters", "users", "contexts"):
            kept = [e for e in merged[section] if e["name"] != "double"]
            assert kept == (before.get(section) or [])
        ours = _entries_named(merged, "double")
        assert [len(v) for v in ours.values()] == [1, 1, 1]
        assert ours["contexts"][0]["context"]["namespace"] == "team"
        assert merged.get("current-context") == before.get("current-context")
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.read_text() == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_the_command_line_merges_into_a_kubectl_written_file_that_kubectl_then_reads(tmp_path: Path) -> None:
    kubectl = require_kubectl()
    path = tmp_path / "config"
    path.write_text(KUBECTL_STYLE)
    path.chmod(0o644)
    proc = process.spawn([sys.executable, "-m", "fakes.kube", "--kubeconfig", str(path), "--context", "cli"])
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().decode()
        assert first.startswith("fake kube listening on http://127.0.0.1:"), first
        _inserted_only(KUBECTL_STYLE, path.read_text())
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        done = process.run_bounded(
            [kubectl, "--kubeconfig", str(path), "--context", "cli", "--cache-dir", str(tmp_path / "cache")]
            + ["get", "namespaces", "-o", "name"],
            timeout=30.0,
        )
        assert "namespace/default" in done.stdout, done.stderr
        proc.terminate()
        assert proc.wait(timeout=15.0) == 0
    finally:
        process.kill_group(proc)
    assert path.read_text() == KUBECTL_STYLE
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '{"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}\n',
            "cannot add its entries to without rewriting the file",
        ),
        (KUBECTL_STYLE.replace("minikube", "double"), r"already has entries named 'double' \(cluster, user, context"),
    ],
    ids=["json", "same-name"],
)
def test_a_file_it_cannot_merge_into_is_refused_and_left_alone(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    path.chmod(0o640)
    with (
        pytest.raises(KubeconfigNotMergeable, match=said) as caught,
        fakes.kube.serve(kubeconfig=path, context="double", controllers=False),
    ):
        pass
    assert "\n" not in str(caught.value)
    assert path.read_text() == text
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_the_cleanup_a_refusal_suggests_removes_all_an_earlier_double_left(tmp_path: Path) -> None:
    # An earlier double killed hard left its cluster, user and context in the file: one suggested command removes
    # every one of them, and the next double starts.
    if shutil.which("kubectl") is None:
        pytest.skip("no kubectl on PATH: this spec runs the suggested cleanup with the real binary")
    path = tmp_path / "config"
    path.write_text(KUBECTL_STYLE.replace("minikube", "double"))
    with (
        pytest.raises(KubeconfigNotMergeable) as caught,
        fakes.kube.serve(kubeconfig=path, context="double", controllers=False),
    ):
        pass
    cleanup = str(caught.value).rsplit("remove them first (", 1)[1].rstrip(")")
    for command in cleanup.split(" && "):
        done = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=30, env={**os.environ})
        assert done.returncode == 0, done.stderr
    with fakes.kube.serve(kubeconfig=path, context="double", controllers=False):
        pass


def test_a_hard_killed_double_leaves_no_folder_in_the_temp_directory(tmp_path: Path) -> None:
    script = (
        "import os, sys, fakes.kube\n"
        "with fakes.kube.serve(controllers=False) as kd:\n"
        "    print(os.path.dirname(kd.cache_dir), flush=True)\n"
        "    sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], 60)  # bounded: a child that never prints fails here
        assert ready, "the child never printed its double's folder"
        folder = Path(child.stdout.readline().strip())
        assert folder.is_dir()
        assert folder.name.startswith("fake-kube-")
        child.kill()
        child.wait(timeout=30)
        deadline = time.monotonic() + 30
        while folder.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # the watchdog removes it once the process is gone; bounded
        assert not folder.exists()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)


def test_a_symlinked_kubeconfig_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "kubeconfig"
    real.parent.mkdir()
    real.write_text(KUBECTL_STYLE)
    link = tmp_path / "config"
    link.symlink_to(real)
    with fakes.kube.serve(kubeconfig=link, context="double", controllers=False):
        assert link.is_symlink()
        assert "name: double" in real.read_text()
    assert link.is_symlink()
    assert real.read_text() == KUBECTL_STYLE


def test_a_file_changed_while_serving_loses_only_the_doubles_entries(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECTL_STYLE)
    with fakes.kube.serve(kubeconfig=path, context="double", controllers=False):
        path.write_text(path.read_text().replace("current-context: minikube", "current-context: other"))
    assert path.read_text() == KUBECTL_STYLE.replace("current-context: minikube", "current-context: other")


def test_a_new_file_is_created_0600_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "new"
    with fakes.kube.serve(kubeconfig=path, controllers=False):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert not path.exists()
