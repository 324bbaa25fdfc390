"""Skills: indexed into Qdrant as their resources come and go, retrieved by meaning, chosen by the model's selector.

A Skill resource (``core.controller-agent.dev/v1alpha1``) carries ``spec.description`` (what retrieval matches),
``spec.instructions`` (what the planner is told while the skill is active), ``spec.tools`` (catalog Tool names, and
caller tools under their internal name ``caller:<name>``: such a skill *orders* that caller tool) and
``spec.allowCallerTools`` (``false`` refuses every caller tool while the skill is active; absent means allowed)
*(twin's reading: upstream's Skill schema is not part of the material; these are the fields its specs rely on)*.

:class:`SkillIndex` keeps the Qdrant collection ``skills`` in step with the resources: one point per Skill (id
derived from its name, vector the embedding of ``name: description`` from the model endpoint, payload ``{name,
description}``), written when a Skill is created or changed and deleted with it. Indexing is asynchronous: a Skill
that exists is not yet a Skill that is indexed (failure mode 23 in specs/cluster/README.md), so specs wait for its
name in the ``skills`` payloads before a turn relies on it. Failures (Qdrant or the model unreachable) are retried
every ``retry`` seconds (the profile's ``skill_index_retry``).

:meth:`SkillIndex.select` is the turn's choice: retrieval (the query's embedding against ``skills``, the best
:data:`CANDIDATES` above :data:`MIN_SCORE`), then, when anything was retrieved, the selector, a model call that
names one candidate or ``none``. An answer naming no candidate means no skill. The resource is read again at that
moment, so a Skill deleted since it was indexed is never used.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fakes.stack import config
from fakes.stack.caller_tools import PREFIX
from fakes.stack.model import ModelClient

if TYPE_CHECKING:
    from fakes.kube.informer import Informer
    from fakes.stack.cluster_api import ClusterApi

COLLECTION = "skills"
SKILLS = f"skills.{config.GROUP}"
LIST_TIMEOUT = 10.0
"""Seconds the first list of Skills may take at start (a failure is retried with the rest of the warm-up)."""
CANDIDATES = 3
MIN_SCORE = 0.2
"""Cosine score a skill's embedding must reach to be a candidate (the twin's retrieval threshold)."""
SELECTOR_PROMPT = (
    "You are the agent orchestrator's skill selector. Pick the one skill below that fits the user's request, "
    "or none. Answer with the skill's name only, or the word none.\n\nCandidate skills:\n"
)

Qdrant = Callable[[str, str, "dict[str, Any] | None"], Awaitable[Any]]


@dataclass(frozen=True)
class Skill:
    """A Skill resource as a turn uses it."""

    name: str
    description: str
    instructions: str
    catalog_tools: tuple[str, ...]
    ordered_caller_tools: tuple[str, ...]
    allow_caller_tools: bool

    @classmethod
    def from_resource(cls, obj: dict[str, Any]) -> Skill:
        spec = obj.get("spec") or {}
        tools = [str(t) for t in spec.get("tools") or [] if isinstance(t, str)]
        return cls(
            name=str(obj["metadata"]["name"]),
            description=str(spec.get("description", "")),
            instructions=str(spec.get("instructions", "")),
            catalog_tools=tuple(t for t in tools if not t.startswith(PREFIX)),
            ordered_caller_tools=tuple(t.removeprefix(PREFIX) for t in tools if t.startswith(PREFIX)),
            allow_caller_tools=spec.get("allowCallerTools", True) is not False,
        )


def point_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"skill:{name}"))


class SkillIndex:
    """Skill resources of ``api``'s namespace, watched through the API, mirrored into Qdrant (see the module
    docstring)."""

    def __init__(
        self,
        api: ClusterApi,
        qdrant: Qdrant,
        model: ModelClient,
        log: Callable[[str], None],
        *,
        retry: float,
    ) -> None:
        """``retry``: seconds between indexing attempts after a failure (the profile's ``skill_index_retry``)."""
        self.api = api
        self.retry = retry
        self.qdrant = qdrant
        self.model = model
        self.log = log
        self.dirty: set[str] = set()
        self.wake = asyncio.Event()
        self.skills: Informer | None = None
        self.worker: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Index every Skill now (raises when that fails: the orchestrator is not warm yet), then follow changes."""
        if self.skills is None:
            self.skills = self.api.informer(SKILLS, lambda _kind, obj: self._mark(str(obj["metadata"]["name"])))
        await self.skills.start(LIST_TIMEOUT)
        self.dirty.clear()  # the list's own events: indexed just below
        names = {str(item["metadata"]["name"]) for item in self.skills.items()}
        await self._sync(names | await self._indexed_names())
        if self.worker is None:
            self.worker = asyncio.ensure_future(self._work())

    def _skill(self, name: str) -> dict[str, Any] | None:
        return self.skills.get(name, self.api.namespace) if self.skills is not None else None

    async def stop(self) -> None:
        if self.skills is not None:
            await self.skills.stop()  # its cache stays as it was last seen
        if self.worker is not None:
            self.worker.cancel()
            self.worker = None

    def _mark(self, name: str) -> None:
        self.dirty.add(name)
        self.wake.set()

    async def _work(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            names, self.dirty = self.dirty, set()
            try:
                await self._sync(names)
            except Exception as exc:
                self.log(f"skill index: {sorted(names)} not indexed yet, retrying in {self.retry:g}s: {exc}")
                self.dirty |= names
                await asyncio.sleep(self.retry)
                self.wake.set()

    async def _sync(self, names: set[str]) -> None:
        present: list[str] = []
        gone: list[str] = []
        for name in sorted(names):
            obj = self._skill(name)
            (present if obj is not None and not obj["metadata"].get("deletionTimestamp") else gone).append(name)
        skills = [Skill.from_resource(self._skill(name) or {}) for name in present]
        if skills:
            vectors = await self.model.embed([f"{s.name}: {s.description}" for s in skills])
            points = [
                {"id": point_id(s.name), "vector": v, "payload": {"name": s.name, "description": s.description}}
                for s, v in zip(skills, vectors, strict=True)
            ]
            await self.qdrant("PUT", f"/collections/{COLLECTION}/points?wait=true", {"points": points})
        if gone:
            await self.qdrant(
                "POST",
                f"/collections/{COLLECTION}/points/delete?wait=true",
                {"points": [point_id(name) for name in gone]},
            )
        if skills or gone:
            self.log(f"skill index: indexed {[s.name for s in skills]}, removed {gone}")

    async def _indexed_names(self) -> set[str]:
        page = await self.qdrant(
            "POST",
            f"/collections/{COLLECTION}/points/scroll",
            {"limit": 1000, "with_payload": ["name"], "with_vector": False},
        )
        return {str(p["payload"]["name"]) for p in page.get("points", []) if (p.get("payload") or {}).get("name")}

    # --- a turn's choice ---------------------------------------------------------------------------------------

    async def retrieve(self, vector: list[float]) -> list[Skill]:
        """The candidates for a query embedding: at most :data:`CANDIDATES`, best first, each scoring at least
        :data:`MIN_SCORE` and still present as a resource."""
        hits = await self.qdrant(
            "POST",
            f"/collections/{COLLECTION}/points/search",
            {"vector": vector, "limit": CANDIDATES, "with_payload": ["name"], "score_threshold": MIN_SCORE},
        )
        found = []
        for hit in hits:
            obj = self._skill(str(hit["payload"]["name"]))
            if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                found.append(Skill.from_resource(obj))
        return found

    async def select(self, query: str, vector: list[float]) -> Skill | None:
        """The skill for this turn (retrieval, then the selector), or ``None``."""
        candidates = await self.retrieve(vector)
        if not candidates:
            return None
        listing = "\n".join(f"- {s.name}: {s.description}" for s in candidates)
        answer = await self.model.complete(
            "selector", [{"role": "system", "content": SELECTOR_PROMPT + listing}, {"role": "user", "content": query}]
        )
        chosen = answer.text.strip().strip("`'\".").strip()
        return next((s for s in candidates if s.name == chosen), None)
