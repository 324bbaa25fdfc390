"""The models the fake serves: ``GET /v1/models``, and what ``model`` may name on each endpoint.

Chat models answer ``/v1/chat/completions`` and ``/v1/responses``; embedding models answer ``/v1/embeddings`` with
their dimension (``text-embedding-3-small`` and ``ada-002``: 1536, ``-3-large``: 3072; only the ``-3`` models accept
``dimensions``). A dated snapshot of a known chat model (``gpt-4o-2024-08-06``) is accepted as that model. ``created``
values are approximate release dates (epoch seconds). Anything else is a 404 ``model_not_found``; add the model your
stack calls with ``OpenAIFake(models=[...])`` or ``--model``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelInfo:
    """One served model: ``kind`` is ``"chat"`` or ``"embedding"``; ``dimensions`` for embedding models."""

    id: str
    created: int
    owned_by: str = "system"
    kind: str = "chat"
    dimensions: int | None = None
    custom_dimensions: bool = False


DEFAULT_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("gpt-4o", 1715367049),
    ModelInfo("gpt-4o-mini", 1721172741),
    ModelInfo("gpt-4.1", 1744316542),
    ModelInfo("gpt-4.1-mini", 1744318173),
    ModelInfo("gpt-4.1-nano", 1744321707),
    ModelInfo("gpt-5", 1754425777),
    ModelInfo("gpt-5-mini", 1754425928),
    ModelInfo("o3-mini", 1737146383),
    ModelInfo("o4-mini", 1744225351),
    ModelInfo("text-embedding-3-small", 1705948997, kind="embedding", dimensions=1536, custom_dimensions=True),
    ModelInfo("text-embedding-3-large", 1705953180, kind="embedding", dimensions=3072, custom_dimensions=True),
    ModelInfo("text-embedding-ada-002", 1671217299, owned_by="openai-internal", kind="embedding", dimensions=1536),
)

_SNAPSHOT = re.compile(r"^(?P<base>.+)-\d{4}-\d{2}-\d{2}$")


class Catalog:
    """Known models by id (read-only after construction, so it needs no lock)."""

    def __init__(
        self, extra_chat: list[str] | tuple[str, ...] = (), extra_embedding: dict[str, int] | None = None
    ) -> None:
        self.models: dict[str, ModelInfo] = {m.id: m for m in DEFAULT_MODELS}
        for name in extra_chat:
            self.models[name] = ModelInfo(name, 1700000000, owned_by="fake")
        for name, dims in (extra_embedding or {}).items():
            if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
                raise ValueError(f"embedding model {name!r}: dimensions must be an integer >= 1, got {dims!r}")
            self.models[name] = ModelInfo(name, 1700000000, owned_by="fake", kind="embedding", dimensions=dims)

    def find(self, name: str) -> ModelInfo | None:
        """The model ``name`` names (a dated snapshot finds its base chat model), or ``None``."""
        if name in self.models:
            return self.models[name]
        match = _SNAPSHOT.match(name)
        base = self.models.get(match["base"]) if match else None
        return base if base is not None and base.kind == "chat" else None
