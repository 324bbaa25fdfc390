"""JSON shapes of the fake GitHub's objects, every URL field pointing back at the fake.

Shapes serve the union of the fields githubkit's 2022-11-28 and 2026-03-10 models require: nullable fields such as
``Label.archived_at`` and ``Issue.assignee`` are present as ``null``, never absent. Keys GitHub sends only for some
objects are sent only there: ``draft`` on issues that are pull requests, the relationship summaries on plain issues,
``parent_issue_url`` on sub-issues, ``type`` on issues of an organization's repository (issue types are an
organization feature; GitHub omits the key on a user's repository). ``pinned_comment`` is on every issue, ``null``
until a comment is pinned, as GitHub answers since pinned comments shipped. ``base`` is the fake's public
base URL without a trailing slash (configured, else from the ``Host`` header), so clients that follow ``url`` fields
(PyGithub does) stay on the fake. Web (``html_url``) links also point at the fake; it serves no HTML and answers them
501.
"""

from __future__ import annotations

import base64
from email.utils import formatdate
from typing import Any
from urllib.parse import quote

from fakes.github.state import (
    REACTION_CONTENTS,
    App,
    Comment,
    Installation,
    Issue,
    IssueType,
    Label,
    Reaction,
    Repo,
    User,
    git_blob_sha,
    iso,
)
from fakes.github.wire import RAW_PREFIX


def http_date(ts: float) -> str:
    """Epoch seconds as an HTTP date (``Last-Modified``): ``Mon, 28 Apr 2025 09:48:55 GMT``, whole seconds."""
    return formatdate(int(ts), usegmt=True)


def node_id(prefix: str, ident: int) -> str:
    """A stable GraphQL-style node id (opaque to clients; only its presence and type matter)."""
    return prefix + base64.b64encode(f"fake:{ident}".encode()).decode().rstrip("=")


def user(base: str, u: User) -> dict[str, Any]:
    """simple-user: the 18 fields githubkit requires plus ``user_view_type``."""
    api = f"{base}/users/{u.login}"
    return {
        "login": u.login,
        "id": u.id,
        "node_id": node_id("U_" if u.type != "Bot" else "BOT_", u.id),
        "avatar_url": f"{base}/avatars/u/{u.id}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{base}/{u.login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": u.type,
        "user_view_type": "public",
        "site_admin": False,
    }


def private_user(base: str, u: User, repos: list[Repo], *, private: bool) -> dict[str, Any]:
    """The authenticated user (``GET /user``): simple-user plus the public profile and counts; with ``private`` (an
    OAuth token with the ``user`` scope) also the private fields (private gists and repositories, disk usage,
    collaborators, two-factor authentication), which GitHub shows to nobody else.

    Profile text the fake does not hold is ``null`` (``blog`` is ``""``, as GitHub sends for an empty one); repository
    counts come from ``repos``, the repositories this user owns.
    """
    hidden = sum(1 for r in repos if r.private)
    when = iso(u.created_at)
    shape = {
        **user(base, u),
        "name": None,
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "twitter_username": None,
        "notification_email": None,
        "public_repos": len(repos) - hidden,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": when,
        "updated_at": when,
    }
    if private:
        shape.update(
            private_gists=0,
            total_private_repos=hidden,
            owned_private_repos=hidden,
            disk_usage=0,
            collaborators=0,
            two_factor_authentication=False,
        )
    return shape


def collaborator_permission(base: str, u: User, permission: str) -> dict[str, Any]:
    """repository-collaborator-permission: legacy ``permission`` (admin/write/read/none), ``role_name`` and the
    user as a collaborator (with its ``permissions`` flags)."""
    flags = {
        "admin": permission == "admin",
        "maintain": permission == "admin",
        "push": permission in ("admin", "write"),
        "triage": permission in ("admin", "write"),
        "pull": permission != "none",
    }
    return {
        "permission": permission,
        "role_name": permission,
        "user": {**user(base, u), "permissions": flags, "role_name": permission},
    }


def label(base: str, repo: Repo, lab: Label, *, embedded: bool = False) -> dict[str, Any]:
    """label: ``archived_at`` and ``archived_by`` null (the fake archives no label). A label ``embedded`` in an issue
    or pull request has no ``archived_at``: GitHub's description of those label items (2022-11-28 and 2026-03-10)
    has ``archived_by`` only."""
    shape = {
        "id": lab.id,
        "node_id": node_id("LA_", lab.id),
        "url": f"{base}/repos/{repo.full_name}/labels/{_quote(lab.name)}",
        "name": lab.name,
        "description": lab.description,
        "color": lab.color,
        "default": lab.default,
        "archived_at": None,
        "archived_by": None,
    }
    if embedded:
        del shape["archived_at"]
    return shape


def reaction(base: str, r: Reaction) -> dict[str, Any]:
    return {
        "id": r.id,
        "node_id": node_id("REA_", r.id),
        "user": user(base, r.user),
        "content": r.content,
        "created_at": iso(r.created_at),
    }


def reaction_rollup(url: str, reactions: list[Reaction]) -> dict[str, Any]:
    counts = {c: sum(1 for r in reactions if r.content == c) for c in REACTION_CONTENTS}
    return {"url": url, "total_count": len(reactions), **counts}


def repo_urls(base: str, full_name: str) -> dict[str, str]:
    api = f"{base}/repos/{full_name}"
    templated = {
        "archive_url": "/{archive_format}{/ref}",
        "assignees_url": "/assignees{/user}",
        "blobs_url": "/git/blobs{/sha}",
        "branches_url": "/branches{/branch}",
        "collaborators_url": "/collaborators{/collaborator}",
        "comments_url": "/comments{/number}",
        "commits_url": "/commits{/sha}",
        "compare_url": "/compare/{base}...{head}",
        "contents_url": "/contents/{+path}",
        "contributors_url": "/contributors",
        "deployments_url": "/deployments",
        "downloads_url": "/downloads",
        "events_url": "/events",
        "forks_url": "/forks",
        "git_commits_url": "/git/commits{/sha}",
        "git_refs_url": "/git/refs{/sha}",
        "git_tags_url": "/git/tags{/sha}",
        "hooks_url": "/hooks",
        "issue_comment_url": "/issues/comments{/number}",
        "issue_events_url": "/issues/events{/number}",
        "issues_url": "/issues{/number}",
        "keys_url": "/keys{/key_id}",
        "labels_url": "/labels{/name}",
        "languages_url": "/languages",
        "merges_url": "/merges",
        "milestones_url": "/milestones{/number}",
        "notifications_url": "/notifications{?since,all,participating}",
        "pulls_url": "/pulls{/number}",
        "releases_url": "/releases{/id}",
        "stargazers_url": "/stargazers",
        "statuses_url": "/statuses/{sha}",
        "subscribers_url": "/subscribers",
        "subscription_url": "/subscription",
        "tags_url": "/tags",
        "teams_url": "/teams",
        "trees_url": "/git/trees{/sha}",
    }
    urls = {key: api + suffix for key, suffix in templated.items()}
    host = base.split("://", 1)[-1]
    urls.update(
        url=api,
        html_url=f"{base}/{full_name}",
        git_url=f"git://{host}/{full_name}.git",
        ssh_url=f"git@{host}:{full_name}.git",
        clone_url=f"{base}/{full_name}.git",
        svn_url=f"{base}/{full_name}",
    )
    return urls


def repository(base: str, repo: Repo, *, full: bool = True, temp_clone_token: str | None = None) -> dict[str, Any]:
    """full-repository (``GET /repos/{o}/{r}``); with ``full=False`` the nested repository of pulls and webhooks.
    ``temp_clone_token`` is what the caller may see (the route decides: null, ``""`` or a token)."""
    open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
    created = iso(repo.created_at)
    body: dict[str, Any] = {
        "id": repo.id,
        "node_id": node_id("R_", repo.id),
        "name": repo.name,
        "full_name": repo.full_name,
        "owner": user(base, repo.owner),
        "private": repo.private,
        "description": repo.description,
        "fork": False,
        **repo_urls(base, repo.full_name),
        "mirror_url": None,
        "homepage": None,
        "language": None,
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "size": sum(len(v) for v in repo.files.values()) // 1024,
        "default_branch": repo.default_branch,
        "open_issues_count": open_issues,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": False,
        "has_wiki": False,
        "has_pages": False,
        "has_downloads": False,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "private" if repo.private else "public",
        "pushed_at": created,
        "created_at": created,
        "updated_at": created,
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "license": None,
        "forks": 0,
        "open_issues": open_issues,
        "watchers": 0,
    }
    if full:
        body.update(subscribers_count=0, network_count=0, temp_clone_token=temp_clone_token)
    return body


def _issue_urls(base: str, repo: Repo, number: int) -> dict[str, str]:
    api = f"{base}/repos/{repo.full_name}/issues/{number}"
    return {
        "url": api,
        "repository_url": f"{base}/repos/{repo.full_name}",
        "labels_url": f"{api}/labels{{/name}}",
        "comments_url": f"{api}/comments",
        "events_url": f"{api}/events",
        "timeline_url": f"{api}/timeline",
    }


def issue_type(t: IssueType) -> dict[str, Any]:
    when = iso(t.created_at)
    return {
        "id": t.id,
        "node_id": node_id("IT_", t.id),
        "name": t.name,
        "description": t.description,
        "color": t.color,
        "created_at": when,
        "updated_at": when,
        "is_enabled": t.is_enabled,
    }


def _relationships(base: str, repo: Repo, iss: Issue) -> dict[str, Any]:
    """The summaries GitHub sends on plain issues: sub-issues (children by ``parent``) and dependencies."""
    children = [i for i in repo.issues.values() if i.parent == iss.number]
    done = sum(1 for i in children if i.state == "closed")
    blockers = [repo.issues[n] for n in iss.blocked_by if n in repo.issues]
    blocking = [i for i in repo.issues.values() if iss.number in i.blocked_by]
    shape: dict[str, Any] = {
        "sub_issues_summary": {
            "total": len(children),
            "completed": done,
            "percent_completed": done * 100 // len(children) if children else 0,
        },
        "issue_dependencies_summary": {
            "blocked_by": sum(1 for i in blockers if i.state == "open"),
            "total_blocked_by": len(blockers),
            "blocking": sum(1 for i in blocking if i.state == "open"),
            "total_blocking": len(blocking),
        },
    }
    if iss.parent is not None:
        shape["parent_issue_url"] = f"{base}/repos/{repo.full_name}/issues/{iss.parent}"
    return shape


def issue(base: str, repo: Repo, iss: Issue, *, webhook: bool = False) -> dict[str, Any]:
    """issue: a pull request comes back as an issue carrying ``pull_request`` and ``draft``; a plain issue carries the
    relationship summaries (and ``parent_issue_url`` when it is a sub-issue) instead. In a ``webhook`` payload its
    labels are whole labels (the webhook descriptions require ``archived_at``); in a REST answer, issue label items."""
    kind = "pull" if iss.pull is not None else "issues"
    urls = _issue_urls(base, repo, iss.number)
    body: dict[str, Any] = {
        "id": iss.id,
        "node_id": node_id("I_", iss.id),
        **urls,
        "html_url": f"{base}/{repo.full_name}/{kind}/{iss.number}",
        "number": iss.number,
        "state": iss.state,
        "state_reason": None,
        "title": iss.title,
        "body": iss.body,
        "user": user(base, iss.user),
        "labels": [label(base, repo, lab, embedded=not webhook) for lab in iss.labels],
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "locked": False,
        "active_lock_reason": None,
        "comments": len(iss.comment_ids),
        "closed_at": iso(iss.closed_at),
        "created_at": iso(iss.created_at),
        "updated_at": iso(iss.updated_at),
        "closed_by": None,
        "author_association": _association(repo, iss.user),
        "performed_via_github_app": None,
        "reactions": reaction_rollup(f"{urls['url']}/reactions", iss.reactions),
        "pinned_comment": comment(base, repo, iss.pinned_comment) if iss.pinned_comment is not None else None,
    }
    if repo.owner.type == "Organization":
        body["type"] = issue_type(iss.type) if iss.type is not None else None
    if iss.pull is None:
        body.update(_relationships(base, repo, iss))
    else:
        pulls = f"{base}/repos/{repo.full_name}/pulls/{iss.number}"
        body["draft"] = iss.pull.draft
        body["pull_request"] = {
            "url": pulls,
            "html_url": f"{base}/{repo.full_name}/pull/{iss.number}",
            "diff_url": f"{base}/{repo.full_name}/pull/{iss.number}.diff",
            "patch_url": f"{base}/{repo.full_name}/pull/{iss.number}.patch",
            "merged_at": None,
        }
    return body


def comment(base: str, repo: Repo, c: Comment) -> dict[str, Any]:
    url = f"{base}/repos/{repo.full_name}/issues/comments/{c.id}"
    return {
        "id": c.id,
        "node_id": node_id("IC_", c.id),
        "url": url,
        "html_url": f"{base}/{repo.full_name}/issues/{c.issue_number}#issuecomment-{c.id}",
        "body": c.body,
        "user": user(base, c.user),
        "created_at": iso(c.created_at),
        "updated_at": iso(c.updated_at),
        "issue_url": f"{base}/repos/{repo.full_name}/issues/{c.issue_number}",
        "author_association": _association(repo, c.user),
        "performed_via_github_app": app(base, c.via_app) if c.via_app is not None else None,
        "reactions": reaction_rollup(f"{url}/reactions", c.reactions),
    }


def _branch(base: str, repo: Repo, ref: str, sha: str) -> dict[str, Any]:
    return {
        "label": f"{repo.owner.login}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user(base, repo.owner),
        "repo": repository(base, repo, full=False),
    }


def pull(base: str, repo: Repo, iss: Issue, *, webhook: bool = False) -> dict[str, Any]:
    """pull-request (``GET /repos/{o}/{r}/pulls/{n}``); ``iss.pull`` must be set; labels as in :func:`issue`. Until
    GitHub has computed the merge (``iss.pull.computed``), ``mergeable`` and ``rebaseable`` are null and
    ``mergeable_state`` is ``unknown``; ``merge_commit_sha`` (the test merge commit) has a value throughout."""
    assert iss.pull is not None
    assert iss.pull_id is not None
    p = iss.pull
    api = f"{base}/repos/{repo.full_name}/pulls/{iss.number}"
    html = f"{base}/{repo.full_name}/pull/{iss.number}"
    issue_api = f"{base}/repos/{repo.full_name}/issues/{iss.number}"
    statuses = f"{base}/repos/{repo.full_name}/statuses/{p.head_sha}"
    return {
        "url": api,
        "id": iss.pull_id,
        "node_id": node_id("PR_", iss.pull_id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": issue_api,
        "commits_url": f"{api}/commits",
        "review_comments_url": f"{api}/comments",
        "review_comment_url": f"{base}/repos/{repo.full_name}/pulls/comments{{/number}}",
        "comments_url": f"{issue_api}/comments",
        "statuses_url": statuses,
        "number": iss.number,
        "state": iss.state,
        "locked": False,
        "title": iss.title,
        "user": user(base, iss.user),
        "body": iss.body,
        "labels": [label(base, repo, lab, embedded=not webhook) for lab in iss.labels],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": iso(iss.created_at),
        "updated_at": iso(iss.updated_at),
        "closed_at": iso(iss.closed_at),
        "merged_at": None,
        "merge_commit_sha": p.merge_commit_sha,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": _branch(base, repo, p.head_ref, p.head_sha),
        "base": _branch(base, repo, p.base_ref, p.base_sha),
        "_links": {
            "self": {"href": api},
            "html": {"href": html},
            "issue": {"href": issue_api},
            "comments": {"href": f"{issue_api}/comments"},
            "review_comments": {"href": f"{api}/comments"},
            "review_comment": {"href": f"{base}/repos/{repo.full_name}/pulls/comments{{/number}}"},
            "commits": {"href": f"{api}/commits"},
            "statuses": {"href": statuses},
        },
        "author_association": _association(repo, iss.user),
        "auto_merge": None,
        "draft": p.draft,
        "merged": False,
        "mergeable": p.mergeable if p.computed else None,
        "rebaseable": p.mergeable if p.computed else None,
        "mergeable_state": ("clean" if p.mergeable else "dirty") if p.computed else "unknown",
        "merged_by": None,
        "comments": len(iss.comment_ids),
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": 1,
        "additions": 0,
        "deletions": 0,
        "changed_files": 0,
    }


def content_file(base: str, repo: Repo, path: str, data: bytes) -> dict[str, Any]:
    """content-file: base64 wrapped at 60 characters with a trailing newline, as GitHub sends it."""
    encoded = base64.b64encode(data).decode()
    wrapped = "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))
    return {**_content_entry(base, repo, path, "file", data), "encoding": "base64", "content": wrapped}


def content_dir_entry(base: str, repo: Repo, path: str, data: bytes | None) -> dict[str, Any]:
    return _content_entry(base, repo, path, "file" if data is not None else "dir", data)


def _content_entry(base: str, repo: Repo, path: str, kind: str, data: bytes | None) -> dict[str, Any]:
    sha = git_blob_sha(data) if data is not None else git_blob_sha(path.encode())  # a dir's tree sha is opaque
    url = f"{base}/repos/{repo.full_name}/contents/{_quote(path, safe='/')}?ref={repo.default_branch}"
    html = f"{base}/{repo.full_name}/{'blob' if kind == 'file' else 'tree'}/{repo.default_branch}/{path}"
    git_url = f"{base}/repos/{repo.full_name}/git/{'blobs' if kind == 'file' else 'trees'}/{sha}"
    raw = f"{base}{RAW_PREFIX}{repo.full_name}/{repo.default_branch}/{_quote(path, safe='/')}"
    download = raw if kind == "file" else None
    return {
        "type": kind,
        "size": len(data) if data is not None else 0,
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        "url": url,
        "git_url": git_url,
        "html_url": html,
        "download_url": download,
        "_links": {"self": url, "git": git_url, "html": html},
    }


def app(base: str, a: App) -> dict[str, Any]:
    """integration (the GitHub App), as in ``performed_via_github_app``."""
    return {
        "id": a.id,
        "slug": a.slug,
        "node_id": node_id("A_", a.id),
        "client_id": a.client_id,
        "owner": user(base, a.owner),
        "name": a.name,
        "description": None,
        "external_url": f"{base}/apps/{a.slug}",
        "html_url": f"{base}/apps/{a.slug}",
        "created_at": iso(a.created_at),
        "updated_at": iso(a.created_at),
        "permissions": dict(a.permissions),
        "events": list(a.events),
    }


def installation(base: str, inst: Installation) -> dict[str, Any]:
    return {
        "id": inst.id,
        "client_id": inst.app.client_id,
        "account": user(base, inst.account),
        "repository_selection": "all" if inst.repositories is None else "selected",
        "access_tokens_url": f"{base}/app/installations/{inst.id}/access_tokens",
        "repositories_url": f"{base}/installation/repositories",
        "html_url": f"{base}/settings/installations/{inst.id}",
        "app_id": inst.app.id,
        "app_slug": inst.app.slug,
        "target_id": inst.account.id,
        "target_type": "Organization" if inst.account.type == "Organization" else "User",
        "permissions": dict(inst.app.permissions),
        "events": list(inst.app.events),
        "created_at": iso(inst.created_at),
        "updated_at": iso(inst.created_at),
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }


def _association(repo: Repo, u: User) -> str:
    if u.login.lower() == repo.owner.login.lower():
        return "OWNER"
    if u.login.lower() in {c.lower() for c in repo.collaborators}:
        return "COLLABORATOR"
    return "NONE"


def _quote(text: str, safe: str = "") -> str:
    return quote(text, safe=safe)
