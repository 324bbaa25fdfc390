"""The REST endpoints the fake GitHub serves (fakes-api.md §3.1), one short handler each.

Handlers run under the fake's lock with the caller already authenticated (``call.token`` for token routes,
``call.app`` for App-JWT routes). A repository the caller may not see is a 404, exactly like a missing one.
"""

from __future__ import annotations

from typing import Any

from fakes.core import FakeResponse
from fakes.github import errors, render
from fakes.github.app import _DOCS, Call, FakeGitHub, parse_body, route
from fakes.github.paging import paginate
from fakes.github.payloads import issue_comment_created_payload, issues_labeled_payload
from fakes.github.state import REACTION_CONTENTS, Reaction, Repo, parse_iso

_REPO = "/repos/{owner}/{repo}"


def _paged(call: Call, items: list[dict[str, Any]]) -> FakeResponse:
    page = paginate(items, base=call.base, path=call.request.path, query=call.request.query)
    return FakeResponse.json(200, page.items, [("link", page.link)] if page.link else [])


def _number(call: Call, name: str = "number") -> int | None:
    try:
        return int(call.params[name])
    except ValueError:
        return None


def _need_token(call: Call, doc: str, repo: Repo) -> FakeResponse | None:
    """Writes need a token; an installation token only writes to repositories its installation covers.

    Finer permissions (triage for labels, push for contents) are deliberately not modelled.
    """
    if call.token is None:
        return errors.requires_authentication(doc)
    if call.token.installation is not None and not call.token.installation.covers(repo):
        return errors.error(403, "Resource not accessible by integration", doc)
    return None


def _write_body(call: Call, doc: str, repo: Repo) -> tuple[Any, FakeResponse | None]:
    """The parsed body of a write, or the refusal to answer instead: first :func:`_need_token`, then the JSON."""
    if (refusal := _need_token(call, doc, repo)) is not None:
        return None, refusal
    return parse_body(call.request, doc)


@route("GET", _REPO)
def get_repo(fake: FakeGitHub, call: Call) -> FakeResponse:
    repo = fake.visible_repo(call)
    if repo is None:
        return errors.not_found(_DOCS["repo"])
    return FakeResponse.json(200, render.repository(call.base, repo))


@route("GET", _REPO + "/issues")
def list_issues(fake: FakeGitHub, call: Call) -> FakeResponse:
    repo = fake.visible_repo(call)
    if repo is None:
        return errors.not_found(_DOCS["issues"])
    state = call.request.query_param("state", "open")
    if state not in ("open", "closed", "all"):
        return errors.validation_failed("Issue", "state", "invalid", _DOCS["issues"])
    since, bad = _since(call, "Issue", _DOCS["issues"])
    if bad is not None:
        return bad
    issues = [i for i in sorted(repo.issues.values(), key=lambda i: -i.number)
              if (state == "all" or i.state == state) and (since is None or i.updated_at >= since)]
    return _paged(call, [render.issue(call.base, repo, i) for i in issues])


def _since(call: Call, resource: str, doc: str) -> tuple[float | None, FakeResponse | None]:
    """``since`` filters on ``updated_at``, "at or after" (§3.3)."""
    text = call.request.query_param("since")
    if text is None:
        return None, None
    try:
        return parse_iso(text), None
    except ValueError:
        return None, errors.validation_failed(resource, "since", "invalid", doc)


@route("GET", _REPO + "/issues/{number}")
def get_issue(fake: FakeGitHub, call: Call) -> FakeResponse:
    repo, iss = _repo_issue(fake, call)
    if iss is None:
        return errors.not_found(_DOCS["issue"])
    return FakeResponse.json(200, render.issue(call.base, repo, iss))


def _repo_issue(fake: FakeGitHub, call: Call):  # -> tuple[Repo | None, Issue | None]
    repo = fake.visible_repo(call)
    number = _number(call)
    if repo is None or number is None:
        return repo, None
    return repo, repo.issues.get(number)


@route("GET", _REPO + "/issues/{number}/comments")
def list_comments(fake: FakeGitHub, call: Call) -> FakeResponse:
    repo, iss = _repo_issue(fake, call)
    if iss is None:
        return errors.not_found(_DOCS["comments"])
    since, bad = _since(call, "IssueComment", _DOCS["comments"])
    if bad is not None:
        return bad
    comments = [fake.comments[cid] for cid in iss.comment_ids]
    comments = [c for c in comments if since is None or c.updated_at >= since]
    return _paged(call, [render.comment(call.base, repo, c) for c in comments])


@route("POST", _REPO + "/issues/{number}/comments")
def create_comment(fake: FakeGitHub, call: Call) -> FakeResponse:
    doc = _DOCS["create_comment"]
    repo, iss = _repo_issue(fake, call)
    if iss is None:
        return errors.not_found(doc)
    body, bad = _write_body(call, doc, repo)
    if bad is not None:
        return bad
    if not isinstance(body, dict) or "body" not in body:
        return errors.validation_failed("IssueComment", "body", "missing_field", doc)
    if not isinstance(body["body"], str):
        return errors.invalid_request(f"For 'properties/body', {str(body['body'])[:80]!r} is not a string.", doc)
    if (too_long := _body_too_long(body["body"], doc)) is not None:
        return too_long
    token = call.token
    via = token.installation.app if token.installation is not None else None
    c = fake.create_comment(repo, iss, body["body"], token.actor, via, fake.now())
    shown = render.comment(call.base, repo, c)
    fake.emit("issue_comment", issue_comment_created_payload(fake, repo.full_name, c.id, base=call.base), repo=repo)
    return FakeResponse.json(201, shown, [("location", shown["url"])])


MAX_BODY = 65536  # characters in a comment body; GitHub's 422 below is quoted in danger/danger#424 and later threads
MAX_LABEL_NAME = 50  # characters in a label name (github/docs#32156)


def _body_too_long(text: str, doc: str) -> FakeResponse | None:
    """GitHub's 422 for a body over 65536 characters (its current wording: code ``unprocessable``, field ``data``)."""
    if len(text) <= MAX_BODY:
        return None
    return errors.validation_failed("IssueComment", "data", "unprocessable", doc,
                                    message=f"Body is too long (maximum is {MAX_BODY} characters)")


def _comment(fake: FakeGitHub, call: Call):  # -> tuple[Repo | None, Comment | None]
    repo = fake.visible_repo(call)
    cid = _number(call, "comment_id")
    c = fake.comments.get(cid) if cid is not None else None
    if repo is None or c is None or c.repo is not repo:
        return repo, None
    return repo, c


@route("GET", _REPO + "/issues/comments/{comment_id}")
def get_comment(fake: FakeGitHub, call: Call) -> FakeResponse:
    repo, c = _comment(fake, call)
    if c is None:
        return errors.not_found(_DOCS["comment"])
    return FakeResponse.json(200, render.comment(call.base, repo, c))


@route("PATCH", _REPO + "/issues/comments/{comment_id}")
def update_comment(fake: FakeGitHub, call: Call) -> FakeResponse:
    doc = _DOCS["update_comment"]
    repo, c = _comment(fake, call)
    if c is None:
        return errors.not_found(doc)
    body, bad = _write_body(call, doc, repo)
    if bad is not None:
        return bad
    if not isinstance(body, dict) or not isinstance(body.get("body"), str):
        return errors.validation_failed("IssueComment", "body", "missing_field", doc)
    if (too_long := _body_too_long(body["body"], doc)) is not None:
        return too_long
    c.body = body["body"]
    c.updated_at = fake.now()
    return FakeResponse.json(200, render.comment(call.base, repo, c))


def _label_names(body: Any) -> list[str] | None:
    """The three accepted bodies: ``{"labels": [names]}``, a bare ``[names]`` (PyGithub), ``{"labels": [{"name"}]}``."""
    items = body.get("labels") if isinstance(body, dict) else body
    if not isinstance(items, list):
        return None
    names = []
    for item in items:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name.strip():
            return None
        names.append(name)
    return names


@route("POST", _REPO + "/issues/{number}/labels")
def add_labels(fake: FakeGitHub, call: Call) -> FakeResponse:
    doc = _DOCS["add_labels"]
    repo, iss = _repo_issue(fake, call)
    if iss is None:
        return errors.not_found(doc)
    body, bad = _write_body(call, doc, repo)
    if bad is not None:
        return bad
    names = _label_names(body)
    if names is None:
        return errors.invalid_request("For 'properties/labels', the value is not an array of label names.", doc)
    too_long = next((name for name in names if len(name) > MAX_LABEL_NAME), None)
    if too_long is not None:  # checked before any label is created: all or nothing
        return errors.error(422, "Validation Failed", doc,
                            errors=[{"value": too_long, "resource": "Label", "field": "name", "code": "invalid"}])
    added = []
    for name in names:
        lab = fake.add_label(repo.full_name, name)  # GitHub creates a label that does not exist yet
        if all(existing.id != lab.id for existing in iss.labels):
            iss.labels.append(lab)
            added.append(lab)
    if added:
        iss.updated_at = fake.now()
    sender = call.token.actor
    for lab in added:
        payload = issues_labeled_payload(fake, repo.full_name, iss.number, lab.name, sender=sender.login,
                                         base=call.base)
        fake.emit("issues", payload, repo=repo)
    return FakeResponse.json(200, [render.label(call.base, repo, lab) for lab in iss.labels])


@route("DELETE", _REPO + "/issues/{number}/labels/{name}")
def remove_label(fake: FakeGitHub, call: Call) -> FakeResponse:
    doc = _DOCS["remove_label"]
    repo, iss = _repo_issue(fake, call)
    if iss is None:
        return errors.not_found(doc)
    if (refusal := _need_token(call, doc, repo)) is not None:
        return refusal
    name = call.params["name"].lower()
    kept = [lab for lab in iss.labels if lab.name.lower() != name]
    if len(kept) == len(iss.labels):
        return errors.error(404, "Label does not exist", doc)
    iss.labels = kept
    iss.updated_at = fake.now()
    return FakeResponse.json(200, [render.label(call.base, repo, lab) for lab in iss.labels])


def _react(fake: FakeGitHub, call: Call, repo: Repo, reactions: list[Reaction], doc: str) -> FakeResponse:
    body, bad = _write_body(call, doc, repo)
    if bad is not None:
        return bad
    content = body.get("content") if isinstance(body, dict) else None
    if content not in REACTION_CONTENTS:
        return errors.validation_failed("Reaction", "content", "invalid", doc)
    actor = call.token.actor
    for r in reactions:
        if r.content == content and r.user.login == actor.login:
            return FakeResponse.json(200, render.reaction(call.base, r))  # an existing reaction: 200, not a second one
    r = Reaction(id=fake.new_id(), user=actor, content=content, created_at=fake.now())
    reactions.append(r)
    return FakeResponse.json(201, render.reaction(call.base, r))


@route("POST", _REPO + "/issues/{number}/reactions")
def react_issue(fake: FakeGitHub, call: Call) -> FakeResponse:
    repo, iss = _repo_issue(fake, call)
    if iss is None:
        return errors.not_found(_DOCS["issue_reaction"])
    return _react(fake, call, repo, iss.reactions, _DOCS["issue_reaction"])


@route("POST", _REPO + "/issues/comments/{comment_id}/reactions")
def react_comment(fake: FakeGitHub, call: Call) -> FakeResponse:
    repo, c = _comment(fake, call)
    if c is None:
        return errors.not_found(_DOCS["comment_reaction"])
    return _react(fake, call, repo, c.reactions, _DOCS["comment_reaction"])


@route("GET", _REPO + "/pulls/{number}")
def get_pull(fake: FakeGitHub, call: Call) -> FakeResponse:
    repo, iss = _repo_issue(fake, call)
    if iss is None or iss.pull is None:
        return errors.not_found(_DOCS["pull"])
    return FakeResponse.json(200, render.pull(call.base, repo, iss))


@route("GET", _REPO + "/contents")
@route("GET", _REPO + "/contents/{path+}")
def get_contents(fake: FakeGitHub, call: Call) -> FakeResponse:
    doc = _DOCS["contents"]
    repo = fake.visible_repo(call)
    if repo is None:
        return errors.not_found(doc)
    ref = call.request.query_param("ref")
    if ref and ref not in (repo.default_branch, f"refs/heads/{repo.default_branch}"):
        return errors.error(404, f"No commit found for the ref {ref}", doc)
    path = call.params.get("path", "").strip("/")
    if path in repo.files:
        return FakeResponse.json(200, render.content_file(call.base, repo, path, repo.files[path]))
    entries = _directory(repo, path)
    if not entries:
        return errors.not_found(doc)
    return FakeResponse.json(200, [render.content_dir_entry(call.base, repo, p, d) for p, d in entries])


def _directory(repo: Repo, path: str) -> list[tuple[str, bytes | None]]:
    """Entries directly under ``path`` (files with their bytes, sub-directories with None), sorted by name."""
    prefix = f"{path}/" if path else ""
    entries: dict[str, bytes | None] = {}
    for file_path, data in repo.files.items():
        if not file_path.startswith(prefix):
            continue
        head, sep, _ = file_path[len(prefix):].partition("/")
        entries[prefix + head] = None if sep else data
    return sorted(entries.items())


@route("POST", "/app/installations/{installation_id}/access_tokens", auth="jwt")
def create_access_token(fake: FakeGitHub, call: Call) -> FakeResponse:
    doc = _DOCS["access_token"]
    inst_id = _number(call, "installation_id")
    inst = fake.installations.get(inst_id) if inst_id is not None else None
    if inst is None or inst.app is not call.app:
        return errors.not_found(doc)
    body, bad = parse_body(call.request, doc)
    if bad is not None:
        return bad
    body = body or {}
    if not isinstance(body, dict):
        return errors.invalid_request("For 'links/0/schema', the body is not an object.", doc)
    token = fake.issue_token(inst)
    answer: dict[str, Any] = {
        "token": token.value,
        "expires_at": render.iso(token.expires_at),
        "permissions": dict(body.get("permissions") or inst.app.permissions),
        "repository_selection": "all" if inst.repositories is None else "selected",
    }
    wanted = body.get("repositories")
    if isinstance(wanted, list):
        answer["repositories"] = [render.repository(call.base, r, full=False) for r in fake.repos.values()
                                  if r.name in wanted and inst.covers(r)]
    return FakeResponse.json(201, answer)


@route("GET", _REPO + "/installation", auth="jwt")
def get_repo_installation(fake: FakeGitHub, call: Call) -> FakeResponse:
    repo = fake.repos.get(f"{call.params['owner']}/{call.params['repo']}".lower())
    inst = None
    if repo is not None:
        inst = next((i for i in fake.installations.values() if i.app is call.app and i.covers(repo)), None)
    if inst is None:
        return errors.not_found(_DOCS["repo_installation"])
    return FakeResponse.json(200, render.installation(call.base, inst))


@route("GET", "/user")
def get_authenticated_user(fake: FakeGitHub, call: Call) -> FakeResponse:
    doc = _DOCS["user"]
    if call.token is None:
        return errors.requires_authentication(doc)
    if call.token.installation is not None:  # an installation token acts as no user
        return errors.error(403, "Resource not accessible by integration", doc)
    me = call.token.actor
    owned = [r for r in fake.repos.values() if r.owner.login.lower() == me.login.lower()]
    return FakeResponse.json(200, render.private_user(call.base, me, owned))


@route("GET", _REPO + "/collaborators/{username}/permission")
def get_collaborator_permission(fake: FakeGitHub, call: Call) -> FakeResponse:
    """Owner: admin; collaborator: write (the fake keeps no finer roles); anyone else: read on a public repository,
    none on a private one. Only a caller with push access may ask (GitHub's 403 wording)."""
    doc = _DOCS["permission"]
    repo = fake.visible_repo(call)
    if repo is None:
        return errors.not_found(doc)
    if call.token is None:
        return errors.requires_authentication(doc)
    if _permission(repo, call.token.actor.login) not in ("admin", "write") and (
            call.token.installation is None or not call.token.installation.covers(repo)):
        return errors.error(403, "Must have push access to view collaborator permission.", doc)
    subject = fake.users.get(call.params["username"].lower())
    if subject is None:
        return errors.not_found(doc)
    return FakeResponse.json(200, render.collaborator_permission(call.base, subject,
                                                                 _permission(repo, subject.login)))


def _permission(repo: Repo, login: str) -> str:
    if login.lower() == repo.owner.login.lower():
        return "admin"
    if login.lower() in {c.lower() for c in repo.collaborators}:
        return "write"
    return "none" if repo.private else "read"
