"""The orchestrator's model client: chat completions (planner, selector) and embeddings (retrieval), bounded.

Upstream the orchestrator's planner and selector call OpenAI; in e2e the twin points them at the fake model endpoint
deployed beside it (Service ``fake-openai``, :mod:`fakes.openai`), whose rules make the dispatch deterministic and
whose capture records what every turn advertised. The base URL is ``OPENAI_BASE_URL`` and the key
``OPENAI_API_KEY``, as an OpenAI SDK reads them; requests go through the twin's cluster network, so a model whose pod
is not Ready is a refused connection, as on a cluster.

Answers are read with the ``openai`` package's own types (``ChatCompletion``, ``CreateEmbeddingResponse``). Every
failure (no endpoint, an error status, a body that is not a completion) raises :class:`ModelFailed` with a sentence
the turn can quote: which call, what the model endpoint said.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from fakes.stack.network import ClusterClient, Unreachable

DEFAULT_BASE_URL = "http://fake-openai.controller-agent.svc.cluster.local/v1"
CHAT_MODEL = "gpt-4o-mini"
EMBEDDING_MODEL = "text-embedding-3-small"
EMBEDDING_SIZE = 1536
"""Dimensions of the stack's Qdrant collections, and of ``text-embedding-3-small``."""
TIMEOUT = 30.0
"""Seconds for one model request (the planner's own bound; a chat turn's budget is far larger)."""


class ModelFailed(RuntimeError):
    """A model call failed; the message names the call (``planner``, ``selector``, ``embeddings``) and the cause."""


@dataclass(frozen=True)
class ModelToolCall:
    """A tool call in a completion: ``id``, ``name``, ``arguments`` (JSON text, as the model sent it)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    """Choice 0 of a completion: ``text`` (``""`` when none), ``tool_calls``, ``finish_reason``."""

    text: str
    tool_calls: tuple[ModelToolCall, ...]
    finish_reason: str


class ModelClient:
    """Chat completions and embeddings at ``base_url`` with bearer ``api_key``, through the cluster network."""

    def __init__(
        self,
        http: ClusterClient,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str = "",
        chat_model: str = CHAT_MODEL,
        embedding_model: str = EMBEDDING_MODEL,
        timeout: float = TIMEOUT,
    ) -> None:
        self.http = http
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.chat_model = chat_model
        self.embedding_model = embedding_model
        self.timeout = timeout

    async def complete(
        self,
        purpose: str,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
    ) -> Completion:
        """One non-streamed chat completion. ``purpose`` names the call in errors (``planner``, ``selector``).
        ``tools`` are OpenAI function tools, sent only when non-empty (with ``tool_choice`` when given)."""
        body: dict[str, Any] = {"model": self.chat_model, "messages": messages}
        if tools:
            body["tools"] = tools
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        raw = await self._post(purpose, "/chat/completions", body)
        try:
            completion = ChatCompletion.model_validate(raw)
        except ValidationError as exc:
            raise ModelFailed(
                f"{purpose}: the model endpoint answered something that is not a chat completion: "
                f"{exc.errors()[0].get('msg', exc)}"
            ) from None
        if not completion.choices:
            raise ModelFailed(f"{purpose}: the model endpoint answered a completion without choices")
        choice = completion.choices[0]
        calls = tuple(
            ModelToolCall(c.id, c.function.name, c.function.arguments)
            for c in choice.message.tool_calls or []
            if c.type == "function"
        )
        return Completion(choice.message.content or "", calls, str(choice.finish_reason))

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One embedding per text, in order (one request for all of them)."""
        if not texts:
            return []
        raw = await self._post(
            "embeddings", "/embeddings", {"model": self.embedding_model, "input": texts, "encoding_format": "float"}
        )
        try:
            answer = CreateEmbeddingResponse.model_validate(raw)
        except ValidationError as exc:
            raise ModelFailed(
                f"embeddings: the model endpoint answered something that is not an embedding list: "
                f"{exc.errors()[0].get('msg', exc)}"
            ) from None
        vectors = sorted(answer.data, key=lambda item: item.index)
        if len(vectors) != len(texts):
            raise ModelFailed(f"embeddings: asked for {len(texts)} vectors, got {len(vectors)}")
        return [list(item.embedding) for item in vectors]

    async def _post(self, purpose: str, path: str, body: dict[str, Any]) -> Any:
        url = f"{self.base_url}{path}"
        try:
            response = await self.http.request(
                "POST", url, json=body, timeout=self.timeout, headers={"authorization": f"Bearer {self.api_key}"}
            )
        except Unreachable as exc:
            raise ModelFailed(f"{purpose}: the model endpoint is unreachable: {exc}") from None
        except httpx.HTTPError as exc:
            raise ModelFailed(f"{purpose}: POST {url} failed: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise ModelFailed(
                f"{purpose}: the model endpoint answered HTTP {response.status_code}: {_error_text(response)}"
            )
        try:
            return response.json()
        except json.JSONDecodeError:
            raise ModelFailed(
                f"{purpose}: the model endpoint answered a body that is not JSON: {response.text[:200]!r}"
            ) from None


def _error_text(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except (json.JSONDecodeError, AttributeError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return response.text[:300]
