"""Caller ("consumer") tools: the definitions a chat or ``/invoke`` request brings, checked, and their Qdrant store.

A client may send OpenAI function tools with its turn (``tools: [{"type": "function", "function": {"name",
"description", "parameters"}}]``). The orchestrator does not run them: when the model calls one, the call goes back
to the client (a streamed ``tool_calls`` delta, or ``pendingToolCalls`` of an invocation) and the client resumes
the conversation with the result. Inside the orchestrator they live in their own namespace, ``caller:<name>``, so a
skill can order one (``caller:get_device_battery``) without ever colliding with a catalog Tool; the namespace never
leaves the process (the model and the client see bare names).

:func:`parse_tools` checks a request's definitions as the OpenAI API would (a function name of 1-64 characters from
``[a-zA-Z0-9_-]``): a bad one is a 400 naming the offending field, never an invocation.

:class:`CallerToolStore` is the per-deployment cache of definitions in the Qdrant collection ``caller_tools`` (kept
apart from the catalog's ``tools``, ``skills`` and ``agents``; cosine, 1536 dimensions):

- a point per distinct definition; its id is derived from the SHA-256 of the canonical JSON of ``{name,
  description, parameters}`` and its payload is ``{hash, name, description, parametersJson, lastSeenAt}``
  (``lastSeenAt`` epoch milliseconds). Indexing embeds only definitions whose point does not exist yet: a resent
  identical definition costs no embedding and adds no point (+0), an edited one adds one (+1). Because of that cache,
  fixed definitions are a permanent hit across runs; specs put a run token into their descriptions (failure mode 21
  in specs/cluster/README.md);
- a hit only refreshes ``lastSeenAt`` (``set_payload`` with ``wait=true``: a ``wait=false`` touch races the prune,
  failure mode 22); :meth:`prune` deletes by filter ``lastSeenAt < now - max_age`` (``wait=true``);
- :meth:`search` ranks only the definitions supplied on this turn (a ``has_id`` filter), so another client's tools
  never reach this turn's model, and returns at most ``k`` (the deployment's ``callerToolTopK``: 3 in e2e).

The store talks to Qdrant through ``qdrant(method, path, body)`` -> the ``result`` of Qdrant's envelope (raising on
an error status), so the same code runs in the twin's orchestrator and, from a spec, through a port-forward.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fakes.stack.model import EMBEDDING_SIZE

COLLECTION = "caller_tools"
PREFIX = "caller:"
"""The orchestrator-internal namespace of caller tools (never sent to the model or the client)."""
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_TOOLS = 128

Qdrant = Callable[[str, str, "dict[str, Any] | None"], Awaitable[Any]]
"""``await qdrant(method, path, body)`` -> Qdrant's ``result``; raises on an error status."""
Embedder = Callable[[list[str]], Awaitable[list[list[float]]]]
Clock = Callable[[], float]
"""Epoch milliseconds."""


class BadTools(ValueError):
    """A request's ``tools`` the API refuses; ``param`` names the field (``tools[2].function.name``)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class CallerTool:
    """One caller-supplied function tool: ``name`` (bare), ``description``, ``parameters`` (a JSON Schema object)."""

    name: str
    description: str
    parameters: dict[str, Any]

    @property
    def internal_name(self) -> str:
        return PREFIX + self.name

    def canonical(self) -> str:
        return json.dumps(
            {"name": self.name, "description": self.description, "parameters": self.parameters},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.canonical().encode()).hexdigest()

    @property
    def point_id(self) -> str:
        return str(uuid.UUID(hex=self.hash[:32]))

    def embedding_text(self) -> str:
        return f"{self.name}: {self.description}"

    def openai(self, name: str | None = None) -> dict[str, Any]:
        """The tool as an OpenAI function tool, under ``name`` (default: the bare name)."""
        function: dict[str, Any] = {"name": name or self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


def parse_tools(raw: Any) -> list[CallerTool]:
    """The request's ``tools`` as :class:`CallerTool` (``None`` or ``[]``: none). Raises :class:`BadTools`."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadTools(f"Invalid type for 'tools': expected an array, but got {type(raw).__name__} instead.", "tools")
    if len(raw) > MAX_TOOLS:
        raise BadTools(
            f"Invalid 'tools': array too long. Expected an array with maximum length {MAX_TOOLS}, but got "
            f"an array with length {len(raw)} instead.",
            "tools",
        )
    tools: list[CallerTool] = []
    for index, item in enumerate(raw):
        where = f"tools[{index}]"
        if not isinstance(item, dict) or item.get("type") != "function" or not isinstance(item.get("function"), dict):
            raise BadTools(
                f"Invalid '{where}': expected a function tool {{type: 'function', function: {{name, ...}}}}.", where
            )
        function = item["function"]
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise BadTools(
                f"Invalid '{where}.function.name': string does not match pattern. Expected a string that "
                f"matches the pattern '^[a-zA-Z0-9_-]+$' (1 to 64 characters), got {name!r}.",
                f"{where}.function.name",
            )
        description = function.get("description", "")
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(description, str):
            raise BadTools(
                f"Invalid type for '{where}.function.description': expected a string.", f"{where}.function.description"
            )
        if not isinstance(parameters, dict):
            raise BadTools(
                f"Invalid type for '{where}.function.parameters': expected an object.", f"{where}.function.parameters"
            )
        if any(t.name == name for t in tools):
            raise BadTools(f"Invalid '{where}.function.name': duplicate tool name {name!r}.", f"{where}.function.name")
        tools.append(CallerTool(name, description, parameters))
    return tools


def bare_name(name: str) -> str:
    """``name`` without the internal ``caller:`` namespace."""
    return name.removeprefix(PREFIX)


def epoch_ms() -> float:
    return time.time() * 1000.0


class CallerToolStore:
    """The ``caller_tools`` cache (see the module docstring). ``embed`` turns texts into 1536-float vectors;
    ``clock`` gives epoch milliseconds. Raises what ``qdrant`` and ``embed`` raise."""

    def __init__(
        self, qdrant: Qdrant, embed: Embedder, *, collection: str = COLLECTION, clock: Clock = epoch_ms
    ) -> None:
        self.qdrant = qdrant
        self.embed = embed
        self.collection = collection
        self.clock = clock

    async def ensure(self, size: int = EMBEDDING_SIZE) -> None:
        """Create the collection (cosine, ``size`` dimensions) unless it exists."""
        if not await self._exists():
            await self.qdrant(
                "PUT", f"/collections/{self.collection}", {"vectors": {"size": size, "distance": "Cosine"}}
            )

    async def drop(self) -> None:
        """Delete the collection (a throwaway one: the deployment's own is never dropped)."""
        await self.qdrant("DELETE", f"/collections/{self.collection}", None)

    async def index(self, tools: Sequence[CallerTool]) -> list[str]:
        """Store every definition not stored yet (one embedding request for the new ones), refresh ``lastSeenAt``
        of the ones that are; returns their point ids in ``tools`` order."""
        if not tools:
            return []
        ids = [tool.point_id for tool in tools]
        found = await self.qdrant(
            "POST", f"/collections/{self.collection}/points", {"ids": ids, "with_payload": False, "with_vector": False}
        )
        stored = {str(point["id"]) for point in found}
        now = int(self.clock())
        fresh = [tool for tool in tools if tool.point_id not in stored]
        if fresh:
            vectors = await self.embed([tool.embedding_text() for tool in fresh])
            points = [
                {"id": tool.point_id, "vector": vector, "payload": self._payload(tool, now)}
                for tool, vector in zip(fresh, vectors, strict=True)
            ]
            await self.qdrant("PUT", f"/collections/{self.collection}/points?wait=true", {"points": points})
        seen = [tool.point_id for tool in tools if tool.point_id in stored]
        if seen:
            await self.qdrant(
                "POST",
                f"/collections/{self.collection}/points/payload?wait=true",
                {"payload": {"lastSeenAt": now}, "points": seen},
            )
        return ids

    async def search(self, vector: list[float], ids: Sequence[str], k: int) -> list[str]:
        """Names of the at most ``k`` definitions among ``ids`` nearest to ``vector``, best first."""
        if not ids or k <= 0:
            return []
        hits = await self.qdrant(
            "POST",
            f"/collections/{self.collection}/points/search",
            {"vector": vector, "limit": k, "with_payload": ["name"], "filter": {"must": [{"has_id": list(ids)}]}},
        )
        return [str(hit["payload"]["name"]) for hit in hits]

    async def prune(self, max_age_ms: float) -> None:
        """Delete every definition not seen for ``max_age_ms`` milliseconds (by filter, ``wait=true``)."""
        cutoff = self.clock() - max_age_ms
        await self.qdrant(
            "POST",
            f"/collections/{self.collection}/points/delete?wait=true",
            {"filter": {"must": [{"key": "lastSeenAt", "range": {"lt": cutoff}}]}},
        )

    async def _exists(self) -> bool:
        answer = await self.qdrant("GET", f"/collections/{self.collection}/exists", None)
        return bool(answer.get("exists")) if isinstance(answer, dict) else False

    @staticmethod
    def _payload(tool: CallerTool, now: int) -> dict[str, Any]:
        return {
            "hash": tool.hash,
            "name": tool.name,
            "description": tool.description,
            "parametersJson": json.dumps(tool.parameters, sort_keys=True),
            "lastSeenAt": now,
        }


class QdrantFailed(RuntimeError):
    """Qdrant answered an error status (or not at all); the message names the request."""


def cluster_qdrant(http: Any, base_url: str) -> Qdrant:
    """A ``qdrant(method, path, body)`` over the twin's cluster network (``http``: a ``ClusterClient``)."""

    async def call(method: str, path: str, body: dict[str, Any] | None) -> Any:
        try:
            response = await http.request(method, f"{base_url.rstrip('/')}{path}", json=body)
        except Exception as exc:
            raise QdrantFailed(f"qdrant {method} {path}: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise QdrantFailed(f"qdrant {method} {path} answered HTTP {response.status_code}: {response.text[:300]}")
        return response.json().get("result")

    return call
