"""IntegrationRoutes as the gateway applies them: which agent a labelled GitHub issue goes to, and with what goal.

An IntegrationRoute (``spec.source``, ``spec.event``, ``spec.label``, ``spec.agent``, ``spec.promptTemplate``) is listed
through the API at every event, so a route applied or edited takes effect at the next delivery. A route matches
``issues``/``labeled`` when its ``source`` is ``github``, its ``event`` is ``issues.labeled`` and its ``label`` is the
label just added. The template's ``{repository}``, ``{owner}``, ``{name}``, ``{number}``, ``{title}`` and ``{body}``
are filled from the event; anything else in braces is left as written. The e2e catalog has the triage route
(``ai-triage`` -> ``stub-agent``) and the review route (``ai-review`` -> ``stub-swe-agent``), whose template carries
``SWE-ENFORCED-MODE: review-only``: the only per-route signal that reaches the agent. Its pull-request twin
(``pull_request.labeled``) is applied too, for the specs that read routes; only issue events are routed here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fakes.stack import config

if TYPE_CHECKING:
    from fakes.stack.cluster_api import ClusterApi

INTEGRATION_ROUTES = f"integrationroutes.{config.GROUP}"
_PLACEHOLDER = re.compile(r"\{(repository|owner|name|number|title|body)\}")


@dataclass(frozen=True)
class Route:
    name: str
    label: str
    agent: str
    template: str

    def render(self, fields: dict[str, str]) -> str:
        return _PLACEHOLDER.sub(lambda m: fields.get(m.group(1), ""), self.template)


async def issue_label_route(api: ClusterApi, label: str) -> Route | None:
    """The route for an issue labelled ``label`` (the first by name when several match), or ``None``. Raises what
    :meth:`ClusterApi.list` raises."""
    for item in sorted(await api.list(INTEGRATION_ROUTES), key=lambda i: str(i["metadata"]["name"])):
        spec = item.get("spec") or {}
        if spec.get("source") == "github" and spec.get("event") == "issues.labeled" and spec.get("label") == label:
            return Route(
                str(item["metadata"]["name"]), label, str(spec.get("agent", "")), str(spec.get("promptTemplate", ""))
            )
    return None
