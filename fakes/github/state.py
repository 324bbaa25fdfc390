"""The fake GitHub's state: users, repositories, issues (pull requests are issues with a head and base), comments,
labels, reactions, files, GitHub Apps, installations and tokens.

Plain dataclasses guarded by the owning :class:`~fakes.github.app.FakeGitHub`'s lock; nothing here does I/O. Ids come
from one counter per fake so every object id is unique (GitHub's ids are unique per object type; unique overall is
stricter and harmless). Times are epoch seconds (floats) on the fake's clock, which a spec may advance
(``FakeGitHub.advance_clock``) to expire tokens without sleeping.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

#: Seconds a web-flow OAuth ``code`` lives (GitHub's docs: "will expire after 10 minutes").
OAUTH_CODE_TTL = 600

# GitHub's reaction contents (REST "Reactions" docs); anything else is a 422.
REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


# 9999-12-31T23:59:59Z: the last second ``datetime`` (so :func:`iso`) can show; the fake's clock stays in 0..this.
MAX_EPOCH = 253402300799.0


def describe(value: object) -> str:
    """``value`` for an error message, short even for a 4000-digit integer (whose ``repr`` may raise)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    return repr(value)[:60]


def checked_epoch(value: object, what: str) -> float:
    """``value`` (epoch seconds) as a float in 0..:data:`MAX_EPOCH`; ``ValueError`` naming ``what`` otherwise (NaN,
    infinities, overflowing integers, non-numbers), so no timestamp can later crash :func:`iso` or emit NaN."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        seconds = math.nan
    if isinstance(value, bool) or not 0 <= seconds <= MAX_EPOCH:  # NaN fails the comparison too
        raise ValueError(
            f"{what} must be epoch seconds between 0 and {MAX_EPOCH:.0f} (year 9999), got {describe(value)}"
        )
    return seconds


def iso(ts: float | None) -> str | None:
    """Epoch seconds to GitHub's timestamp form, ``2024-05-01T12:00:00Z`` (whole seconds, UTC)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(int(ts), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    """GitHub's ISO 8601 timestamp (``Z`` or an offset) to epoch seconds; raises ``ValueError`` on anything else."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def git_blob_sha(data: bytes) -> str:
    """The git blob id of ``data`` (what GitHub's contents API reports as ``sha``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class User:
    login: str
    id: int
    type: str = "User"  # "User", "Organization" or "Bot"
    created_at: float = 0.0


@dataclass
class Label:
    id: int
    name: str
    color: str = "ededed"
    description: str | None = None
    default: bool = False


@dataclass
class Reaction:
    id: int
    user: User
    content: str
    created_at: float


@dataclass
class Comment:
    id: int
    repo: Repo
    issue_number: int
    body: str
    user: User
    created_at: float
    updated_at: float
    via_app: App | None = None
    reactions: list[Reaction] = field(default_factory=list)


@dataclass
class IssueType:
    """An organization's issue type (``Bug``, ``Task``, ...); GitHub's colors: gray, blue, green, yellow, orange, red,
    pink, purple."""

    id: int
    name: str
    created_at: float
    description: str | None = None
    color: str = "gray"
    is_enabled: bool = True


@dataclass
class PullInfo:
    head_ref: str
    base_ref: str
    head_sha: str
    base_sha: str
    merge_commit_sha: str
    draft: bool = False
    mergeable: bool = True  # what GitHub concludes once it has computed it
    computed: bool = False  # False until the first read after a change: GitHub answers mergeable null meanwhile


@dataclass
class Issue:
    id: int
    number: int
    title: str
    body: str | None
    user: User
    created_at: float
    updated_at: float
    state: str = "open"
    closed_at: float | None = None
    labels: list[Label] = field(default_factory=list)
    comment_ids: list[int] = field(default_factory=list)
    reactions: list[Reaction] = field(default_factory=list)
    pull: PullInfo | None = None
    pull_id: int | None = None
    type: IssueType | None = None
    parent: int | None = None  # number of the parent issue (sub-issues)
    blocked_by: list[int] = field(default_factory=list)  # numbers of the issues blocking this one
    pinned_comment: Comment | None = None


@dataclass
class Repo:
    id: int
    owner: User
    name: str
    created_at: float
    private: bool = False
    description: str | None = None
    default_branch: str = "main"
    collaborators: set[str] = field(default_factory=set)
    # lower-cased name -> label: GitHub matches label names case-insensitively
    labels: dict[str, Label] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # path without leading slash -> content on the default branch
    next_number: int = 1

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"


@dataclass
class App:
    id: int
    slug: str
    name: str
    client_id: str
    owner: User
    public_key_pem: str
    private_key_pem: str
    created_at: float
    permissions: dict[str, str] = field(
        default_factory=lambda: {"issues": "write", "metadata": "read", "pull_requests": "write"}
    )
    events: list[str] = field(default_factory=lambda: ["issues", "issue_comment", "pull_request"])

    @property
    def bot(self) -> User:
        """The App's bot account: what comments posted with an installation token show as author and sender."""
        return User(login=f"{self.slug}[bot]", id=self.id + 41_000_000, type="Bot")


@dataclass
class Installation:
    id: int
    app: App
    account: User
    created_at: float
    repositories: list[str] | None = None  # full names; None means all of the account's repositories

    def covers(self, repo: Repo) -> bool:
        if repo.owner.login.lower() != self.account.login.lower():
            return False
        return self.repositories is None or repo.full_name.lower() in {r.lower() for r in self.repositories}


@dataclass
class Token:
    """An access token the fake accepts: an installation token (``ghs_``) or a seeded user token."""

    value: str
    expires_at: float | None
    user: User | None = None
    installation: Installation | None = None
    #: OAuth scopes of a user token (``X-OAuth-Scopes``); ``()`` for a GitHub App's user token (it has permissions,
    #: not scopes); None for an installation token.
    scopes: tuple[str, ...] | None = None
    client_id: str | None = None  # the OAuth client that got this user token (``X-OAuth-Client-Id``)

    @property
    def app_token(self) -> bool:
        """An installation token or a GitHub App's user token: fine-grained permissions, not OAuth scopes."""
        return self.installation is not None or self.client_id is not None

    @property
    def actor(self) -> User:
        """Who acts with this token: the user, or the App's bot for an installation token."""
        if self.installation is not None:
            return self.installation.app.bot
        assert self.user is not None
        return self.user


@dataclass
class Hook:
    """A webhook subscription: where the fake delivers events caused by API calls (e.g. a created comment)."""

    id: int
    url: str
    secret: str | None
    events: list[str]
    content_type: str = "json"  # "json" or "form"
    repo: str | None = None  # full name it is limited to; None means every repository


@dataclass
class DeviceCode:
    value: str
    user_code: str
    client_id: str
    login: str  # who approves it (the fake's oauth_login when it was issued)
    expires_at: float


@dataclass
class RefreshGrant:
    value: str
    client_id: str
    login: str
    expires_at: float
    access_token: str  # revoked when this refresh token is used
    from_device_flow: bool  # such a refresh token needs no client_secret (GitHub docs)


@dataclass
class OAuthState:
    """Outstanding device codes, web-flow codes (code -> (login, expiry)) and refresh tokens, by value."""

    device_codes: dict[str, DeviceCode] = field(default_factory=dict)
    codes: dict[str, tuple[str, float]] = field(default_factory=dict)
    refresh: dict[str, RefreshGrant] = field(default_factory=dict)
