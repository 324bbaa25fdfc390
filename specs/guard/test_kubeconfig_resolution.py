"""kubeconfig lists and files are read as the real kubectl reads them (client-go ``tools/clientcmd/loader.go``).

Each spec builds the files, then asks every real kubectl build installed (1.27 to 1.33, beside the ``kubectl`` on
PATH) with ``config current-context``, ``config get-contexts``, ``config view --raw`` or ``--flatten``, and compares
with what the harness reads (:mod:`harness.kubeconfig`): several paths, empty entries, missing, empty and
comments-only files, repeats, the first file's entry winning whole, ``current-context`` from the first file that sets
one, relative paths against the defining file's directory, ``~`` left alone, a list of separators naming no file,
and the files kubectl refuses. Where the Python ``kubernetes`` client reads differently (an empty file, the last
``current-context``, a relative exec command), the harness follows kubectl; the last spec shows the client built
from such a list reaching the API server (the stand-in of :mod:`harness.testing.apiserver`) with the plugin kubectl
runs.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness import Kube, KubeconfigInvalid
from harness.config import HarnessConfig
from harness.kube import kubeconfig_contexts, kubectl_environment, resolve_kubeconfig
from harness.kubeconfig import load_kubeconfig
from harness.process import run_bounded
from harness.testing.apiserver import StubApiServer
from harness.testing.kubectl_builds import MINORS, real_kubectl

MINIKUBE_ONLY = HarnessConfig(("minikube",), "controller-agent")


@pytest.fixture(params=MINORS, ids=lambda minor: f"kubectl-1.{minor}")
def kubectl(request: pytest.FixtureRequest) -> str:
    path = real_kubectl(request.param)
    if path is None:
        pytest.skip(f"no kubectl.1.{request.param} beside the kubectl on PATH")
    return path


def _write(path: Path, config: dict[str, object] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return path


def _config(current: str = "", **sections: list[tuple[str, dict[str, object]]]) -> dict[str, object]:
    inner = {"clusters": "cluster", "users": "user", "contexts": "context"}
    out: dict[str, object] = {"apiVersion": "v1", "kind": "Config", "current-context": current}
    for section, entries in sections.items():
        out[section] = [{"name": name, inner[section]: value} for name, value in entries]
    return out


class Kubectl:
    """The real kubectl run with a ``KUBECONFIG`` and ``HOME`` of the spec's choosing, from ``cwd``."""

    def __init__(self, path: str, kubeconfig: str, home: Path, cwd: Path) -> None:
        self.path, self.cwd = path, cwd
        self.env = {**kubectl_environment(), "KUBECONFIG": kubeconfig, "HOME": str(home)}

    def __call__(self, *args: str) -> tuple[int, str, str]:
        done = run_bounded([self.path, *args], timeout=30.0, env=self.env, cwd=str(self.cwd))
        return done.returncode, done.stdout, done.stderr

    def view(self, *flags: str) -> dict[str, object]:
        code, out, err = self("config", "view", "--raw", "-o", "json", *flags)
        assert code == 0, err
        parsed: dict[str, object] = json.loads(out)
        return parsed


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory away from the files (a path resolved against it, not the file's, is found wrong)."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def _both(kubectl: str, place: Path, monkeypatch: pytest.MonkeyPatch, kubeconfig: str) -> Kubectl:
    monkeypatch.setenv("KUBECONFIG", kubeconfig)
    return Kubectl(kubectl, kubeconfig, place / "home", place / "elsewhere")


SERVER_A, SERVER_B = "https://127.0.0.1:1111", "https://127.0.0.1:2222"


def test_a_list_with_empty_entries_missing_empty_and_repeated_files_reads_as_kubectl_reads_it(
    kubectl: str, place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _write(
        place / "a" / "first",
        _config(
            "",  # sets no current context: the next file that does gives it
            clusters=[("c1", {"server": SERVER_A})],
            contexts=[("kind-one", {"cluster": "c1", "namespace": "one"})],
        ),
    )
    empty = _write(place / "b" / "empty", "")
    comments = _write(place / "b" / "comments", "# nothing here yet\n")
    second = _write(
        place / "b" / "second",
        _config(
            "kind-two",
            clusters=[("c1", {"server": SERVER_B}), ("c2", {"server": SERVER_B})],
            contexts=[("kind-two", {"cluster": "c2"}), ("kind-one", {"cluster": "c2", "namespace": "other"})],
        ),
    )
    third = _write(place / "c" / "third", _config("kind-three", contexts=[("kind-three", {"cluster": "c1"})]))
    listed = os.pathsep.join(["", str(first), "", str(place / "missing"), str(empty), str(comments)])
    listed += os.pathsep + os.pathsep.join([str(second), str(first), str(third), str(second)])
    run = _both(kubectl, place, monkeypatch, listed)
    code, current, err = run("config", "current-context")
    assert code == 0, err
    code, names, err = run("config", "get-contexts", "-o", "name")
    assert code == 0, err
    view = run.view()

    harness_current, harness_names = kubeconfig_contexts(resolve_kubeconfig())
    assert harness_current == current.strip() == "kind-two"  # the first file that sets one
    assert sorted(harness_names) == sorted(names.split()) == ["kind-one", "kind-three", "kind-two"]
    merged = load_kubeconfig(resolve_kubeconfig())
    contexts: list[dict[str, Any]] = view["contexts"]  # type: ignore[assignment]
    clusters: list[dict[str, Any]] = view["clusters"]  # type: ignore[assignment]
    kubectl_said = {c["name"]: (c["context"]["cluster"], c["context"].get("namespace")) for c in contexts}
    harness_read = {name: (e.value["cluster"], e.value.get("namespace")) for name, e in merged.contexts.items()}
    assert (
        kubectl_said
        == harness_read
        == {"kind-one": ("c1", "one"), "kind-two": ("c2", None), "kind-three": ("c1", None)}
    )
    kubectl_servers = {c["name"]: c["cluster"]["server"] for c in clusters}
    harness_servers = {name: e.value["server"] for name, e in merged.clusters.items()}
    assert kubectl_servers == harness_servers == {"c1": SERVER_A, "c2": SERVER_B}


def test_the_first_file_defining_a_name_wins_with_its_whole_entry(
    kubectl: str, place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _write(place / "first", _config(clusters=[("c", {"server": SERVER_A})]))
    second = _write(
        place / "second",
        _config(clusters=[("c", {"server": SERVER_B, "tls-server-name": "b.example", "proxy-url": "http://p:1"})]),
    )
    run = _both(kubectl, place, monkeypatch, f"{first}{os.pathsep}{second}")
    view = run.view()
    assert view["clusters"] == [{"name": "c", "cluster": {"server": SERVER_A}}]  # no field of the second fills in
    assert load_kubeconfig(resolve_kubeconfig()).clusters["c"].value == {"server": SERVER_A}


def test_relative_paths_resolve_against_the_directory_of_the_file_that_defines_them(
    kubectl: str, place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder, name in (("one", "ca.pem"), ("two", "cert.pem"), ("two", "key.pem")):
        _write(place / folder / "certs" / name, f"{folder}/{name}\n")
    first = _write(
        place / "one" / "config",
        _config("kind-x", clusters=[("c", {"server": SERVER_A, "certificate-authority": "certs/ca.pem"})]),
    )
    second = _write(
        place / "two" / "config",
        _config(
            users=[("u", {"client-certificate": "certs/cert.pem", "client-key": "./certs/key.pem"})],
            contexts=[("kind-x", {"cluster": "c", "user": "u"})],
        ),
    )
    run = _both(kubectl, place, monkeypatch, f"{first}{os.pathsep}{second}")
    flat = run.view("--flatten", "--minify", "--context", "kind-x")  # kubectl reads each file where it resolved it
    cluster = flat["clusters"][0]["cluster"]  # type: ignore[index]
    user = flat["users"][0]["user"]  # type: ignore[index]
    minified = load_kubeconfig(resolve_kubeconfig()).minified("kind-x")

    def data(path: str) -> str:
        return base64.b64encode(Path(path).read_bytes()).decode()

    assert data(minified["clusters"][0]["cluster"]["certificate-authority"]) == cluster["certificate-authority-data"]
    assert data(minified["users"][0]["user"]["client-certificate"]) == user["client-certificate-data"]
    assert data(minified["users"][0]["user"]["client-key"]) == user["client-key-data"]
    assert minified["users"][0]["user"]["client-key"] == str(place / "two" / "certs" / "key.pem")


def test_a_tilde_in_kubeconfig_is_a_literal_path_and_separators_alone_name_no_file(
    kubectl: str, place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(place / "home" / "k", _config("kind-home", contexts=[("kind-home", {"cluster": "c"})]))
    _write(place / "home" / ".kube" / "config", _config("kind-home", contexts=[("kind-home", {"cluster": "c"})]))
    for listed in ("~/k", os.pathsep, os.pathsep * 2):
        run = _both(kubectl, place, monkeypatch, listed)
        code, names, err = run("config", "get-contexts", "-o", "name")
        assert (code, names) == (0, ""), err  # kubectl neither expands ~ nor falls back to ~/.kube/config
        assert kubeconfig_contexts(resolve_kubeconfig()) == (None, [])
        children = kubectl_environment(resolve_kubeconfig())
        code, names, err = Kubectl(kubectl, children["KUBECONFIG"], place / "home", place / "elsewhere")(
            "config", "get-contexts", "-o", "name"
        )
        assert (code, names) == (0, ""), err  # the harness's own kubectl children see no file either


REFUSED = {
    "duplicate-name": '{"clusters": [{"name": "c", "cluster": {}}, {"name": "c", "cluster": {}}]}',
    "not-yaml": "clusters: [\n",
    "a-list": "[1, 2]\n",
    "a-directory": None,
}


@pytest.mark.parametrize("shape", sorted(REFUSED))
def test_a_file_kubectl_refuses_is_refused_by_name(
    kubectl: str, place: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    good = _write(place / "good", _config("minikube", contexts=[("minikube", {"cluster": "c"})]))
    bad = place / "bad"
    text = REFUSED[shape]
    if text is None:
        bad.mkdir()
    else:
        bad.write_text(text)
    run = _both(kubectl, place, monkeypatch, f"{good}{os.pathsep}{bad}")
    code, _, err = run("config", "get-contexts")
    assert code == 1
    assert f'error loading config file "{bad}"' in err
    with pytest.raises(KubeconfigInvalid) as caught:
        Kube.connect(config=MINIKUBE_ONLY, read_files=True)
    assert str(caught.value).startswith(f'error loading config file "{bad}": ')
    assert kubeconfig_contexts(resolve_kubeconfig()) == ("minikube", ["minikube"])  # messages still list the rest


def test_the_client_reaches_the_server_through_a_list_with_an_empty_file_and_a_relative_plugin(
    kubectl: str, place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = _write(
        place / "conf" / "bin" / "login",
        '#!/bin/sh\necho ran >> "$0.log"\necho \'{"apiVersion": "client.authentication.k8s.io/v1", '
        '"kind": "ExecCredential", "status": {"token": "t"}}\'\n',
    )
    plugin.chmod(0o755)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "controller-agent"}}
    with StubApiServer({"/api/v1/namespaces/controller-agent": namespace}) as server:
        empty = _write(place / "conf" / "empty", "")
        exec_entry = {"apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/login"}
        config = _write(
            place / "conf" / "config",
            _config(
                "minikube",
                clusters=[("c", {"server": server.url})],
                users=[("u", {"exec": {**exec_entry, "interactiveMode": "Never"}})],
                contexts=[("minikube", {"cluster": "c", "user": "u"})],
            ),
        )
        run = _both(kubectl, place, monkeypatch, f"{empty}{os.pathsep}{config}")
        code, out, err = run("get", "--raw", "/version")
        assert code == 0, err  # kubectl accepts the empty file (over plain HTTP it runs no plugin for this request)
        kube = Kube.connect(config=MINIKUBE_ONLY, read_files=True)
        try:
            assert kube.check_api_server(timeout=10.0).namespace == "controller-agent"
        finally:
            kube.close()
    # conf/bin/login, not ./bin/login of the working directory: client-go's GetAuthInfoFileReferences resolves a
    # command holding a separator against the file's directory
    assert Path(f"{plugin}.log").read_text() == "ran\n"
