"""A fake OpenAI-compatible model endpoint: scripted answers, full capture of what each turn advertised, faults.

Point a client (or a deployed service) at it instead of the real API and every model turn becomes scripted and
inspectable: which tools were advertised (names and schemas), what ``tool_choice`` was sent, the conversation, and
which request a tool call answered. No model key, no nondeterminism.

- Routes (:mod:`fakes.openai.app`): ``POST /v1/chat/completions`` (whole and server-sent events), ``POST
  /v1/responses`` (whole and streamed), ``POST /v1/embeddings`` (deterministic vectors,
  :mod:`fakes.openai.embeddings`), ``GET /v1/models[/{id}]``; bearer auth.
- Wire fidelity: request checks and error bodies as the real API gives them (:mod:`fakes.openai.validate`,
  :mod:`fakes.openai.errors`), answers and stream frames shaped as the real API sends them
  (:mod:`fakes.openai.render_chat`, :mod:`fakes.openai.render_responses`), every one checked against the ``openai``
  package's own types (:mod:`fakes.openai.wire`), ids of the real shapes (:mod:`fakes.openai.ids`).
- Scripting: :mod:`fakes.openai.rules` (from Python, the admin API ``/_fake/openai/rules`` or ``--rules FILE``).
- Capture: :mod:`fakes.openai.capture` (``handle.app.log()``, ``GET /_fake/openai/calls``).
- Faults: every shared kind (``fakes/README.md``) plus the stream kinds ``stream_stop``, ``stream_pause``,
  ``stream_reset`` (after N chunks of a stream); a rule's ``quirks`` stream its answer in the shapes other
  OpenAI-compatible providers send (:mod:`fakes.openai.quirks`: no tool-call ``index``, ``"error": null``,
  ``arguments`` as an object, ...), the only frames the fake sends outside OpenAI's shape.

Known differences from the real API (each deliberate or unverifiable here): error wordings marked "modelled" in
:mod:`fakes.openai.errors` and :mod:`fakes.openai.validate` follow the real grammar but were not seen verbatim;
``model`` in answers echoes the name requested (the real API answers with the dated snapshot); ``usage`` counts are
estimates (4 characters per token); stream chunks leave out the ``obfuscation`` padding field and Responses objects
the ``store`` field (the ``openai`` types in use do not declare them, and the fake sends nothing they do not
declare); only ``n`` identical choices; no logprobs, audio, refusals or built-in tools (accepted in a request, never
called); a rule decides every answer, so ``temperature``, ``max_tokens`` and the like change nothing.

Use::

    with fakes.openai.serve(api_keys=["sk-test"]) as fo:                 # a real socket on 127.0.0.1:<OS port>
        fo.app.add_rules({"when": {"last_user": "battery"},
                          "reply": {"tool_calls": [{"name": "get_device_battery", "arguments": {"id": "SN-4417"}}]}})
        client = openai.OpenAI(base_url=fo.url + "/v1", api_key="sk-test", max_retries=0)
        ...
        call = fo.app.log().last()
        assert call.tool_names == ["get_device_battery"]
    with fakes.openai.in_process() as fo:                                # no socket
        client = openai.OpenAI(base_url=fo.url + "/v1", api_key="k", http_client=httpx.Client(transport=fo.transport()))
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from fakes.extras import requires_extra

with requires_extra("fakes.openai"):
    from fakes.openai.app import ADMIN_PREFIX, HEALTH_PATH, OpenAIFake
    from fakes.openai.capture import CallLog, ModelCall
    from fakes.openai.embeddings import embed
    from fakes.openai.rules import Reply, Rule, RuleSpecError, Script
    from fakes.openai.turn import Message, Tool
    from fakes.server import FakeHandle, serve_fake
    from fakes.server import in_process as _in_process

__all__ = [
    "ADMIN_PREFIX",
    "HEALTH_PATH",
    "CallLog",
    "Message",
    "ModelCall",
    "OpenAIFake",
    "Reply",
    "Rule",
    "RuleSpecError",
    "Script",
    "Tool",
    "embed",
    "in_process",
    "serve",
]


@contextlib.contextmanager
def serve(host: str = "127.0.0.1", port: int = 0, **options: Any) -> Iterator[FakeHandle[OpenAIFake]]:
    """Serve a new :class:`OpenAIFake` (``options`` go to its constructor) with uvicorn in a thread; port 0 lets the
    OS choose. Point clients at ``handle.url + "/v1"``. Raises ``fakes.server.FakeServerError`` when the server does
    not start or stop within its bounds."""
    with serve_fake(OpenAIFake(**options), host, port) as handle:
        yield handle


@contextlib.contextmanager
def in_process(**options: Any) -> Iterator[FakeHandle[OpenAIFake]]:
    """A new :class:`OpenAIFake` reachable only through ``handle.transport()`` / ``async_transport()`` at
    ``handle.url`` (``http://openai.fake``): no socket, no thread."""
    yield _in_process(OpenAIFake(**options))
