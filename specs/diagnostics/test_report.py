"""The run's HTML report: one self-contained page whose structure (not its pixels) is checked here."""

from __future__ import annotations

import html.parser
import json
from pathlib import Path
from typing import Any

import pytest

from harness import report
from harness.rollout import explain

from .conftest import snapshot


class Page(html.parser.HTMLParser):
    """Every start tag with its attributes, in order; external references noted."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def find(self, tag: str | None = None, **wanted: str) -> list[dict[str, str]]:
        return [
            a
            for t, a in self.tags
            if (tag is None or t == tag) and all(a.get(k.replace("_", "-")) == v for k, v in wanted.items())
        ]


T0 = 1_795_000_000.0


def spec(nodeid: str, outcome: str, start: float, **extra: Any) -> dict[str, Any]:
    call = "failed" if outcome == "failed" else "passed"
    entry = {
        "nodeid": nodeid,
        "outcome": outcome,
        "start": start,
        "end": start + 4,
        "evidence": None,
        "phases": {
            "setup": [start, start + 0.5, "passed"],
            "call": [start + 0.5, start + 3.5, call],
            "teardown": [start + 3.5, start + 4, "passed"],
        },
        "waits": [],
        "rollouts": [],
        "forwards": [],
    }
    entry.update(extra)
    return entry


def sample(folder: Path) -> list[dict[str, Any]]:
    wait = {
        "what": "an AgentRun to be created",
        "start": T0 + 1,
        "elapsed": 2.5,
        "budget": 3.0,
        "outcome": "timeout",
        "elided": 0,
        "attempts": [
            [0.0, 0.1, "not-yet", None],
            [0.5, 0.2, "failed", "KubectlError: boom"],
            [1.0, 1.0, "hung", None],
            [2.2, 0.1, "ok", None],
        ],
    }
    rollout = {
        "ref": "deployment/web",
        "start": T0 + 1,
        "end": T0 + 3,
        "outcome": "failed",
        "headline": "deployment/web did not roll out: the new pod crash-loops",
        "pods": [
            {
                "name": "web-6d9f-x2x7q",
                "new": True,
                "state": "Running, not ready",
                "points": {"created": T0 + 1, "scheduled": T0 + 1.2, "started": T0 + 1.5},
            },
            {
                "name": "web-5c8d-a1b2c",
                "new": False,
                "state": "Running, ready",
                "points": {
                    "created": T0,
                    "scheduled": T0 + 0.1,
                    "started": T0 + 0.3,
                    "ready": T0 + 0.6,
                    "deleted": T0 + 2.5,
                },
            },
        ],
    }
    forward = {
        "target": "svc/fake-github :80",
        "start": T0 + 0.5,
        "ready": T0 + 0.8,
        "end": T0 + 2.0,
        "how": "kubectl exited rc=1",
        "died": True,
        "stderr": "lost connection to pod",
    }
    return [
        spec("specs/test_a.py::test_passes", "passed", T0 - 5),
        spec(
            "specs/test_a.py::test_fails",
            "failed",
            T0,
            waits=[wait],
            rollouts=[rollout],
            forwards=[forward],
            evidence=str(folder / "specs_test_a.py__test_fails"),
        ),
    ]


def test_each_spec_wait_attempt_pod_and_forward_is_on_the_page(tmp_path: Path) -> None:
    page = Page(report.render(sample(tmp_path), "run-1", tmp_path))
    specs = page.find("details")
    assert [s["data-spec"] for s in specs] == ["specs/test_a.py::test_passes", "specs/test_a.py::test_fails"]
    assert "open" not in specs[0]
    assert "open" in specs[1]  # failed specs are unfolded
    outcomes = [a["data-outcome"] for a in page.find("rect", data_kind="attempt")]
    assert outcomes == ["not-yet", "failed", "hung", "ok"]
    assert len(page.find("rect", data_kind="phase")) == 6
    assert [a["data-outcome"] for a in page.find("rect", data_kind="pod-phase")] == [
        "pending",
        "scheduled",
        "started",
        "pending",
        "scheduled",
        "started",
        "ready",
    ]
    assert len(page.find("rect", data_kind="pod-deleted")) == 1
    assert len(page.find("rect", data_kind="forward-died")) == 1
    assert len(page.find("rect", data_kind="forward-ready")) == 1
    assert page.find("a", **{"class": "evidence"})[0]["href"] == "specs_test_a.py__test_fails/INDEX.txt"


def test_every_row_shares_one_time_axis(tmp_path: Path) -> None:
    page = Page(report.render(sample(tmp_path), "run-1", tmp_path))
    main = page.find("main")[0]
    assert float(main["data-start"]) == pytest.approx(T0 - 5)
    assert float(main["data-end"]) == pytest.approx(T0 + 4)
    first_phase = page.find("rect", data_kind="phase")[0]
    assert float(first_phase["x"]) == pytest.approx(0.0)  # the earliest instant is the left edge
    for rect in page.find("rect"):
        assert 0.0 <= float(rect["x"]) <= 100.0
        assert float(rect["x"]) + float(rect["width"]) <= 100.0 + 0.5


def test_the_page_is_self_contained(tmp_path: Path) -> None:
    text = report.render(sample(tmp_path), "run-1", tmp_path)
    page = Page(text)
    assert page.find("script") == []
    assert page.find("link") == []
    assert [a for t, a in page.tags if "src" in a] == []
    assert all(not a.get("href", "").startswith(("http:", "https:", "//")) for _, a in page.tags)
    assert "<style>" in text


def test_text_from_specs_is_escaped(tmp_path: Path) -> None:
    nasty = spec('specs/t.py::test_x[<script>alert("x")</script>]', "passed", T0)
    text = report.render([nasty], "run-<1>", tmp_path)
    assert "<script>" not in text
    assert "&lt;script&gt;" in text


def test_an_empty_run_still_renders(tmp_path: Path) -> None:
    page = Page(report.render([], "run-1", tmp_path))
    assert page.find("details") == []
    assert page.find("main")


def test_a_real_run_writes_one_report_with_its_specs(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        test_inner="""
import pytest
from harness import wait_for_sync

def test_waits():
    assert wait_for_sync("a value", iter([None, None, 1]).__next__, timeout=5, interval=0.05) == 1

def test_fails():
    assert 1 == 2
"""
    )
    art = tmp_path / "art"
    result = pytester.runpytest("--artifacts", str(art), "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    runs = list(art.iterdir())
    assert len(runs) == 1
    workers = sorted(p.name for p in (runs[0] / ".timeline").iterdir())
    # workers write the specs that used the harness; the controller those plain ones its workers relayed
    assert set(workers) <= {"gw0.jsonl", "gw1.jsonl", "main.jsonl"}
    page = Page((runs[0] / "report.html").read_text())
    specs = sorted(s["data-spec"].rsplit("/", 1)[-1] for s in page.find("details"))  # xdist ids may carry the dir
    assert specs == ["test_inner.py::test_fails", "test_inner.py::test_waits"]
    assert [a["data-outcome"] for a in page.find("rect", data_kind="attempt")] == ["not-yet", "not-yet", "ok"]
    result.stdout.fnmatch_lines([f"harness report: *{runs[0].name}/report.html"])
    records = [json.loads(line) for part in (runs[0] / ".timeline").iterdir() for line in part.read_text().splitlines()]
    assert {r["outcome"] for r in records} == {"passed", "failed"}
    failed = next(r for r in records if r["outcome"] == "failed")
    assert failed["failure"] == "assert 1 == 2"  # the failure's message itself, not only a link to the evidence
    assert {r["worker"] for r in records} <= {"gw0", "gw1"}  # under xdist each spec says which worker ran it
    shown = [span for span in page.find("span") if span.get("class") == "worker"]
    assert len(shown) == 2
    assert "assert 1 == 2" in (runs[0] / "report.html").read_text()


def test_a_failure_message_is_on_the_page_escaped_and_clipped(tmp_path: Path) -> None:
    long = "<b>did not roll out</b>: " + "x" * 5000
    entry = spec("specs/test_a.py::test_x", "failed", T0, failure=long[: report.MAX_FAILURE_CHARS])
    text = report.render([entry], "run-1", tmp_path)
    assert "&lt;b&gt;did not roll out&lt;/b&gt;" in text
    assert "<b>did not roll out</b>" not in text
    assert Page(text).find("pre", **{"class": "failure"})


def test_a_forward_alive_when_its_spec_ended_is_drawn_to_the_spec_end_not_the_run_end(tmp_path: Path) -> None:
    fwd = {
        "target": "svc/gw :8090",
        "start": T0 + 1,
        "ready": T0 + 1.2,
        "end": None,
        "seen_until": T0 + 4,
        "how": "still running when the spec ended",
        "died": False,
        "stderr": "",
    }
    first = spec("specs/test_a.py::test_x", "passed", T0, forwards=[fwd])
    later = spec("specs/test_a.py::test_y", "passed", T0 + 100)
    text = report.render([first, later], "run-1", tmp_path)
    bar = next(a for a in Page(text).find("rect", data_kind="forward"))
    axis_width = 100 + 4  # the run spans T0 .. T0 + 104
    assert float(bar["width"].rstrip("%")) < 100 * 10 / axis_width  # ends near T0 + 4, far from T0 + 104


def test_restarts_image_pull_waits_and_every_container_start_are_drawn(tmp_path: Path) -> None:
    crash, pull = explain(snapshot("crashloop")), explain(snapshot("imagepull"))
    entries = [
        report._rollout("deployment/web", None, T0 + 60, "failed", crash),
        report._rollout("deployment/api", None, T0 + 60, "failed", pull),
    ]
    page = Page(report.render([spec("specs/test_a.py::test_fails", "failed", T0, rollouts=entries)], "r", tmp_path))
    crash_pod = next(p for p in crash.pods if p.restarts)
    starts = crash_pod.container_starts(crash_pod.containers[0])
    assert len(starts) >= 2  # the first and the latest start the API still holds, not only the latest
    assert crash_pod.started == starts[0]  # started at its first start: not drawn "scheduled" until the last one
    assert len(page.find("rect", data_kind="container-start")) >= len(starts)
    loops = page.find("rect", data_kind="crash-loop")
    assert len(loops) == 1
    # An ImagePullBackOff pod is drawn pulling-failed from the kubelet's first failed pull, not scheduled to the end.
    failing = page.find("rect", data_kind="pod-phase", data_outcome="pull-failed")
    assert len(failing) == 1


def test_the_time_axis_has_few_enough_labels_to_never_touch(tmp_path: Path) -> None:
    page = Page(report.render(sample(tmp_path), "run-1", tmp_path))
    ticks = [span for span in page.find("span") if span.get("class") == "tick"]
    assert len(ticks) == report.RULER_TICKS + 1
    assert report.RULER_TICKS <= 5  # six ~60-px labels on a ~800-px track at a 1400-px window (checked in chromium)
