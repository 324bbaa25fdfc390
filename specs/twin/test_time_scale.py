"""Cluster-free specs of the twin's timing profile (``fakes/stack/profile.toml``): loading it, scaling it by the
time scale with its floors, the forms the objects store, the manifests rendered from it, and the command line's
``--time-scale`` / ``--set`` usage errors. No twin starts here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakes.stack.__main__ import main
from fakes.stack.profile import TIME_SCALE_ANNOTATION, Effective, Entry, ProfileError, effective, load
from fakes.stack.up import MANIFESTS, render

STACK_MANIFESTS = ("00-namespace.yaml", "30-temporal.yaml", "40-release.yaml", "50-catalog.yaml")


# --- loading ---------------------------------------------------------------------------------------------------


def test_the_committed_profile_loads_with_every_deployed_value_placed() -> None:
    entries = load()
    deployed = [e for e in entries.values() if e.deployed]
    assert deployed, "the committed profile has no deployed value"
    for entry in deployed:
        assert entry.object, entry
        assert entry.field, entry
        assert entry.unit in ("ms", "s"), entry
    assert all(e.seconds is not None or e.count is not None for e in entries.values())


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("[rhythms.x]\nseconds = 1.0\ncount = 2\n", r"\[rhythms.x\]: give exactly one of seconds or count"),
        ("[rhythms.x]\nabout = 'nothing'\n", r"\[rhythms.x\]: give exactly one of seconds or count"),
        ("[rhythms.x]\nseconds = 'soon'\n", r"\[rhythms.x\]: seconds must be a number, got 'soon'"),
        ("[rhythms.x]\ncount = 2.5\n", r"\[rhythms.x\]: count must be an integer"),
        ("[deployed.x]\nseconds = 1.0\nunit = 'ms'\n", r"\[deployed.x\]: a deployed value names its object and field"),
        (
            "[deployed.x]\nseconds = 1.0\nobject = 'ConfigMap c'\nfield = 'K'\nunit = 'min'\n",
            r"\[deployed.x\]: a deployed value has unit ms or s, a rhythm none; got 'min'",
        ),
        (
            "[rhythms.x]\nseconds = 1.0\nunit = 's'\n",
            r"\[rhythms.x\]: a deployed value has unit ms or s, a rhythm none",
        ),
    ],
)
def test_a_malformed_entry_is_named_with_its_key(tmp_path: Path, row: str, message: str) -> None:
    path = tmp_path / "profile.toml"
    path.write_text(row, encoding="utf-8")
    with pytest.raises(ProfileError, match=message):
        load(path)


# --- scaling, floors, stored forms -----------------------------------------------------------------------------


def _entry(seconds: float, floor: float, unit: str = "") -> Entry:
    return Entry(name="x", about="", seconds=seconds, unit=unit, floor=floor)


def test_scaling_divides_and_keeps_the_floor() -> None:
    assert _entry(90.0, 6.0, "ms").scaled(5) == 18.0
    assert _entry(90.0, 6.0, "ms").scaled(30) == 6.0, "below the floor"
    assert _entry(90.0, 6.0, "ms").scaled(1) == 90.0


def test_whole_second_fields_are_rounded_up() -> None:
    assert _entry(2.0, 1.0, "s").scaled(5) == 1.0
    assert _entry(30.0, 3.0, "s").scaled(4) == 8.0, "7.5 s is stored as 8"
    assert _entry(30.0, 3.0, "ms").scaled(4) == 7.5, "milliseconds keep the fraction"


def test_a_scale_below_one_and_a_count_are_refused() -> None:
    with pytest.raises(ProfileError, match="below 1"):
        _entry(10.0, 1.0).scaled(0.5)
    with pytest.raises(ProfileError, match="is a count, not a timing"):
        Entry(name="n", about="", count=3).scaled(2)


def test_stored_forms_are_milliseconds_or_whole_seconds() -> None:
    assert _entry(1.0, 0.0, "ms").stored(0.4) == "400"
    assert _entry(1.0, 0.0, "s").stored(7.5) == "8"


def test_every_committed_timing_at_scale_five_is_the_value_over_five_or_its_floor() -> None:
    timing = effective(5)
    for name, entry in load().items():
        if entry.count is not None:
            assert timing.count(name) == entry.count, f"{name} is a count: never scaled"
            continue
        assert entry.seconds is not None
        expected = max(entry.floor, entry.seconds / 5)
        got = timing.seconds(name)
        assert got == (float(-(-expected // 1)) if entry.unit == "s" else expected), name
        assert got <= entry.seconds, f"{name} runs slower at scale 5 than at 1"


def test_the_effective_profile_at_one_is_the_committed_file() -> None:
    timing = effective()
    assert all(timing.seconds(name) == e.seconds for name, e in load().items() if e.seconds is not None), (
        "scale 1 is the stack's own cadence"
    )


def test_an_override_is_deployed_as_given_and_nothing_else_moves() -> None:
    timing = effective(5, {"poll_budget": 7.5})
    assert timing.seconds("poll_budget") == 7.5
    assert timing.stored("poll_budget") == "7500"
    assert timing.seconds("poll_interval") == effective(5).seconds("poll_interval")


@pytest.mark.parametrize(
    ("scale", "overrides", "message"),
    [
        (0.5, {}, "time scale 0.5 must be a number >= 1"),
        (float("nan"), {}, "must be a number >= 1"),
        (1.0, {"resume_every": 1.0}, "'resume_every' is not a deployed value of profile.toml; one of: idle_window"),
        (1.0, {"no_such": 1.0}, "'no_such' is not a deployed value"),
        (1.0, {"poll_budget": 0.0}, "poll_budget=0: give a positive number of seconds"),
    ],
)
def test_bad_scales_and_overrides_are_refused(scale: float, overrides: dict[str, float], message: str) -> None:
    with pytest.raises(ProfileError, match=re.escape(message)):
        effective(scale, overrides)


def test_unknown_names_are_refused_when_read() -> None:
    with pytest.raises(ProfileError, match="no profile entry 'poll_timeout'"):
        Effective().seconds("poll_timeout")
    with pytest.raises(ProfileError, match="'poll_budget' is a timing, not a count"):
        Effective().count("poll_budget")


# --- the manifests the twin applies ----------------------------------------------------------------------------


def _documents(timing: Effective) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for name in STACK_MANIFESTS:
        docs += [d for d in yaml.safe_load_all(render(name, timing)) if d]
    return docs


def _named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def test_the_rendered_manifests_carry_the_scaled_values_at_five() -> None:
    timing = effective(5)
    docs = _documents(timing)
    gateway = _named(docs, "ConfigMap", "agent-controller-integration-gateway-config")["data"]
    assert (gateway["POLL_INTERVAL_MS"], gateway["POLL_TIMEOUT_MS"], gateway["RESUME_WAIT_MS"]) == (
        "400",
        "18000",
        "4000",
    )
    orchestrator = _named(docs, "ConfigMap", "agent-orchestrator-config")["data"]
    assert (orchestrator["AGENT_IDLE_TIMEOUT_SECONDS"], orchestrator["AGENT_SHUTDOWN_DRAIN_MS"]) == ("6", "5000")
    for agent in (d for d in docs if d["kind"] == "Agent"):
        assert {"name": "AGENT_REPLY_ACK_TIMEOUT_MS", "value": "18000"} in agent["spec"]["env"], agent["metadata"]
    pod = _named(docs, "Deployment", "agent-orchestrator")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 6
    assert pod["containers"][0]["readinessProbe"]["periodSeconds"] == 1
    namespace = _named(docs, "Namespace", "controller-agent")
    assert namespace["metadata"]["annotations"] == {TIME_SCALE_ANNOTATION: "5"}


def test_every_deployed_value_is_where_the_profile_says_at_any_scale() -> None:
    for timing in (effective(1), effective(5), effective(2.5, {"idle_window": 4.0})):
        docs = _documents(timing)
        for name, entry in timing.entries.items():
            if not entry.deployed:
                continue
            kind, _, obj = str(entry.object).partition(" ")
            doc = _named(docs, kind, obj)
            field = str(entry.field)
            if kind == "ConfigMap":
                raw = doc["data"][field]
            elif " " in field:
                path, _, key = field.partition(" ")
                raw = next(e["value"] for e in _walk(doc, path) if e["name"] == key)
            else:
                raw = _walk(doc, field)
            assert str(raw) == timing.stored(name), f"{name} at scale {timing.scale:g}: {entry.object}, {field}"


def _walk(doc: Any, path: str) -> Any:
    for step in path.split("."):
        key, _, index = step.partition("[")
        doc = doc[key]
        if index:
            doc = doc[int(index.rstrip("]"))]
    return doc


def test_no_timing_literal_is_left_where_a_deployed_value_goes() -> None:
    # The keys the profile fills are never written as numbers in the stack's manifests (one copy of each value).
    fields = {str(e.field).split(" ")[-1].split(".")[-1] for e in load().values() if e.deployed}
    for name in STACK_MANIFESTS:
        for line in (MANIFESTS / name).read_text(encoding="utf-8").splitlines():
            for key in fields:
                if re.search(rf"\b{key}\b\W.*\d", line) and "{{profile." not in line:
                    pytest.fail(f"{name}: {key} is a literal, not the profile's value: {line.strip()}")


def test_a_placeholder_naming_no_deployed_value_is_refused() -> None:
    with pytest.raises(ProfileError, match=re.escape("{{profile.resume_every}} names no deployed value")):
        effective(5).render("X: {{profile.resume_every}}")
    assert effective(5).render("X: {{ profile.poll_budget }}") == "X: 18000"


# --- the command line ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--time-scale", "0.5"], "argument --time-scale: 0.5 is below 1"),
        (["--time-scale", "fast"], "argument --time-scale: 'fast' is not a number"),
        (["--set", "no_such=3"], "argument --set: 'no_such' is not a deployed value of profile.toml"),
        (["--set", "resume_every=3"], "argument --set: 'resume_every' is not a deployed value"),
        (["--set", "poll_budget"], "argument --set: poll_budget=nan: give a positive number of seconds"),
        (["--set", "poll_budget=soon"], "argument --set: 'poll_budget=soon': give NAME=SECONDS"),
    ],
)
def test_command_line_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--kubeconfig", "/nonexistent/kubeconfig", *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
