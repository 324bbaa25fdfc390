"""How the double serves OpenAPI v3 for caching, as kube-openapi's ``pkg/handler3/handler.go`` does: every document
carries its hash as a quoted ``Etag`` and answers ``304`` to a matching ``If-None-Match``; a group-version document
fetched by its ``?hash=`` is ``Cache-Control: public, immutable`` with ``Expires`` a year ahead; a stale hash is a
``301`` to the current address. So the real kubectl, with a cache dir, fetches each document once: ``kubectl apply``
then only revalidates the root."""

from __future__ import annotations

import email.utils

import httpx

from fakes.kube import KubeHandle

TIMEOUT = 10.0


def _configmap(name: str) -> str:
    return f'{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "{name}"}}}}'


def test_a_document_fetched_by_its_hash_is_immutable_and_a_stale_hash_is_moved(kd: KubeHandle) -> None:
    with httpx.Client(base_url=kd.url, timeout=TIMEOUT) as http:
        address = http.get("/openapi/v3").json()["paths"]["api/v1"]["serverRelativeURL"]
        path, _, digest = address.partition("?hash=")
        assert path == "/openapi/v3/api/v1"
        hashed = http.get(address)
        assert hashed.status_code == 200
        assert hashed.headers["Etag"] == f'"{digest}"'
        assert hashed.headers["Cache-Control"] == "public, immutable"
        assert hashed.headers["Vary"] == "Accept"
        expires = email.utils.parsedate_to_datetime(hashed.headers["Expires"])
        served = email.utils.parsedate_to_datetime(hashed.headers["Date"])
        assert 364 <= (expires - served).days <= 366
        plain = http.get(path)  # without a hash: the same document, revalidated, not cached for good
        assert plain.json() == hashed.json()
        assert plain.headers["Etag"] == f'"{digest}"'
        assert plain.headers["Cache-Control"] == "no-cache, private"
        stale = http.get(f"{path}?hash=0BAD")
        assert stale.status_code == 301
        assert stale.headers["Location"] == address


def test_the_root_document_is_revalidated_with_its_etag(kd: KubeHandle) -> None:
    with httpx.Client(base_url=kd.url, timeout=TIMEOUT) as http:
        first = http.get("/openapi/v3")
        etag = first.headers["Etag"]
        assert etag[0] == etag[-1] == '"'
        again = http.get("/openapi/v3", headers={"If-None-Match": etag})
        assert (again.status_code, again.content) == (304, b"")
        assert again.headers["Etag"] == etag
        assert http.get("/openapi/v3", headers={"If-None-Match": '"other"'}).status_code == 200


def test_kubectl_apply_fetches_a_group_version_document_once_per_cache_dir(kd: KubeHandle, ns: str) -> None:
    before = len(kd.requests(path_prefix="/openapi/v3/api/v1"))
    for name in ("first", "second", "third"):
        done = kd.kubectl("apply", "-f", "-", input=_configmap(name), namespace=ns)
        assert done.returncode == 0, done.stderr
    fetched = kd.requests(path_prefix="/openapi/v3/api/v1")[before:]
    assert len(fetched) <= 1, [e.path for e in fetched]  # none when an earlier spec of this module filled the cache
    assert kd.kubectl("get", "configmap", "third", "-o", "name", namespace=ns).stdout.strip() == "configmap/third"
