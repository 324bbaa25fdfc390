"""A sharded run as an Indexed Job: apply the plan, follow every shard, collect, clean up on every path.

:func:`run` applies :meth:`harness.jobrun.plan.Plan.objects` with kubectl, then looks at the Job's pods every
:data:`POLL` seconds (their status through the API, their logs through ``kubectl logs -f``), prints progress when it
changes (and every :data:`PROGRESS_EVERY` seconds), and ends when the Job is Complete or Failed, or its deadline has
passed. Then each shard's folder is written (``<artifacts>/<run id>/shard-<i>/``: its JUnit file and evidence as the
pod sent them, ``log.txt``, ``results.json``), the merged ``summary.json`` and ``summary.txt`` beside them, and the
run's Namespace is deleted (bounded; what could not be deleted is named with the command that deletes it) whatever
happened before: a failure, the deadline, Ctrl-C or SIGTERM (the command turns SIGTERM into ``KeyboardInterrupt``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from harness.errors import KubectlError
from harness.jobrun import wire
from harness.jobrun.plan import INDEX_ANNOTATION, JOB, JOB_NAME_LABEL, TOKEN_SECRET, Plan
from harness.jobrun.shards import Shard, started
from harness.kube import Kube

Obj = dict[str, Any]
POLL = 1.0
"""Seconds between looks at the Job and its pods."""
PROGRESS_EVERY = 30.0
DRAIN = 30.0
"""Seconds a finished shard's log follower may take to read the log's end (its bundle)."""
DELETE_TIMEOUT = 180.0
"""Seconds the run's Namespace may take to go: its pods' grace period (30 s by default) and the controllers'."""
API_TIMEOUT = 15.0
"""Seconds one API call may take."""
LOST_AFTER = 4 * API_TIMEOUT
"""Seconds without an answer from the API server after which the run gives up on the shards still running."""
TOKEN_TIMEOUT = 30.0
"""Seconds the tokens controller may take to fill a service-account-token Secret (it does so within a second)."""
EMPTY_SHARD = 5
"""pytest's exit code when a shard got no spec (more shards than test modules): not a failure of that shard."""


def run(root: Kube, plan: Plan, artifacts: Path, say: Callable[[str], None] = print) -> int:
    """Run ``plan`` on ``root``'s context; 0 when every shard passed and at least one spec ran, else 1. Raises
    :class:`~harness.errors.KubectlError` when the objects cannot be applied (after cleaning up) and
    ``KeyboardInterrupt`` as it came (after cleaning up)."""
    kube = root.in_namespace(plan.namespace)
    shards = [Shard(i) for i in range(plan.shards)]
    folder = artifacts / plan.run_id
    say(f"harness jobrun: {plan.shards} shards as Job {plan.namespace}/{JOB} on context {root.context}")
    try:
        namespace, *rest, job_object = plan.objects()
        root.kubectl("apply", "-f", "-", input=json.dumps(namespace))
        kube.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": rest}))
        if any(obj["kind"] == "Secret" and obj["metadata"]["name"] == TOKEN_SECRET for obj in rest):
            token_filled(kube)
        kube.kubectl("apply", "-f", "-", input=json.dumps(job_object))
        job = follow(kube, plan, shards, say)
        for shard in shards:
            shard.drained(DRAIN)
        return collect(shards, job, folder, say)
    finally:
        for shard in shards:
            shard.stop()
        write_folders(shards, folder)
        delete(root, plan, say)


def token_filled(kube: Kube) -> None:
    """Wait (:data:`TOKEN_TIMEOUT` seconds) for the tokens controller to fill the shards' token Secret: a pod
    started before would find no key to read. Raises :class:`~harness.errors.WaitTimeout` naming the Secret."""
    from harness.waiting import wait_for_sync

    def filled() -> bool | None:
        found = kube.kubectl_json("get", "secret", TOKEN_SECRET, "--ignore-not-found")
        return bool(found and (found.get("data") or {}).get("token")) or None

    wait_for_sync(
        f"the tokens controller to fill Secret {kube.namespace}/{TOKEN_SECRET}",
        filled,
        timeout=TOKEN_TIMEOUT,
        interval=0.25,
    )


def follow(kube: Kube, plan: Plan, shards: list[Shard], say: Callable[[str], None]) -> Obj:
    """Watch until the Job ends (or its deadline and :data:`DELETE_TIMEOUT` pass); the Job's last state."""
    from kubernetes import client as kube_client

    api = kube.api_client()
    core, batch = kube_client.CoreV1Api(api), kube_client.BatchV1Api(api)
    give_up = time.monotonic() + plan.deadline + DELETE_TIMEOUT
    last_line, last_said, tick = "", 0.0, threading.Event()
    answered = time.monotonic()
    while True:
        try:
            pods = core.list_namespaced_pod(
                plan.namespace, label_selector=f"{JOB_NAME_LABEL}={JOB}", _request_timeout=API_TIMEOUT
            )
            job: Obj = api.sanitize_for_serialization(
                batch.read_namespaced_job(JOB, plan.namespace, _request_timeout=API_TIMEOUT)
            )
        except (ApiException, HTTPError, OSError) as exc:  # one look lost: the next may answer
            if time.monotonic() - answered > LOST_AFTER:
                _fail_unfinished(shards, f"the API server did not answer for {LOST_AFTER:.0f} s: {exc}")
                return {}
            tick.wait(POLL)
            continue
        answered = time.monotonic()
        look(kube, shards, [api.sanitize_for_serialization(p) for p in pods.items])
        line = progress(shards)
        if line != last_line or time.monotonic() - last_said > PROGRESS_EVERY:
            say(line)
            last_line, last_said = line, time.monotonic()
        finished = job_finished(job)
        if finished:
            say(f"harness jobrun: Job {finished}")
            for shard in shards:
                if shard.ended is None and not shard.pod:
                    shard.ended, shard.cause = "failed", f"no pod ran: Job {finished}"
            return job
        if time.monotonic() > give_up:
            _fail_unfinished(shards, f"still running {plan.deadline:.0f} s after the start")
            return job
        tick.wait(POLL)


def _fail_unfinished(shards: list[Shard], cause: str) -> None:
    for shard in shards:
        if shard.ended is None:
            shard.ended, shard.cause = "failed", cause


def look(kube: Kube, shards: list[Shard], pods: list[Obj]) -> None:
    """Match pods to shards by completion index, follow their logs, judge their ends."""
    seen: set[int] = set()
    for pod in pods:
        index = int(((pod.get("metadata") or {}).get("annotations") or {}).get(INDEX_ANNOTATION, -1))
        if not 0 <= index < len(shards):
            continue
        shard = shards[index]
        seen.add(index)
        shard.pod = shard.pod or str(pod["metadata"]["name"])
        if started(pod) and shard.reading.exit is None:
            shard.follow(kube)
        shard.judge(pod, gone=False)
    for shard in shards:
        if shard.pod and shard.index not in seen:
            shard.judge(None, gone=True)


def job_finished(job: Obj) -> str:
    """``"Complete"`` / ``"Failed: <reason>: <message>"`` once the Job has that condition, else ``""``."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "Failed"):
            if condition["type"] == "Complete":
                return "Complete"
            return f"Failed: {condition.get('reason')}: {condition.get('message', '')}"
    return ""


def progress(shards: list[Shard]) -> str:
    """``harness jobrun: 1/2 shards done; specs so far: 40 passed, ... (shard 0: 22 passed; shard 1: 18 passed)``."""
    done = sum(1 for shard in shards if shard.ended is not None)
    totals: dict[str, int] = {}
    each = []
    for shard in shards:
        counts = shard.summary()["counts"]
        for outcome, count in counts.items():
            totals[outcome] = totals.get(outcome, 0) + count
        each.append(f"shard {shard.index}: " + (_counts(counts) or "none yet"))
    return (
        f"harness jobrun: {done}/{len(shards)} shards done; specs so far: "
        f"{totals.get('passed', 0)} passed, {totals.get('failed', 0)} failed, {totals.get('error', 0)} errors, "
        f"{totals.get('skipped', 0)} skipped ({'; '.join(each)})"
    )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))


def collect(shards: list[Shard], job: Obj, folder: Path, say: Callable[[str], None]) -> int:
    """The verdict: each failed shard named with its cause and results so far; 0 only when all passed."""
    ran = sum(len(shard.reading.results) for shard in shards)
    bad = [shard for shard in shards if not _passed(shard)]
    for shard in bad:
        counts = _counts(shard.reading.counts()) or "none"
        # Once pytest said its exit code, the container's end is that code: the pod's status adds nothing.
        why = shard.cause if shard.reading.exit is None else f"pytest exited {shard.reading.exit}"
        say(
            f"harness jobrun: shard {shard.index} (pod {shard.pod or 'none'}) failed: {why}; its specs so far: {counts}"
        )
    say(progress(shards).replace("specs so far", "specs"))
    say(f"harness jobrun: results in {folder}")
    if ran == 0:
        say("harness jobrun: no spec ran in any shard")
        return 1
    return 1 if bad else 0


def _passed(shard: Shard) -> bool:
    code = shard.reading.exit
    return shard.ended == "succeeded" and (code == 0 or (code == EMPTY_SHARD and not shard.reading.results))


def write_folders(shards: list[Shard], folder: Path) -> None:
    """``shard-<i>/`` for each shard and the merged summary. Raises nothing for one bundle that cannot be unpacked:
    it is named in that shard's ``results.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    merged = []
    for shard in shards:
        into = folder / f"shard-{shard.index}"
        into.mkdir(exist_ok=True)
        line = shard.summary()
        if shard.reading.bundle is not None:
            try:
                wire.unpack(shard.reading.bundle, into)
            except wire.BundleBroken as exc:
                line["bundle"] = str(exc)
        else:
            line["bundle"] = shard.reading.broken or "no bundle arrived (the pod did not finish its run)"
        (into / "log.txt").write_text("".join(shard.log))
        (into / "results.json").write_text(json.dumps(line, indent=2, sort_keys=True))
        merged.append(line)
    (folder / "summary.json").write_text(json.dumps({"shards": merged}, indent=2, sort_keys=True))
    (folder / "summary.txt").write_text("".join(_summary_line(line) + "\n" for line in merged))


def _summary_line(line: Obj) -> str:
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(line["counts"].items())) or "no specs"
    cause = f" ({line['cause']})" if line["cause"] else ""
    return f"shard {line['index']}: {line['ended'] or 'unfinished'}{cause}, pytest exit {line['exit']}: {counts}"


def delete(root: Kube, plan: Plan, say: Callable[[str], None]) -> None:
    """Delete the run's Namespace and wait for it to go, within :data:`DELETE_TIMEOUT`; name it when it stays."""
    try:
        root.kubectl(
            "delete",
            "namespace",
            plan.namespace,
            "--ignore-not-found",
            "--wait=true",
            f"--timeout={int(DELETE_TIMEOUT)}s",
            timeout=DELETE_TIMEOUT + API_TIMEOUT,
        )
    except (KubectlError, OSError) as exc:
        say(
            f"harness jobrun: namespace {plan.namespace} was kept ({exc}); delete it with: kubectl --context "
            f"{root.context} delete namespace {plan.namespace}"
        )
