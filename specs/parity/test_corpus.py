"""Cluster-free: the corpus covers every kubectl verb and resource the harness and the specs invoke, the two
differences files are well formed and name cases that exist, and the comparison's own parts behave (normalisation,
differences, judging). The comparison itself runs on the real control plane (:mod:`specs.parity.test_parity`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from specs.parity import check, compare, corpus, kubectl_pairs, normalise, runner

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [str(ROOT / p) for p in ("harness", "specs", "fakes/stack", "conftest.py")]


def corpus_pairs(cases: list[corpus.Case]) -> set[kubectl_pairs.Pair]:
    pairs = set()
    for case in cases:
        for step in case.steps:
            if step.kind == "kubectl":
                found = kubectl_pairs.pair([str(a) for a in step.spec["args"]])
                assert found is not None, f"{case.id} {step.name}: {step.spec['args']} names no kubectl verb"
                pairs.add(found)
    return pairs


def test_every_kubectl_verb_and_resource_the_code_invokes_is_in_the_corpus() -> None:
    invoked = kubectl_pairs.invoked(SOURCES)
    assert len(invoked) > 30, "the scan found almost no kubectl calls: it no longer reads the code"
    covered = corpus_pairs(corpus.load())
    missing = {str(p): places[:3] for p, places in invoked.items() if p not in covered}
    assert not missing, f"kubectl verb and resource pairs no corpus case sends (add a kubectl case): {missing}"


def test_the_kubectl_reader_sees_verbs_resources_and_files_as_kubectl_does() -> None:
    pair = kubectl_pairs.pair
    assert pair(["-n", "x", "get", "deploy", "web", "-o", "json"]) == kubectl_pairs.Pair("get", "deployments")
    assert pair(["rollout", "status", "deployment/web"]) == kubectl_pairs.Pair("rollout status", "deployments")
    assert pair(["create", "secret", "generic", "s"]) == kubectl_pairs.Pair("create secret", "secrets")
    assert pair(["apply", "-f", "-"]) == kubectl_pairs.Pair("apply", "manifest")
    assert pair(["logs", "-f", "web"]) == kubectl_pairs.Pair("logs", "pods")  # logs -f is --follow, not a file
    assert pair(["get", "--raw", "/healthz"]) == kubectl_pairs.Pair("get", "raw")
    assert pair(["scale", "rs/solo", "--replicas=1"]) == kubectl_pairs.Pair("scale", "replicasets")
    assert pair(["get", "gizmos.example.com"]) == kubectl_pairs.Pair("get", kubectl_pairs.CUSTOM)
    assert pair(["Apply"]) is None


def test_a_call_with_a_computed_resource_is_not_counted(tmp_path: Path) -> None:
    source = tmp_path / "calls.py"
    source.write_text(
        textwrap.dedent(
            """
            kube.kubectl("get", kind, "-o", "json")
            kube.kubectl("-n", ns, "delete", "pod", name)
            run([kubectl, "rollout", "restart", f"deployment/{name}"])
            """
        )
    )
    found = kubectl_pairs.invoked([str(source)])
    assert set(map(str, found)) == {"delete pods", "rollout restart deployments"}


def test_the_corpus_loads_and_every_case_has_a_namespace_of_its_own() -> None:
    cases = corpus.load()
    assert len(cases) > 50
    assert len({c.namespace for c in cases}) == len(cases)
    assert all(len(c.namespace) <= 63 for c in cases)
    assert {c.minor for c in cases if c.group == "kubectl"} == set(corpus.KUBECTL_MINORS)


def test_a_malformed_case_names_its_file_and_case(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("- name: broken\n  steps:\n    - request: {path: /api/v1/pods}\n")
    with pytest.raises(corpus.CorpusError, match=r"bad.yaml: case broken step 0: a request needs 'method'"):
        corpus.load(str(tmp_path))


def test_every_entry_names_a_case_of_the_corpus_and_a_known_class() -> None:
    names = {c.id for c in corpus.load()} | {c.id.split("@")[0] for c in corpus.load()}
    known = compare.load_entries(compare.KNOWN, known=True)
    open_ = compare.load_entries(compare.OPEN, known=False)
    assert {e.kind for e in known} <= set(compare.KNOWN_CLASSES)
    unknown = sorted({e.case for e in known + open_} - names)
    assert not unknown, f"entries name cases the corpus does not have: {unknown}"
    pairs = [(e.case, e.path) for e in known + open_]
    assert len(pairs) == len(set(pairs)), "an entry is listed twice"


def test_a_known_difference_of_the_api_server_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text("- {case: crud/x, path: s0.body.message, class: validation, reason: texts differ}\n")
    with pytest.raises(compare.EntriesError, match="belongs in open-differences.yaml"):
        compare.load_entries(str(path), known=True)
    path.write_text('- {case: crud/x, path: "s0.body.items[0].name", class: kubelet, reason: r}\n')
    with pytest.raises(compare.EntriesError, match=r"list indices are \[\*\]"):
        compare.load_entries(str(path), known=True)


def test_a_missing_subtree_is_one_difference_and_indices_become_wildcards() -> None:
    real = {"get": {"status": 200, "body": {"spec": {"a": 1, "b": [1, 2]}, "extra": {"x": {"y": 1}}}}}
    double = {"get": {"status": 200, "body": {"spec": {"a": 2, "b": [1]}}}}
    found = compare.differences("g/c", "g", real, double)
    assert [(d.path, d.real, d.double) for d in found] == [
        ("get.body.spec.a", 1, 2),
        ("get.body.spec.b[1]", 2, compare.ABSENT),
        ("get.body.extra", {"x": {"y": 1}}, compare.ABSENT),
    ]
    assert found[1].pattern == "get.body.spec.b[*]"


def test_an_unexplained_difference_and_a_stale_entry_both_fail() -> None:
    found = compare.differences("g/c@1.33", "g", {"s": 1}, {"s": 2})
    explains = compare.Entry("g/c", "s", "known", "open-differences.yaml")
    stale = compare.Entry("g/c", "t", "gone", "open-differences.yaml")
    sometimes = compare.Entry("g/c", "u", "racy", "open-differences.yaml", sometimes=True)
    verdict = compare.judge(found, [explains, stale, sometimes], {"g/c@1.33"})
    assert verdict.unexplained == []
    assert verdict.stale == [stale]
    assert not verdict.ok
    assert not compare.judge(found, [], {"g/c@1.33"}).ok
    assert compare.judge(found, [explains, sometimes], {"g/c@1.33"}).ok
    report = compare.report(compare.judge(found, [], {"g/c@1.33"}), 1)
    assert "g/c@1.33  s" in report
    assert "real:   1" in report
    assert "double: 2" in report


def test_an_out_of_skew_difference_is_reported_not_judged() -> None:
    found = compare.differences("g/c@1.27", "g", {"s": 1}, {"s": 2}, out_of_skew=True)
    verdict = compare.judge(found, [], {"g/c@1.27"})
    assert verdict.ok
    assert "outside the supported skew" in compare.report(verdict, 1)


def test_normalisation_equalises_only_what_the_api_leaves_open() -> None:
    def side(uid: str, rv: str, stamp: str, suffix: str, ip: str, node: str) -> dict:
        pod = {
            "kind": "Pod",
            "metadata": {"name": f"web-{suffix}", "generateName": "web-", "uid": uid, "resourceVersion": rv},
            "spec": {"nodeName": node},
            "status": {"podIP": ip, "startTime": stamp},
        }
        return {"get": {"body": {"items": [{"metadata": {"name": "b"}}, pod]}}}

    real = normalise.normalise(
        side("u1", "10", "2026-12-02T10:00:00Z", "abcde", "127.1.0.4", "kwok-node-0"), ["kwok-node-0"]
    )
    double = normalise.normalise(
        side("u2", "77", "2026-12-02T11:30:00Z", "zzzzz", "10.244.0.9", "fake-node"), ["fake-node"]
    )
    assert real == double
    assert real["get"]["body"]["items"][0]["metadata"]["name"] == "b"  # items ordered by namespace and name
    changed = normalise.normalise({"get": {"body": {"data": {"a": "1"}}}})
    assert changed != normalise.normalise({"get": {"body": {"data": {"a": "2"}}}})


def test_template_hashes_and_kubectl_ages_are_equalised() -> None:
    def side(template_hash: str, age: str) -> dict:
        rs = {"metadata": {"name": f"web-{template_hash}", "labels": {"pod-template-hash": template_hash}}}
        return {"rs": {"body": rs}, "table": {"stdout": [f"web-{template_hash}   1/1     Running   {age}"]}}

    assert normalise.normalise(side("796b4c5575", "5s")) == normalise.normalise(side("78774dbbb7", "2m3s"))


def test_a_real_release_the_double_does_not_serve_stops_the_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"gitVersion": "v1.40.2"}
    monkeypatch.setattr(runner, "request", lambda *_a, **_k: {"status": 200, "body": answers})
    side = runner.Side("real", "unused", "unused", "unused")
    with pytest.raises(LookupError, match=r"v1\.40\.2, a minor the double does not serve \(it serves 1\.27 to 1\.33\)"):
        check.real_version(side)
    answers["gitVersion"] = "v1.33.13"
    assert check.real_version(side) == "v1.33.13"
