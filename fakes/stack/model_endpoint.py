"""The fake model endpoint's pod in the twin: ``fakes.openai`` as its manifest runs it, scripted from its ConfigMap.

The twin deploys ``fakes/openai/manifests/deployment.yaml`` and ``service.yaml`` (Service ``fake-openai``, port 80 to
container 8080) unchanged, with the twin's own script in the ConfigMap ``fake-openai-rules``
(``fakes/stack/manifests/45-model-script.yaml``). The container's ``FAKE_OPENAI_RULES`` names the file its volume
mounts from that ConfigMap; here the node gives the same ConfigMap key when the pod starts
(:meth:`~fakes.stack.node.PodContext.mounted_file`), as the mounted file would be read at start (a change needs a
pod restart, as on a cluster: failure mode 13).
``FAKE_OPENAI_API_KEYS`` (optional Secret ``fake-openai-keys``) limits the accepted keys; unset, any key is.

State (rules added at run time, the capture of every call) lives in the pod: deleting it starts from the script.
"""

from __future__ import annotations

import json
from typing import Any

from fakes.openai.rules import Script
from fakes.stack.node import PodContext
from fakes.stack.pods import FakeServicePod

CONTAINER_PORT = 8080
RULES_ENV = "FAKE_OPENAI_RULES"
KEYS_ENV = "FAKE_OPENAI_API_KEYS"


def fake_openai(ctx: PodContext) -> FakeServicePod:
    """The pod's container: ``fakes.openai.serve`` with the mounted script and the accepted keys."""
    import fakes.openai

    options: dict[str, Any] = {}
    rules_path = ctx.env.get(RULES_ENV)
    if rules_path:
        text = ctx.mounted_file(rules_path)
        if text is None:
            raise FileNotFoundError(f"fake openai: cannot load rules: {rules_path} is not mounted in the pod")
        options["rules"] = Script.from_spec(json.loads(text))
    keys = [k.strip() for k in ctx.env.get(KEYS_ENV, "").split(",") if k.strip()]
    options["api_keys"] = keys or None
    return FakeServicePod(ctx, fakes.openai.serve, CONTAINER_PORT, **options)
