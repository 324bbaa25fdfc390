"""Redis session sweeps: list or delete the orchestrator's ``sess:*`` keys in ONE ``kubectl exec`` per sweep.

Since credentials moved to Secrets, the orchestrator's Redis holds session state only (``sess:<session id>``,
e.g. ``sess:github:e2e-org/e2e-repo#12``), with persistence off. Specs clear those keys so a turn starts without an
inherited conversation. Upstream ran one ``kubectl exec ... redis-cli DEL <key>`` per key, unbounded, against the
first pod a selector printed; here a sweep is:

1. one ``kubectl get pods -l app.kubernetes.io/name=agent-orchestrator-redis -o json``: exactly one pod must be
   Running and not terminating, else :class:`RedisPodNotFound` names what matched (the selector matters: ``app=...``
   matches nothing and kubectl still exits 0, so a wrong one reads as "no Redis");
2. one ``kubectl exec <pod> -- sh -c <script> sh <pattern> <limit> <batch> <delete>``: the POSIX ``sh`` script
   runs ``redis-cli --scan --pattern`` and deletes what it finds in ``redis-cli DEL`` batches, at most ``limit`` keys,
   reporting each key, each batch's count and the scan's exit status on stdout; the scan's status is carried
   out of the pipeline through a spare file descriptor (POSIX ``sh`` has no ``pipefail``).

Both calls are bounded (``timeout`` seconds, shortened to the current ``wait_for`` attempt). ``redis-cli`` writes
raw output (one key per line) when its stdout is not a terminal, which is the case here; a key containing a newline
cannot be reported faithfully and is not supported. The container's ``redis-cli`` must reach Redis without
arguments (``127.0.0.1:6379``; ``REDISCLI_AUTH`` from the container's environment if Redis needs a password).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness.errors import KubectlError
from harness.kube import Kube
from specs.agent_controller.errors import RedisPodNotFound as RedisPodNotFound
from specs.agent_controller.errors import RedisSweepError as RedisSweepError

REDIS_SELECTOR = "app.kubernetes.io/name=agent-orchestrator-redis"
SESSION_PATTERN = "sess:*"
DEFAULT_LIMIT = 10_000
"""Keys a sweep handles at most; more left over is reported (``truncated``), never silently ignored."""
DEFAULT_BATCH = 100
"""Keys per ``redis-cli DEL``."""
DEFAULT_TIMEOUT = 30.0

# $1 pattern, $2 limit, $3 batch, $4 delete (1/0). fd 3: the real stdout; fd 4: carries the scan's exit status
# into $(...).
SWEEP_SCRIPT = r"""
pattern=$1 limit=$2 batch=$3 delete=$4
del_batch() {
  out=$(redis-cli DEL "$@" 2>&1) || { printf 'del-failed %s\n' "$out"; return 1; }
  printf 'deleted %s\n' "$out"
}
consume() {
  n=0
  set --
  while IFS= read -r key; do
    if [ "$n" -ge "$limit" ]; then echo truncated; break; fi
    n=$((n + 1))
    printf 'key %s\n' "$key"
    [ "$delete" = 1 ] || continue
    set -- "$@" "$key"
    if [ "$#" -ge "$batch" ]; then del_batch "$@" || return 1; set --; fi
  done
  if [ "$#" -gt 0 ]; then del_batch "$@" || return 1; fi
  return 0
}
exec 3>&1
scan_status=$( { { redis-cli --scan --pattern "$pattern"; echo "$?" >&4; } | consume >&3; } 4>&1 )
consumed=$?
echo "scan-exit $scan_status"
[ "$consumed" -eq 0 ] || exit 3
"""

_LINE = re.compile(r"^(key|deleted|del-failed|scan-exit) ?(.*)$")


@dataclass(frozen=True)
class SweepResult:
    """One sweep: the ``pod`` used, ``keys`` seen (in scan order, at most ``limit``), ``deleted`` (Redis's own count
    from ``DEL``; lower than ``len(keys)`` when keys expired meanwhile; 0 for a listing) and ``truncated`` (more
    keys matched than ``limit``: sweep again)."""

    pod: str
    keys: list[str] = field(default_factory=list)
    deleted: int = 0
    truncated: bool = False


class RedisSessions:
    """Sweeps of the orchestrator's Redis through ``kube`` (pinned context and namespace)."""

    def __init__(
        self,
        kube: Kube,
        *,
        selector: str = REDIS_SELECTOR,
        container: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.kube = kube
        self.selector = selector
        self.container = container
        self.timeout = timeout

    def pod(self) -> str:
        """The one Running, non-terminating pod matching the selector. Raises :class:`RedisPodNotFound`."""
        listing = self.kube.kubectl_json("get", "pods", "-l", self.selector, timeout=self.timeout)
        items: list[dict[str, Any]] = listing.get("items", [])
        running = [str(p["metadata"]["name"]) for p in items if _running(p)]
        if len(running) == 1:
            return running[0]
        seen = ", ".join(f"{p['metadata']['name']} ({_state(p)})" for p in items) or "none"
        reason = "no Running pod" if not running else f"{len(running)} Running pods"
        raise RedisPodNotFound(
            f"{reason} matches -l {self.selector} in namespace {self.kube.namespace} "
            f"(matched: {seen}); a sweep needs exactly one (a rollout in progress, or a wrong "
            "selector: the chart labels app.kubernetes.io/name, and app= matches nothing)"
        )

    def sweep(
        self, pattern: str = SESSION_PATTERN, *, limit: int = DEFAULT_LIMIT, batch: int = DEFAULT_BATCH
    ) -> SweepResult:
        """Delete the keys matching ``pattern`` (a Redis glob), at most ``limit`` of them, in one exec.

        Raises ``ValueError`` for a pattern without a literal prefix (``*`` would empty the whole Redis) or a
        non-positive ``limit``/``batch``; :class:`RedisPodNotFound`; :class:`RedisSweepError` when ``redis-cli``
        fails; :class:`harness.KubectlError` / :class:`harness.KubectlTimeout` when kubectl does.
        """
        return self._run(pattern, limit, batch, delete=True)

    def keys(self, pattern: str = SESSION_PATTERN, *, limit: int = DEFAULT_LIMIT) -> SweepResult:
        """List (never delete) the keys matching ``pattern`` in one exec; same errors as :meth:`sweep`."""
        return self._run(pattern, limit, DEFAULT_BATCH, delete=False)

    def _run(self, pattern: str, limit: int, batch: int, *, delete: bool) -> SweepResult:
        _check_pattern(pattern)
        for name, value in (("limit", limit), ("batch", batch)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        pod = self.pod()
        container = ["-c", self.container] if self.container else []
        args = [
            "exec",
            pod,
            *container,
            "--",
            "sh",
            "-c",
            SWEEP_SCRIPT,
            "sh",
            pattern,
            str(limit),
            str(batch),
            "1" if delete else "0",
        ]
        done = self.kube.kubectl(*args, timeout=self.timeout, check=False)
        shown = self.kube.argv(*("<sweep script>" if a is SWEEP_SCRIPT else a for a in args))
        return _parse(pod, done.stdout, done.returncode, done.stderr, limit, argv=shown)


def _parse(pod: str, stdout: str, returncode: int, stderr: str, limit: int, *, argv: list[str]) -> SweepResult:
    keys: list[str] = []
    deleted = 0
    truncated = False
    scan_exit: int | None = None
    failures: list[str] = []
    for line in stdout.split("\n"):
        if line == "truncated":
            truncated = True
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        kind, rest = match.groups()
        if kind == "key":
            keys.append(rest)
        elif kind == "deleted" and rest.strip().isdigit():
            deleted += int(rest)
        elif kind == "del-failed" or kind == "deleted":
            failures.append(f"redis-cli DEL said {rest.strip()!r}")
        elif kind == "scan-exit":
            scan_exit = int(rest) if rest.strip().isdigit() else -1
    tail = stderr.strip().splitlines()[-3:]
    if scan_exit is None:
        if returncode != 0:
            raise KubectlError(argv, returncode, " | ".join(tail))
        raise RedisSweepError(
            f"the sweep in pod {pod} printed no scan status; its output was not the sweep script's: {stdout[-300:]!r}"
        )
    if scan_exit != 0 and not truncated:  # after a truncation the scan dies of SIGPIPE, as expected
        failures.insert(0, f"redis-cli --scan exited {scan_exit}")
    if failures or returncode != 0:
        said = "; ".join(failures) or f"the exec exited {returncode}"
        raise RedisSweepError(
            f"the Redis sweep in pod {pod} failed: {said} ({len(keys)} keys seen, {deleted} "
            f"deleted; stderr: {' | '.join(tail) or '(empty)'})"
        )
    return SweepResult(pod, keys[:limit], deleted, truncated)


def _check_pattern(pattern: str) -> None:
    if not isinstance(pattern, str) or not pattern or "\n" in pattern:
        raise ValueError(f"pattern must be a non-empty one-line Redis glob, got {pattern!r}")
    if pattern[0] in "*?[\\":
        raise ValueError(
            f"pattern {pattern!r} has no literal prefix: a sweep would touch every key in Redis; "
            "name the key family, e.g. 'sess:*'"
        )


def _running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")


def _state(pod: dict[str, Any]) -> str:
    phase = (pod.get("status") or {}).get("phase", "no phase")
    return f"{phase}, terminating" if pod["metadata"].get("deletionTimestamp") else str(phase)
