"""The agent-controller stack's Qdrant collections, read through the generic :class:`harness.QdrantView`.

The stack's collections (``specs/cluster/README.md`` §1) are ``tools``, ``skills``, ``agents`` and ``caller_tools``.
``caller_tools`` is the orchestrator's cache of caller-supplied ("consumer") tool definitions, kept apart from the
catalog collections: one point per distinct definition, its id derived from a content hash of the definition, payload
``{hash, name, description, parametersJson, lastSeenAt}`` (``lastSeenAt`` in epoch milliseconds). A resent identical
definition adds no point (+0), an edited one adds one (+1) (``specs/cluster/README.md`` §7, failure mode 50).
"""

from __future__ import annotations

from harness.qdrant import QdrantView

CALLER_TOOLS = "caller_tools"
COLLECTIONS: tuple[str, ...] = ("tools", "skills", "agents", CALLER_TOOLS)


def caller_tool_names(view: QdrantView, *, collection: str = CALLER_TOOLS) -> list[str] | None:
    """Names of the caller-tool definitions stored in ``collection`` (``None``: the collection was never created);
    the hop errors and :class:`harness.QdrantReadError` of :meth:`QdrantView.payload_values`."""
    values = view.payload_values(collection, "name")
    return None if values is None else [str(v) for v in values]
