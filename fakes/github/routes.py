"""The REST endpoints the fake GitHub serves, one short handler each.

Handlers run under the fake's lock with the caller already authenticated (``call.token`` for token routes,
``call.app`` for App-JWT routes) and raise :class:`~fakes.github.errors.GitHubError` to refuse. A repository the caller
may not see is a 404, exactly like a missing one.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from fakes.core import FakeResponse
from fakes.github import errors, payloads, render
from fakes.github.paging import paginate
from fakes.github.state import (
    REACTION_CONTENTS,
    Comment,
    Issue,
    Reaction,
    Repo,
    Token,
    git_blob_sha,
    iso,
    parse_iso,
)
from fakes.github.store import GitHubStore
from fakes.github.wire import DOCS, RAW_PREFIX, Call, RouteTable, json_body

table: RouteTable[GitHubStore] = RouteTable()
route = table.route

_REPO = "/repos/{owner}/{repo}"
# X-Accepted-GitHub-Permissions values as GitHub sends them (read: issues; write: issues or pull requests).
_READ_ISSUES = "issues=read"
_WRITE_ISSUES = "issues=write; pull_requests=write"
MAX_BODY = 65536  # characters in a comment body; GitHub's 422 below is quoted in danger/danger#424 and later threads
MAX_LABEL_NAME = 50  # characters in a label name (github/docs#32156)


# -- lookups that refuse ----------------------------------------------------------------------------------------


def _paged(call: Call, items: list[dict[str, Any]]) -> FakeResponse:
    page = paginate(items, base=call.base, path=call.path, query=call.request.query)
    return FakeResponse.json(200, page.items, [("link", page.link)] if page.link else [])


def _number(call: Call, doc: str, name: str = "number") -> int:
    try:
        return int(call.params[name])
    except ValueError:
        raise errors.not_found(doc) from None


def _repo(fake: GitHubStore, call: Call, doc: str) -> Repo:
    """The repository of the path, or 404 when it is missing or the caller may not see it."""
    repo = fake.repos.get(f"{call.params['owner']}/{call.params['repo']}".lower())
    if repo is None or not fake.can_see(call.token, repo):
        raise errors.not_found(doc)
    return repo


def _issue(fake: GitHubStore, call: Call, doc: str) -> tuple[Repo, Issue]:
    repo = _repo(fake, call, doc)
    iss = repo.issues.get(_number(call, doc))
    if iss is None:
        raise errors.not_found(doc)
    return repo, iss


def _comment(fake: GitHubStore, call: Call, doc: str) -> tuple[Repo, Comment]:
    repo = _repo(fake, call, doc)
    c = fake.comments.get(_number(call, doc, "comment_id"))
    if c is None or c.repo is not repo:
        raise errors.not_found(doc)
    return repo, c


def _writer(call: Call, doc: str, repo: Repo) -> Token:
    """The token of a write: writes need one, and an installation token only writes where its installation reaches.

    Finer permissions (triage for labels, push for contents) are deliberately not modelled.
    """
    if call.token is None:
        raise errors.requires_authentication(doc)
    if call.token.installation is not None and not call.token.installation.covers(repo):
        raise errors.not_accessible_by_integration(doc)
    return call.token


def _since(call: Call, resource: str, doc: str) -> float | None:
    """``since`` filters on ``updated_at`` and means "at or after"; 422 when it is not an ISO 8601 timestamp."""
    text = call.request.query_param("since")
    if text is None:
        return None
    try:
        return parse_iso(text)
    except ValueError:
        raise errors.validation_failed(resource, "since", "invalid", doc) from None


def _text_body(text: str, doc: str) -> str:
    """GitHub's 422 for a body over 65536 characters (its current wording: code ``unprocessable``, field ``data``)."""
    if len(text) > MAX_BODY:
        raise errors.validation_failed(
            "IssueComment", "data", "unprocessable", doc, message=f"Body is too long (maximum is {MAX_BODY} characters)"
        )
    return text


# -- repositories and issues ------------------------------------------------------------------------------------


@route("GET", _REPO, scopes="repo", permissions="metadata=read")
def get_repo(fake: GitHubStore, call: Call) -> FakeResponse:
    repo = _repo(fake, call, DOCS["repo"])
    shown = render.repository(call.base, repo, temp_clone_token=_temp_clone_token(call, repo))
    return FakeResponse.json(200, shown, [("last-modified", render.http_date(repo.created_at))])


def _temp_clone_token(call: Call, repo: Repo) -> str | None:
    """null for an anonymous caller, ``""`` for a public repository, a clone token for a private one the caller sees
    (what GitHub shows each of them)."""
    if call.token is None:
        return None
    if not repo.private:
        return ""
    digest = hashlib.sha256(f"{repo.id}:{call.token.value}".encode()).digest()
    return base64.b32encode(digest).decode()[:29]


@route("GET", _REPO + "/issues", scopes="repo", permissions=_READ_ISSUES)
def list_issues(fake: GitHubStore, call: Call) -> FakeResponse:
    doc = DOCS["issues"]
    repo = _repo(fake, call, doc)
    state = call.request.query_param("state", "open")
    if state not in ("open", "closed", "all"):
        raise errors.validation_failed("Issue", "state", "invalid", doc)
    since = _since(call, "Issue", doc)
    kind = call.request.query_param("type")
    issues = [
        i
        for i in sorted(repo.issues.values(), key=lambda i: -i.number)
        if (state == "all" or i.state == state) and (since is None or i.updated_at >= since) and _of_type(i, kind)
    ]
    return _paged(call, [render.issue(call.base, repo, i) for i in issues])


def _of_type(iss: Issue, kind: str | None) -> bool:
    """The ``type`` filter: an issue type's name (case-insensitive), ``*`` for any type, ``none`` for no type."""
    if kind is None:
        return True
    if kind == "*":
        return iss.type is not None
    if kind.lower() == "none":
        return iss.type is None
    return iss.type is not None and iss.type.name.lower() == kind.lower()


@route("GET", _REPO + "/issues/{number}", scopes="repo", permissions=_READ_ISSUES)
def get_issue(fake: GitHubStore, call: Call) -> FakeResponse:
    repo, iss = _issue(fake, call, DOCS["issue"])
    return FakeResponse.json(200, render.issue(call.base, repo, iss), _modified(iss.updated_at))


def _modified(when: float) -> list[tuple[str, str]]:
    return [("last-modified", render.http_date(when))]


# -- comments ---------------------------------------------------------------------------------------------------


@route("GET", _REPO + "/issues/{number}/comments", scopes="repo", permissions=_READ_ISSUES)
def list_comments(fake: GitHubStore, call: Call) -> FakeResponse:
    doc = DOCS["comments"]
    repo, iss = _issue(fake, call, doc)
    since = _since(call, "IssueComment", doc)
    comments = [fake.comments[cid] for cid in iss.comment_ids]
    comments = [c for c in comments if since is None or c.updated_at >= since]
    return _paged(call, [render.comment(call.base, repo, c) for c in comments])


@route("POST", _REPO + "/issues/{number}/comments", scopes="repo", permissions=_WRITE_ISSUES)
def create_comment(fake: GitHubStore, call: Call) -> FakeResponse:
    doc = DOCS["create_comment"]
    repo, iss = _issue(fake, call, doc)
    token = _writer(call, doc, repo)
    body = json_body(call.request, doc)
    if not isinstance(body, dict) or "body" not in body:
        raise errors.validation_failed("IssueComment", "body", "missing_field", doc)
    if not isinstance(body["body"], str):
        raise errors.invalid_request(f"For 'properties/body', {str(body['body'])[:80]!r} is not a string.", doc)
    via = token.installation.app if token.installation is not None else None
    c = fake.create_comment(repo, iss, _text_body(body["body"], doc), token.actor, via, fake.now())
    shown = render.comment(call.base, repo, c)
    fake.emit("issue_comment", payloads.comment_created(fake, repo, iss, c, base=call.base), repo=repo)
    return FakeResponse.json(201, shown, [("location", shown["url"])])


@route("GET", _REPO + "/issues/comments/{comment_id}", scopes="repo", permissions=_READ_ISSUES)
def get_comment(fake: GitHubStore, call: Call) -> FakeResponse:
    repo, c = _comment(fake, call, DOCS["comment"])
    return FakeResponse.json(200, render.comment(call.base, repo, c), _modified(c.updated_at))


@route("PATCH", _REPO + "/issues/comments/{comment_id}", scopes="repo", permissions=_WRITE_ISSUES)
def update_comment(fake: GitHubStore, call: Call) -> FakeResponse:
    doc = DOCS["update_comment"]
    repo, c = _comment(fake, call, doc)
    _writer(call, doc, repo)
    body = json_body(call.request, doc)
    if not isinstance(body, dict) or not isinstance(body.get("body"), str):
        raise errors.validation_failed("IssueComment", "body", "missing_field", doc)
    c.body = _text_body(body["body"], doc)
    c.updated_at = fake.now()
    return FakeResponse.json(200, render.comment(call.base, repo, c))


# -- labels -----------------------------------------------------------------------------------------------------


def _label_names(body: Any, doc: str) -> list[str]:
    """The three accepted bodies: ``{"labels": [names]}``, a bare ``[names]`` (PyGithub), ``{"labels": [{"name"}]}``;
    all names are checked before any label is created (all or nothing)."""
    items = body.get("labels") if isinstance(body, dict) else body
    names: list[str] = []
    for item in items if isinstance(items, list) else [None]:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name.strip():
            raise errors.invalid_request("For 'properties/labels', the value is not an array of label names.", doc)
        names.append(name)
    too_long = next((name for name in names if len(name) > MAX_LABEL_NAME), None)
    if too_long is not None:
        raise errors.error(
            422,
            "Validation Failed",
            doc,
            errors=[{"value": too_long, "resource": "Label", "field": "name", "code": "invalid"}],
        )
    return names


@route("POST", _REPO + "/issues/{number}/labels", scopes="repo", permissions=_WRITE_ISSUES)
def add_labels(fake: GitHubStore, call: Call) -> FakeResponse:
    doc = DOCS["add_labels"]
    repo, iss = _issue(fake, call, doc)
    token = _writer(call, doc, repo)
    names = _label_names(json_body(call.request, doc), doc)
    added = []
    for name in names:
        lab = fake.label_in(repo, name)  # GitHub creates a label that does not exist yet
        if all(existing.id != lab.id for existing in iss.labels):
            iss.labels.append(lab)
            added.append(lab)
    if added:
        iss.updated_at = fake.now()
    for lab in added:
        fake.emit("issues", payloads.labeled(fake, repo, iss, lab, sender=token.actor, base=call.base), repo=repo)
    return FakeResponse.json(200, [render.label(call.base, repo, lab) for lab in iss.labels])


@route("DELETE", _REPO + "/issues/{number}/labels/{name}", scopes="repo", permissions=_WRITE_ISSUES)
def remove_label(fake: GitHubStore, call: Call) -> FakeResponse:
    doc = DOCS["remove_label"]
    repo, iss = _issue(fake, call, doc)
    _writer(call, doc, repo)
    name = call.params["name"].lower()
    kept = [lab for lab in iss.labels if lab.name.lower() != name]
    if len(kept) == len(iss.labels):
        raise errors.error(404, "Label does not exist", doc)
    iss.labels = kept
    iss.updated_at = fake.now()
    return FakeResponse.json(200, [render.label(call.base, repo, lab) for lab in iss.labels])


# -- reactions --------------------------------------------------------------------------------------------------


def _react(fake: GitHubStore, call: Call, repo: Repo, reactions: list[Reaction], doc: str) -> FakeResponse:
    actor = _writer(call, doc, repo).actor
    body = json_body(call.request, doc)
    content = body.get("content") if isinstance(body, dict) else None
    if content not in REACTION_CONTENTS:
        raise errors.validation_failed("Reaction", "content", "invalid", doc)
    for r in reactions:
        if r.content == content and r.user.login == actor.login:
            return FakeResponse.json(200, render.reaction(call.base, r))  # an existing reaction: 200, not a second one
    r = Reaction(id=fake.new_id(), user=actor, content=content, created_at=fake.now())
    reactions.append(r)
    return FakeResponse.json(201, render.reaction(call.base, r))


@route("POST", _REPO + "/issues/{number}/reactions", scopes="repo", permissions=_WRITE_ISSUES)
def react_issue(fake: GitHubStore, call: Call) -> FakeResponse:
    repo, iss = _issue(fake, call, DOCS["issue_reaction"])
    return _react(fake, call, repo, iss.reactions, DOCS["issue_reaction"])


@route("POST", _REPO + "/issues/comments/{comment_id}/reactions", scopes="repo", permissions=_WRITE_ISSUES)
def react_comment(fake: GitHubStore, call: Call) -> FakeResponse:
    repo, c = _comment(fake, call, DOCS["comment_reaction"])
    return _react(fake, call, repo, c.reactions, DOCS["comment_reaction"])


# -- pull requests and contents ---------------------------------------------------------------------------------


@route("GET", _REPO + "/pulls/{number}", scopes="repo", permissions="pull_requests=read")
def get_pull(fake: GitHubStore, call: Call) -> FakeResponse:
    repo, iss = _issue(fake, call, DOCS["pull"])
    if iss.pull is None:
        raise errors.not_found(DOCS["pull"])
    shown = render.pull(call.base, repo, iss)
    iss.pull.computed = True  # this read started the computation: the next one sees its result
    return FakeResponse.json(200, shown, _modified(iss.updated_at))


@route("GET", _REPO + "/contents", scopes="repo", permissions="contents=read")
@route("GET", _REPO + "/contents/{path*}", scopes="repo", permissions="contents=read")
def get_contents(fake: GitHubStore, call: Call) -> FakeResponse:
    doc = DOCS["contents"]
    repo = _repo(fake, call, doc)
    ref = call.request.query_param("ref")
    if ref and ref not in (repo.default_branch, f"refs/heads/{repo.default_branch}"):
        raise errors.error(404, f"No commit found for the ref {ref}", doc)
    path = "/".join(segment for segment in call.params.get("path", "").split("/") if segment)
    # The default branch has one commit, the repository's creation: every path was last modified then.
    modified = _modified(repo.created_at)
    if path in repo.files:
        return FakeResponse.json(200, render.content_file(call.base, repo, path, repo.files[path]), modified)
    entries = _directory(repo, path)
    if not entries:
        raise errors.not_found(doc)
    return FakeResponse.json(200, [render.content_dir_entry(call.base, repo, p, d) for p, d in entries], modified)


@route("GET", RAW_PREFIX + "{owner}/{repo}/{ref}/{path*}", scopes="repo", permissions="contents=read")
def download_file(fake: GitHubStore, call: Call) -> FakeResponse:
    """A file's bytes at its ``download_url``, as raw.githubusercontent.com serves them: ``text/plain`` with a strong
    ETag (the blob SHA) and five minutes of caching; a file, ref or repository the caller cannot see is its plain-text
    ``404: Not Found``. A private repository needs the caller's token, as GitHub's download URLs for private files
    carry one."""
    repo = fake.repos.get(f"{call.params['owner']}/{call.params['repo']}".lower())
    path = call.params["path"].strip("/")
    ref = call.params["ref"]
    if repo is None or not fake.can_see(call.token, repo) or ref != repo.default_branch or path not in repo.files:
        return FakeResponse(404, [("content-type", "text/plain; charset=utf-8")], b"404: Not Found")
    data = repo.files[path]
    headers = [
        ("content-type", "text/plain; charset=utf-8"),
        ("etag", f'"{git_blob_sha(data)}"'),
        ("cache-control", "max-age=300"),
    ]
    return FakeResponse(200, headers, data)


def _directory(repo: Repo, path: str) -> list[tuple[str, bytes | None]]:
    """Entries directly under ``path`` (files with their bytes, sub-directories with None), sorted by name."""
    prefix = f"{path}/" if path else ""
    entries: dict[str, bytes | None] = {}
    for file_path, data in repo.files.items():
        if not file_path.startswith(prefix):
            continue
        head, sep, _ = file_path[len(prefix) :].partition("/")
        entries[prefix + head] = None if sep else data
    return sorted(entries.items())


# -- Apps -------------------------------------------------------------------------------------------------------


@route("POST", "/app/installations/{installation_id}/access_tokens", auth="jwt")
def create_access_token(fake: GitHubStore, call: Call) -> FakeResponse:
    doc = DOCS["access_token"]
    inst = fake.installations.get(_number(call, doc, "installation_id"))
    if inst is None or inst.app is not call.app:
        raise errors.not_found(doc)
    body = json_body(call.request, doc) or {}
    if not isinstance(body, dict):
        raise errors.invalid_request("For 'links/0/schema', the body is not an object.", doc)
    token = fake.issue_token(inst)
    answer: dict[str, Any] = {
        "token": token.value,
        "expires_at": iso(token.expires_at),
        "permissions": dict(body.get("permissions") or inst.app.permissions),
        "repository_selection": "all" if inst.repositories is None else "selected",
    }
    wanted = body.get("repositories")
    if isinstance(wanted, list):
        answer["repositories"] = [
            render.repository(call.base, r, full=False)
            for r in fake.repos.values()
            if r.name in wanted and inst.covers(r)
        ]
    return FakeResponse.json(201, answer)


@route("GET", _REPO + "/installation", auth="jwt")
def get_repo_installation(fake: GitHubStore, call: Call) -> FakeResponse:
    repo = fake.repos.get(f"{call.params['owner']}/{call.params['repo']}".lower())
    inst = fake.installation_for(repo, call.app) if repo is not None else None
    if inst is None:
        raise errors.not_found(DOCS["repo_installation"])
    return FakeResponse.json(200, render.installation(call.base, inst))


# -- users and permissions --------------------------------------------------------------------------------------


@route("GET", "/user", permissions="allows_permissionless_access=true")
def get_authenticated_user(fake: GitHubStore, call: Call) -> FakeResponse:
    doc = DOCS["user"]
    if call.token is None:
        raise errors.requires_authentication(doc)
    if call.token.installation is not None:  # an installation token acts as no user
        raise errors.not_accessible_by_integration(doc)
    me = call.token.actor
    owned = [r for r in fake.repos.values() if r.owner.login.lower() == me.login.lower()]
    private = "user" in (call.token.scopes or ())  # GitHub: private profile fields need an OAuth token's user scope
    return FakeResponse.json(200, render.private_user(call.base, me, owned, private=private), _modified(me.created_at))


@route("GET", _REPO + "/collaborators/{username}/permission", scopes="repo", permissions="metadata=read")
def get_collaborator_permission(fake: GitHubStore, call: Call) -> FakeResponse:
    """Owner: admin; collaborator: write (the fake keeps no finer roles); anyone else: read on a public repository,
    none on a private one. Only a caller with push access may ask (GitHub's 403 wording)."""
    doc = DOCS["permission"]
    repo = _repo(fake, call, doc)
    if call.token is None:
        raise errors.requires_authentication(doc)
    if _permission(repo, call.token.actor.login) not in ("admin", "write") and (
        call.token.installation is None or not call.token.installation.covers(repo)
    ):
        raise errors.error(403, "Must have push access to view collaborator permission.", doc)
    subject = fake.users.get(call.params["username"].lower())
    if subject is None:
        raise errors.not_found(doc)
    return FakeResponse.json(200, render.collaborator_permission(call.base, subject, _permission(repo, subject.login)))


def _permission(repo: Repo, login: str) -> str:
    if login.lower() == repo.owner.login.lower():
        return "admin"
    if login.lower() in {c.lower() for c in repo.collaborators}:
        return "write"
    return "none" if repo.private else "read"
