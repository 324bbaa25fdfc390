"""githubkit's webhook models for the fake GitHub's specs, built once per process and shared.

``githubkit.webhooks.parse`` validates against the union of every action of an event, which pydantic builds on first
use (about a second per event and schema version); the model of the one action a payload carries is the same check
for that payload at a fraction of the cost. Both pinned schema versions are available."""

from __future__ import annotations

import functools
import importlib
import json
from typing import Any

from pydantic import BaseModel

DEFAULT_VERSION = "2026-03-10"  # githubkit's default API version


@functools.cache
def action_model(version: str, event: str, action: str) -> type[BaseModel]:
    """The model of ``event``.``action`` (e.g. ``issue_comment``, ``created``) in schema ``version``."""
    models = importlib.import_module(f"githubkit_schemas.v{version.replace('-', '_')}.models")
    name = "Webhook" + "".join(part.capitalize() for part in event.split("_")) + action.capitalize()
    model: type[BaseModel] = getattr(models, name)
    return model


def parse(event: str, body: bytes, version: str = DEFAULT_VERSION) -> Any:
    """``body`` (a delivery's raw bytes) validated by the model of its event and action; pydantic's
    ``ValidationError`` when it does not fit."""
    return action_model(version, event, json.loads(body)["action"]).model_validate_json(body)
