"""Reading the fake GitHub's request journal through its port-forward: what the stack asked GitHub to do.

The fake GitHub records every request it serves (never its health route or ``/_fake/`` admin calls), stamped with
the status it answered, and serves the journal at ``GET /_fake/requests?path_prefix=&since=&method=``. Reading it
through a forward (``svc/fake-github`` port 80) works the same on minikube and on the twin. Because every entry has
its status, "the stack never called an endpoint the fake does not model" (501) cannot pass vacuously (failure
mode 15 in specs/cluster/README.md).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from harness.fetch import Forward, fetch_through_sync
from specs.agent_controller.errors import JournalUnreadable as JournalUnreadable

REPLY_MARKER = "<!-- agent-controller:reply -->"


def credential_fingerprint(authorization: str) -> str:
    """What the fake's journal records for an ``Authorization`` value: ``<scheme> sha256:<16 hex>`` of the
    credential after the scheme (``Bearer gho_e2e-seeded`` -> ``Bearer sha256:...``)."""
    scheme, _, credential = authorization.strip().partition(" ")
    if not credential:
        scheme, credential = "", scheme
    return f"{scheme} sha256:{hashlib.sha256(credential.strip().encode()).hexdigest()[:16]}".strip()


@dataclass(frozen=True)
class GitHubCall:
    """One journaled request: ``seq``, ``time`` (epoch seconds), ``method``, ``path``, ``status``, ``body`` text,
    ``credential``: the fingerprint of its ``Authorization`` header (:func:`credential_fingerprint`), ``None``
    without one."""

    seq: int
    time: float
    method: str
    path: str
    status: int | None
    body: str | None
    credential: str | None = None

    def json(self) -> Any:
        """The body parsed as JSON, or ``None`` when there is none or it is not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    def line(self) -> str:
        return f"{self.method} {self.path} -> {self.status}"


class GitHubJournal:
    """The fake GitHub's journal, read through ``target`` (a forward or a base URL); each read is one bounded GET."""

    def __init__(self, target: Forward | str, *, timeout: float = 20.0) -> None:
        self.target = target
        self.timeout = timeout

    def calls(
        self, *, path_prefix: str | None = None, since: float | None = None, method: str | None = None
    ) -> list[GitHubCall]:
        """Journaled requests, oldest first, filtered by the fake (``since``: epoch seconds).

        Raises :class:`JournalUnreadable` for a non-200 or non-JSON answer, and the hop failures of
        :func:`harness.fetch_through_sync`.
        """
        params = {
            k: str(v) for k, v in (("path_prefix", path_prefix), ("since", since), ("method", method)) if v is not None
        }
        answer = fetch_through_sync(self.target, "GET", "/_fake/requests", params=params, timeout=self.timeout)
        try:
            entries = answer.json()["requests"] if answer.status_code == 200 else None
        except (ValueError, KeyError, TypeError):
            entries = None
        if not isinstance(entries, list):
            raise JournalUnreadable(
                f"GET /_fake/requests answered {answer.status_code}: {answer.text[:300]!r} "
                "(is this the harness's fake GitHub?)"
            )
        return [
            GitHubCall(
                int(e.get("seq", 0)),
                float(e.get("time", 0.0)),
                str(e.get("method", "")),
                str(e.get("path", "")),
                e.get("status"),
                e.get("body"),
                e.get("credential"),
            )
            for e in entries
        ]

    def repo_reads(self, repo: str, *, since: float | None = None) -> list[str | None]:
        """The credential fingerprint of every ``GET /repos/<owner>/<name>`` (a read check of ``repo``), oldest
        first: whose token each check used, without the token (compare with :func:`credential_fingerprint`)."""
        path = f"/repos/{repo}"
        return [
            call.credential for call in self.calls(path_prefix=path, since=since, method="GET") if call.path == path
        ]

    def comments(self, owner: str, repo: str, number: int, *, since: float | None = None) -> list[str]:
        """Bodies of the comments created on issue ``number`` (``POST .../comments`` answered 201), oldest first."""
        path = f"/repos/{owner}/{repo}/issues/{number}/comments"
        return [
            str((call.json() or {}).get("body", ""))
            for call in self.calls(path_prefix=path, since=since, method="POST")
            if call.path == path and call.status == 201
        ]

    def label_removals(
        self, owner: str, repo: str, number: int, label: str, *, since: float | None = None
    ) -> list[GitHubCall]:
        """``DELETE .../issues/<n>/labels/<label>`` calls (the gateway counts a 404 as done, so any status)."""
        paths = {
            f"/repos/{owner}/{repo}/issues/{number}/labels/{label}",
            f"/repos/{owner}/{repo}/issues/{number}/labels/{quote(label, safe='')}",
        }
        return [
            call
            for call in self.calls(
                path_prefix=f"/repos/{owner}/{repo}/issues/{number}/labels/", since=since, method="DELETE"
            )
            if call.path in paths
        ]

    def unstubbed(self, *, since: float | None = None) -> list[GitHubCall]:
        """Calls the fake answered 501: endpoints it does not model (outside its own ``/_fake/`` routes)."""
        return [call for call in self.calls(since=since) if call.status == 501 and not call.path.startswith("/_fake")]
