"""The planner: one model-driven turn with tools, and the tool-advertising contract it keeps.

A turn that brings caller tools (chat or ``/invoke``) is planned here instead of being handed to an agent:

1. The caller tools are stored (:class:`~fakes.stack.caller_tools.CallerToolStore`, content-hash cache), but only
   when there are more of them than ``k`` (``callerToolTopK``): at or below that threshold there is nothing to prune,
   so the index is skipped entirely (no embedding of a definition, no Qdrant call, no point) and every caller tool
   is a candidate, in the request's order.
2. The skill is chosen (:meth:`~fakes.stack.skills.SkillIndex.select`: retrieval, then the model's selector).
3. The tools *advertised* to the model are decided, and they are exactly:

   - nothing at all when the client sent ``tool_choice: "none"``, on a fresh turn and on a resumed one alike;
   - otherwise the active skill's catalog Tools, plus at most ``k`` caller tools (``callerToolTopK``: 3 in e2e),
     unless the skill refuses caller tools (``allowCallerTools: false``). The caller tools are the ones the skill
     orders first, then the best of the rest by retrieval against the request (ranked among *this request's*
     tools only);
   - every name bare: the internal ``caller:`` namespace never reaches the model (nor the client).

4. The model is asked (the planner prompt, the skill's instructions, the conversation). When the skill orders a
   caller tool that was advertised and the conversation has no result for it yet, ``tool_choice`` forces that
   function: dispatch that does not depend on the model's judgement. A client's own ``tool_choice`` otherwise goes
   through unchanged.
5. The answer's tool calls are sorted: a call of an advertised caller tool goes back to the client (finish reason
   ``tool_calls``); a call of an advertised catalog Tool is run here and its result given back to the model (at
   most :data:`MAX_ROUNDS` rounds); a call of anything that was *not advertised* is neither run nor returned: it is
   dropped and the turn says so.
6. The duplicate-call guard: on a resumed turn (the conversation ends with ``role: "tool"`` results) no tool runs in
   this request, so the turn's result lives only in the history it brought. A caller-tool call that repeats,
   byte for byte (name and ``arguments`` text), a call the history already answered is never handed back again (a
   client's ``tool_choice: "required"``, re-applied on every resend, pushes the model to do exactly that); when
   nothing new remains the turn finishes (``stop``) carrying the last tool result of the history, rendered as a
   ``json`` block (:data:`RESULT_BLOCK`).

An Open WebUI housekeeping prompt (a title or tag request starting ``### Task:``) is answered by the model with no
tools at all, whatever the request carried.

Catalog Tools run over HTTP when their resource has ``spec.http: {method, url}``; ``{arg}`` placeholders in the URL
take the call's JSON arguments *(twin's reading: how upstream runs catalog tools is not part of the material; the
twin needs a side effect a spec can observe, here a request to the fake GitHub)*.

Bug switches (:mod:`fakes.stack.bugs`): ``caller-prefix-leak`` advertises caller tools under their internal
``caller:`` names; ``refused-skill-advertises`` ignores ``allowCallerTools: false``; ``unadvertised-tool-call`` runs
or returns whatever the model calls; ``index-below-threshold`` indexes and searches the caller tools on every turn;
``repeat-call-no-result`` finishes a repeated call with no result (the literal ``undefined`` block);
``tool-choice-none-ignored-on-resume`` drops the client's ``tool_choice: "none"`` when the turn resumes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from fakes.stack import config
from fakes.stack.caller_tools import CallerTool, CallerToolStore
from fakes.stack.model import Completion, ModelClient, ModelToolCall
from fakes.stack.skills import Skill, SkillIndex

if TYPE_CHECKING:
    from fakes.stack.network import ClusterClient

TOOLS = f"tools.{config.GROUP}"
MAX_ROUNDS = 4
HOUSEKEEPING_MARK = "### Task:"
PLANNER_PROMPT = (
    "You are the agent orchestrator's planner. Answer the user's request; call a tool only when it is "
    "needed, and only the tools offered."
)
DROPPED_TEXT = "The model asked for tool(s) that were not offered on this turn ({names}); nothing was run."
RESULT_LIMIT = 4000
RESULT_BLOCK = "```json\n{result}\n```"
"""How a turn finished by the duplicate-call guard carries the last tool result (a JSON value)."""
NO_RESULT = "undefined"
"""What the shipped bug rendered in :data:`RESULT_BLOCK` (a JavaScript ``undefined`` stringified)."""


@dataclass
class Plan:
    """What a planned turn produced: ``text``, ``tool_calls`` for the client (bare names), ``finish_reason``
    (``stop`` or ``tool_calls``), and what was decided: ``skill``, ``advertised`` (names sent to the model on the
    last model call), ``dropped`` (calls of tools not advertised), ``executed`` (catalog tools run), ``repeated``
    (calls the duplicate-call guard held back: the history had answered them)."""

    text: str
    tool_calls: list[ModelToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    skill: str | None = None
    advertised: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)


def is_housekeeping(messages: list[dict[str, Any]]) -> bool:
    """True when the last user message is an Open WebUI housekeeping task (title, tags, follow-ups)."""
    return last_user_text(messages).lstrip().startswith(HOUSEKEEPING_MARK)


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def is_resumed(messages: list[dict[str, Any]]) -> bool:
    """True when the conversation ends with a ``role: "tool"`` result: the client resumes a turn."""
    return bool(messages) and messages[-1].get("role") == "tool"


def answered_calls(messages: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """``(name, arguments text)`` of every assistant tool call in ``messages`` that a ``role: "tool"`` message
    answered (matched by ``tool_call_id``)."""
    results = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    answered: set[tuple[str, str]] = set()
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and call.get("id") in results:
                answered.add((str(function.get("name", "")), str(function.get("arguments", ""))))
    return answered


def last_tool_result(messages: list[dict[str, Any]]) -> str:
    """The last ``role: "tool"`` message's content as JSON text: parsed when it is JSON, else a JSON string."""
    for message in reversed(messages):
        if message.get("role") == "tool":
            text = content_text(message.get("content"))
            try:
                return json.dumps(json.loads(text), ensure_ascii=False)
            except json.JSONDecodeError:
                return json.dumps(text, ensure_ascii=False)
    return json.dumps(None)


def content_text(content: Any) -> str:
    """A message's text: a string, or the ``text`` parts of a content array joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


class Planner:
    def __init__(
        self,
        *,
        catalog: Callable[[str], dict[str, Any] | None],
        model: ModelClient,
        skills: SkillIndex,
        caller_tools: CallerToolStore,
        http: ClusterClient,
        top_k: int,
        bugs: Container[str],
        log: Callable[[str], None],
    ) -> None:
        self.catalog = catalog
        self.model = model
        self.skills = skills
        self.caller_tools = caller_tools
        self.http = http
        self.top_k = top_k
        self.bugs = bugs
        self.log = log

    async def housekeeping(self, messages: list[dict[str, Any]]) -> Plan:
        answer = await self.model.complete("housekeeping", _model_messages(None, messages))
        return Plan(answer.text)

    async def run(self, messages: list[dict[str, Any]], tools: list[CallerTool], tool_choice: Any) -> Plan:
        """Plan one turn (see the module docstring). Raises ``ModelFailed`` and what Qdrant access raises."""
        query = last_user_text(messages)
        if is_resumed(messages) and tool_choice == "none" and "tool-choice-none-ignored-on-resume" in self.bugs:
            tool_choice = None
        ids = await self.caller_tools.index(tools) if self._uses_index(tools) else None
        vector = (await self.model.embed([query or " "]))[0]
        skill = await self.skills.select(query, vector)
        advertised = await self._advertise(skill, tools, ids, vector, tool_choice)
        plan = Plan("", skill=skill.name if skill else None, advertised=[_name(t) for t in advertised])
        choice = self._choice(skill, plan.advertised, tools, messages, tool_choice)
        conversation = _model_messages(skill, messages)
        caller_names = {t.name for t in tools}
        answered = answered_calls(messages)
        for _ in range(MAX_ROUNDS):
            answer = await self.model.complete("planner", conversation, tools=advertised, tool_choice=choice)
            plan.text = answer.text
            returned, run = self._sort(answer, plan, caller_names)
            repeated = [c for c in returned if (c.name, c.arguments) in answered]
            if repeated and len(repeated) == len(returned) and not run:
                return self._finish_repeated(plan, messages, repeated)
            returned = [c for c in returned if c not in repeated]
            if returned:
                plan.tool_calls, plan.finish_reason = returned, "tool_calls"
                return plan
            if not run:
                break
            conversation.append(_assistant(answer, run))
            for call in run:
                conversation.append({"role": "tool", "tool_call_id": call.id, "content": await self._execute(call)})
                plan.executed.append(call.name)
            choice = None  # the ordered or forced call was made: the model answers freely now
        if not plan.text and plan.dropped:
            plan.text = DROPPED_TEXT.format(names=", ".join(plan.dropped))
        return plan

    def _finish_repeated(self, plan: Plan, messages: list[dict[str, Any]], repeated: list[ModelToolCall]) -> Plan:
        """The duplicate-call guard's finish: ``stop``, carrying the history's last tool result."""
        result = NO_RESULT if "repeat-call-no-result" in self.bugs else last_tool_result(messages)
        plan.text, plan.tool_calls, plan.finish_reason = RESULT_BLOCK.format(result=result), [], "stop"
        plan.repeated = [c.name for c in repeated]
        self.log(f"planner: {plan.repeated} repeat calls the history already answered; finished with its last result")
        return plan

    # --- what the model is offered ------------------------------------------------------------------------------

    def _uses_index(self, tools: list[CallerTool]) -> bool:
        """True above the threshold: with ``top_k`` caller tools or fewer there is nothing to prune."""
        return len(tools) > self.top_k or "index-below-threshold" in self.bugs

    async def _advertise(
        self,
        skill: Skill | None,
        tools: list[CallerTool],
        ids: list[str] | None,
        vector: list[float],
        tool_choice: Any,
    ) -> list[dict[str, Any]]:
        if tool_choice == "none":
            return []
        offered = [self._catalog_tool(name) for name in (skill.catalog_tools if skill else ())]
        advertised = [t for t in offered if t is not None]
        refused = skill is not None and not skill.allow_caller_tools and "refused-skill-advertises" not in self.bugs
        if tools and not refused:
            advertised += [
                t.openai(t.internal_name if "caller-prefix-leak" in self.bugs else None)
                for t in await self._caller_choice(skill, tools, ids, vector)
            ]
        return advertised

    async def _caller_choice(
        self, skill: Skill | None, tools: list[CallerTool], ids: list[str] | None, vector: list[float]
    ) -> list[CallerTool]:
        """The skill's ordered caller tools, then the best of the rest: ranked by the index when it was used
        (``ids``), else (``None``: at or below the threshold) in the request's order."""
        by_name = {t.name: t for t in tools}
        ordered = [by_name[n] for n in (skill.ordered_caller_tools if skill else ()) if n in by_name]
        if ids is None:
            ranked = list(tools)
        else:
            ranked = [by_name[n] for n in await self.caller_tools.search(vector, ids, self.top_k) if n in by_name]
        chosen: list[CallerTool] = []
        for tool in ordered + ranked:
            if tool not in chosen and len(chosen) < self.top_k:
                chosen.append(tool)
        return chosen

    def _catalog_tool(self, name: str) -> dict[str, Any] | None:
        obj = self.catalog(name)
        if obj is None:
            self.log(f"planner: the skill names catalog tool {name}, which does not exist")
            return None
        spec = obj.get("spec") or {}
        function: dict[str, Any] = {
            "name": name,
            "description": str(spec.get("description", "")),
            "parameters": spec.get("parameters") or {"type": "object", "properties": {}},
        }
        return {"type": "function", "function": function}

    def _choice(
        self,
        skill: Skill | None,
        advertised: list[str],
        tools: list[CallerTool],
        messages: list[dict[str, Any]],
        tool_choice: Any,
    ) -> Any:
        if tool_choice is not None and tool_choice != "auto":
            return tool_choice
        answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
        for name in skill.ordered_caller_tools if skill else ():
            if name in advertised and not answered and messages and messages[-1].get("role") == "user":
                return {"type": "function", "function": {"name": name}}
        return tool_choice

    # --- what the model answered -------------------------------------------------------------------------------

    def _sort(
        self, answer: Completion, plan: Plan, caller_names: set[str]
    ) -> tuple[list[ModelToolCall], list[ModelToolCall]]:
        """(calls for the client, catalog calls to run here); records the dropped ones on ``plan``."""
        returned, run = [], []
        leaky = "unadvertised-tool-call" in self.bugs
        for call in answer.tool_calls:
            name = call.name.removeprefix("caller:") if "caller-prefix-leak" not in self.bugs else call.name
            advertised = call.name in plan.advertised
            if name in caller_names and (advertised or leaky):
                returned.append(ModelToolCall(call.id, name, call.arguments))
            elif (advertised or leaky) and self.catalog(call.name) is not None:
                run.append(call)
            elif leaky:
                returned.append(call)
            else:
                plan.dropped.append(call.name)
                self.log(
                    f"planner: dropped a call of {call.name!r}: not advertised on this turn "
                    f"(advertised: {plan.advertised})"
                )
        return returned, run

    async def _execute(self, call: ModelToolCall) -> str:
        obj = self.catalog(call.name) or {}
        http = (obj.get("spec") or {}).get("http") or {}
        if not isinstance(http, dict) or not http.get("url"):
            return f"tool {call.name} has no runner in this deployment"
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            return f"tool {call.name}: the arguments are not JSON"
        if not isinstance(arguments, dict):
            return f"tool {call.name}: the arguments are not an object"
        url = str(http["url"])
        for key, value in arguments.items():
            url = url.replace("{" + str(key) + "}", quote(str(value), safe=""))
        try:
            response = await self.http.request(
                str(http.get("method", "GET")).upper(), url, headers={"accept": "application/vnd.github+json"}
            )
        except Exception as exc:
            return f"tool {call.name} failed: {type(exc).__name__}: {exc}"
        self.log(f"planner: ran catalog tool {call.name}: {url} -> {response.status_code}")
        return f"HTTP {response.status_code}: {response.text[:RESULT_LIMIT]}"


def _name(tool: dict[str, Any]) -> str:
    return str(tool["function"]["name"])


def _model_messages(skill: Skill | None, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    system = PLANNER_PROMPT
    if skill is not None:
        system += f"\n\nActive skill {skill.name}: {skill.instructions or skill.description}"
    kept = [m for m in messages if m.get("role") in ("user", "assistant", "tool")]
    return [{"role": "system", "content": system}, *kept]


def _assistant(answer: Completion, run: list[ModelToolCall]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": answer.text or None,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in run
        ],
    }
