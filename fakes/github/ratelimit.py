"""GitHub's primary rate limit for the REST API: a per-credential hourly quota and the ``x-ratelimit-*`` headers.

GitHub allows 60 requests an hour without a credential and 5000 with a token; every answer of the REST API carries
``x-ratelimit-limit``, ``-remaining``, ``-reset`` (epoch seconds), ``-used`` and ``-resource``. Past the limit an
API call is a 403 with ``remaining`` 0 (the app words it). The fake's hourly window starts at its first request and
restarts on the fake's clock. Not thread-safe by itself: the fake calls it under its lock.
"""

from __future__ import annotations

from dataclasses import dataclass

ANON_LIMIT, TOKEN_LIMIT = 60, 5000  # GitHub's primary hourly limits (unauthenticated, token)
WINDOW = 3600.0  # seconds


@dataclass(frozen=True)
class Quota:
    """One request's place in its primary rate limit; ``reset`` is epoch seconds."""

    limit: int
    used: int
    remaining: int
    reset: int
    exhausted: bool

    def headers(self) -> list[tuple[str, str]]:
        return [
            ("x-ratelimit-limit", str(self.limit)),
            ("x-ratelimit-remaining", str(self.remaining)),
            ("x-ratelimit-reset", str(self.reset)),
            ("x-ratelimit-used", str(self.used)),
            ("x-ratelimit-resource", "core"),
        ]


class RateLimiter:
    """Counts requests per credential in an hourly window; ``override`` forces ``remaining`` (0: every call is
    limited; None: count)."""

    def __init__(self, now: float) -> None:
        self._window_start = now
        self._used: dict[str, int] = {}
        self.override: int | None = None

    def spend(self, credential: str | None, now: float) -> Quota:
        """Count one request of ``credential`` (None or empty: anonymous) at ``now`` (epoch seconds); its quota."""
        quota = self.quota(credential, now, extra=1)
        self._used[credential or "anonymous"] = quota.used
        return quota

    def quota(self, credential: str | None, now: float, *, extra: int = 0) -> Quota:
        """The quota of ``credential`` with ``extra`` more requests, counting nothing (``extra=1``: what a request
        would get if it counted; 0: where it stands, what a 304 reports)."""
        if now - self._window_start >= WINDOW:
            self._window_start, self._used = now, {}
        limit = TOKEN_LIMIT if credential else ANON_LIMIT
        used = self._used.get(credential or "anonymous", 0) + extra
        if self.override is not None:
            remaining, exhausted = self.override, self.override <= 0
        else:
            remaining, exhausted = max(0, limit - used), used > limit
        return Quota(limit, used, remaining, int(self._window_start + WINDOW), exhausted)
