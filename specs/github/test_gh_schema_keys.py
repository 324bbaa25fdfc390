"""Every JSON answer of the fake GitHub, key by key against GitHub's REST description for API version 2022-11-28 (the
fake's default), both ways: no key the description does not define, no key it requires missing. githubkit's
generated models for that version are the machine-readable copy of the description used here; nested objects are
checked too (the first items of a list stand for the rest). The fake has no deliberate difference here today; one
added later belongs in fakes/github/README.md with its reason, and in an allow-list in this file.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

import githubkit_schemas.v2022_11_28.models as described
import httpx
import jwt
import pytest
from pydantic import BaseModel

from fakes.github import FakeGitHub, in_process
from fakes.server import FakeHandle
from specs.github.world import REPO, TOKEN, seed

AUTH = {"authorization": f"token {TOKEN}"}


@dataclass(frozen=True)
class Answer:
    """One route's answer and the described model of its body (a list of it where ``many``)."""

    route: str
    model: type[BaseModel]
    body: Any


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The described models an annotation can hold: through ``Union``, ``X | None``, ``list[...]`` and githubkit's
    ``Missing[...]`` (a union with its unset marker)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if get_origin(annotation) in (Union, types.UnionType, list) or get_args(annotation):
        return [model for arg in get_args(annotation) for model in _models_in(arg)]
    return []


def _keys(model: type[BaseModel]) -> dict[str, bool]:
    """Wire key -> required, for one described model."""
    return {field.alias or name: field.is_required() for name, field in model.model_fields.items()}


def _closest(candidates: list[type[BaseModel]], value: dict[str, Any]) -> type[BaseModel]:
    """Of a union's models, the one the value fits best: fewest keys missing or undescribed."""

    def misfit(model: type[BaseModel]) -> int:
        keys = _keys(model)
        return len(set(value) - set(keys)) + sum(1 for key, required in keys.items() if required and key not in value)

    return min(candidates, key=misfit)


def differences(value: Any, annotation: Any, path: str = "$") -> Iterator[tuple[str, str, str]]:
    """``(path, key, "undescribed" | "missing")`` for every key of ``value`` the description does not define and
    every key it requires that ``value`` lacks, recursively."""
    if isinstance(value, list):
        for item in value[:3]:
            yield from differences(item, annotation, f"{path}[]")
        return
    models = _models_in(annotation)
    if not isinstance(value, dict) or not models:  # a scalar, or a free-form object (permissions, ...)
        return
    model = _closest(models, value)
    keys = _keys(model)
    for key in sorted(set(value) - set(keys)):
        yield path, key, "undescribed"
    for key in sorted(k for k, required in keys.items() if required and k not in value):
        yield path, key, "missing"
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key in value:
            yield from differences(value[key], field.annotation, f"{path}.{key}")


def _app_jwt(fake: FakeGitHub, app_id: int, key: str) -> str:
    now = int(fake.now())
    return jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(app_id)}, key, algorithm="RS256")


def _answers(handle: FakeHandle[FakeGitHub]) -> Iterator[Answer]:
    """One answer per route the fake serves as JSON, from a seeded world where every optional shape appears."""
    fake = handle.app
    fake.add_pull(REPO, "A pull", head="feat", user="alice")
    comment = fake.add_comment(REPO, 1, "first", user="alice")
    app = fake.add_app("reply-bot")
    inst = fake.add_installation(app.id, "octo")
    calls: list[tuple[str, type[BaseModel], Callable[[httpx.Client], httpx.Response]]] = [
        ("GET repository", described.FullRepository, lambda h: h.get(f"/repos/{REPO}")),
        ("GET issues", described.Issue, lambda h: h.get(f"/repos/{REPO}/issues", params={"state": "all"})),
        ("GET issue", described.Issue, lambda h: h.get(f"/repos/{REPO}/issues/1")),
        ("GET issue (a pull request)", described.Issue, lambda h: h.get(f"/repos/{REPO}/issues/2")),
        ("GET comments", described.IssueComment, lambda h: h.get(f"/repos/{REPO}/issues/1/comments")),
        (
            "POST comment",
            described.IssueComment,
            lambda h: h.post(f"/repos/{REPO}/issues/1/comments", json={"body": "hi"}),
        ),
        ("GET comment", described.IssueComment, lambda h: h.get(f"/repos/{REPO}/issues/comments/{comment.id}")),
        (
            "PATCH comment",
            described.IssueComment,
            lambda h: h.patch(f"/repos/{REPO}/issues/comments/{comment.id}", json={"body": "edited"}),
        ),
        ("POST labels", described.Label, lambda h: h.post(f"/repos/{REPO}/issues/1/labels", json=["triage"])),
        ("DELETE label", described.Label, lambda h: h.delete(f"/repos/{REPO}/issues/1/labels/triage")),
        (
            "POST issue reaction",
            described.Reaction,
            lambda h: h.post(f"/repos/{REPO}/issues/1/reactions", json={"content": "+1"}),
        ),
        (
            "POST comment reaction",
            described.Reaction,
            lambda h: h.post(f"/repos/{REPO}/issues/comments/{comment.id}/reactions", json={"content": "eyes"}),
        ),
        ("GET pull request", described.PullRequest, lambda h: h.get(f"/repos/{REPO}/pulls/2")),
        ("GET file", described.ContentFile, lambda h: h.get(f"/repos/{REPO}/contents/README.md")),
        ("GET directory", described.ContentDirectoryItems, lambda h: h.get(f"/repos/{REPO}/contents/docs")),
        ("GET user", described.PrivateUser, lambda h: h.get("/user")),
        (
            "GET collaborator permission",
            described.RepositoryCollaboratorPermission,
            lambda h: h.get("/repos/octo/secret/collaborators/alice/permission"),
        ),
    ]
    with handle.client(headers=AUTH) as http:
        for route, model, call in calls:
            answer = call(http)
            assert answer.is_success, f"{route}: {answer.status_code} {answer.text[:200]}"
            yield Answer(route, model, answer.json())
    bearer = {"authorization": f"Bearer {_app_jwt(fake, app.id, app.private_key_pem)}"}
    with handle.client(headers=bearer) as http:
        token = http.post(f"/app/installations/{inst.id}/access_tokens", json={"repositories": ["hello"]})
        yield Answer("POST installation token", described.InstallationToken, token.json())
        yield Answer(
            "GET repository installation", described.Installation, http.get(f"/repos/{REPO}/installation").json()
        )


@pytest.fixture(scope="module")
def answers() -> list[Answer]:
    with in_process() as handle:
        seed(handle.app)
        return list(_answers(handle))


def _route_ids() -> list[str]:
    with in_process() as handle:
        seed(handle.app)
        return [a.route for a in _answers(handle)]


@pytest.mark.parametrize("route", _route_ids())
def test_each_answer_has_exactly_the_described_keys(answers: list[Answer], route: str) -> None:
    answer = next(a for a in answers if a.route == route)
    found = [f"{path}.{key} is {kind}" for path, key, kind in differences(answer.body, answer.model)]
    assert found == [], f"{route} differs from GitHub's description (2022-11-28): {found}"


def test_the_comparison_catches_an_extra_and_a_missing_key() -> None:
    label = {"id": 1, "node_id": "x", "url": "u", "name": "n", "description": None, "color": "c", "default": False}
    found = set(differences({**label, "archived_at": None, "colour": "c"}, described.Label))
    assert found == {("$", "colour", "undescribed"), ("$", "archived_by", "missing")}
