"""Bring the stack up on the twin's API double with the real kubectl, in the order the upstream set-up uses.

Steps (specs/cluster/README.md §3): the namespace; the CRDs applied server-side (``--server-side
--force-conflicts``: Helm's install-only ``crds/`` would leave newer kinds out) and checked served through
discovery; the secrets, upserted with ``apply`` (upstream pipes a client-side dry run into it), with fixed values
where both ends must agree and random ones elsewhere; the Temporal dev server, Available within 120 s; the fakes
playing GitHub and Qdrant (the manifests under ``fakes/github/manifests`` and ``fakes/qdrant/manifests``, which name
no namespace: the twin's context places them in the stack's; the Qdrant one also gets the stack's Service name,
``44-qdrant-service.yaml``), Available within 120 s; the release; the catalog, checked not empty (zero Tools, Skills
or Agents make every turn time out silently); and finally the orchestrator, the gateway and the core-controller
Available within 300 s, so a half-ready stack fails here, readably.

The stack's own manifests carry ``{{profile.<name>}}`` where a deployed timing goes: each is rendered from the twin's
:class:`~fakes.stack.profile.Effective` timings and applied from stdin, so the cluster shows what the twin runs.

Every kubectl call is bounded; a failing step raises :class:`UpFailed` naming the step, kubectl's exit and stderr.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakes.stack import config
from fakes.stack.profile import Effective

MANIFESTS = Path(__file__).parent / "manifests"
FAKES = Path(__file__).parent.parent
CRD_KINDS = (
    "agentruns",
    "agents",
    "tools",
    "skills",
    "integrationroutes",
    "corpora",
    "connections",
    "knowledgebases",
    "mcpservers",
    "mcptools",
)
CATALOG_KINDS = ("tools", "skills", "agents")


def secret_manifest(name: str, values: dict[str, str]) -> dict[str, Any]:
    """An Opaque Secret as ``kubectl create secret generic --from-literal ... --dry-run=client`` prints it."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": config.NAMESPACE},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()},
    }


def render(manifest: str, timing: Effective) -> str:
    """The stack's manifest ``manifest`` (a file name under ``manifests/``) with the deployed timings of ``timing``
    filled in. Raises :class:`fakes.stack.profile.ProfileError` for a placeholder naming no deployed value."""
    return timing.render((MANIFESTS / manifest).read_text(encoding="utf-8"))


CRD_SERVE_TIMEOUT = 30.0
"""Seconds the applied CRDs may take to be served (each read of discovery is one kubectl call)."""
CRD_SERVE_POLL = 0.2


class UpFailed(RuntimeError):
    """A set-up step failed; the message names the step and what kubectl said."""


@dataclass
class Up:
    """Runs the steps with ``kubectl(args, input=None, timeout=...)`` -> ``harness.process.Completed``; the stack's
    manifests are rendered with ``timing``."""

    kubectl: Callable[..., Any]
    timing: Effective = field(default_factory=Effective)
    steps: list[tuple[str, float]] = field(default_factory=list)

    def run(self) -> None:
        for name, step in (
            ("namespace", self.namespace),
            ("CRDs", self.crds),
            ("secrets", self.secrets),
            ("temporal", self.temporal),
            ("fakes", self.fakes),
            ("release", self.release),
            ("catalog", self.catalog),
            ("available", self.available),
        ):
            began = time.monotonic()
            step()
            self.steps.append((name, time.monotonic() - began))

    def _run(self, step: str, *args: str, input: str | None = None, timeout: float = 60.0) -> str:
        done = self.kubectl(*args, input=input, timeout=timeout)
        if done.returncode != 0:
            raise UpFailed(
                f"stack set-up, step {step}: `kubectl {' '.join(args)}` exited {done.returncode}: "
                f"{done.stderr.strip()[-600:]}"
            )
        return str(done.stdout)

    def _apply(self, step: str, manifest: str) -> None:
        """Apply one of the stack's manifests, rendered with the twin's timings, from stdin."""
        self._run(step, "apply", "-f", "-", input=render(manifest, self.timing))

    def namespace(self) -> None:
        self._apply("namespace", "00-namespace.yaml")

    def crds(self) -> None:
        self._run("CRDs", "apply", "--server-side", "--force-conflicts", "-f", str(MANIFESTS / "10-crds.yaml"))
        # A real API server serves a new CRD once it is Established and in discovery, a moment after the apply.
        deadline = time.monotonic() + CRD_SERVE_TIMEOUT
        while True:
            served = set(self._run("CRDs", "api-resources", f"--api-group={config.GROUP}", "-o", "name").split())
            missing = [k for k in CRD_KINDS if f"{k}.{config.GROUP}" not in served]
            if not missing:
                return
            if time.monotonic() >= deadline:
                raise UpFailed(
                    f"stack set-up, step CRDs: applied but not served after {CRD_SERVE_TIMEOUT:.0f} s: "
                    f"{', '.join(missing)} (the orchestrator would crash-loop on a bare 404)"
                )
            time.sleep(CRD_SERVE_POLL)  # between two discovery reads: the probe is the read above

    def secrets(self) -> None:
        gateway = {
            "GITHUB_WEBHOOK_SECRET": secrets.token_hex(20),
            "GATEWAY_ORCHESTRATOR_TOKEN": config.GATEWAY_TOKEN,
            "GATEWAY_IDENTITY_LINK_TOKEN": config.IDENTITY_LINK_TOKEN,
            "IDENTITY_LINK_ENCRYPTION_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            "IDENTITY_LINK_STATE_SECRET": secrets.token_hex(16),
            "GITHUB_APP_CLIENT_SECRET": secrets.token_hex(16),
            "GATEWAY_SENDER_ASSERTION_SECRET": config.SENDER_ASSERTION_SECRET,
            "GITHUB_TOKEN": f"ghs_e2e{secrets.token_hex(16)}",
            "ATLASSIAN_CLIENT_SECRET": secrets.token_hex(16),
        }
        orchestrator = {
            "OPENAI_API_KEY": "sk-fake-e2e",  # the twin's model is the fake endpoint (any key is accepted)
            "IDENTITY_LINK_GATEWAY_TOKEN": config.IDENTITY_LINK_TOKEN,
            "AGENT_SENDER_ASSERTION_SECRET": config.SENDER_ASSERTION_SECRET,
        }
        jwt = {"AGENT_OPENWEBUI_USER_JWT_SECRET": "e2e-openwebui-forward-jwt-secret"}
        # An upsert, as upstream's dry-run piped into apply, for the three at once (one kubectl instead of six).
        items = [
            secret_manifest(name, values)
            for name, values in (
                (config.GATEWAY_SECRETS, gateway),
                ("agent-orchestrator-secrets", orchestrator),
                ("e2e-openwebui-forward-jwt", jwt),
            )
        ]
        self._run("secrets", "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))

    def temporal(self) -> None:
        self._apply("temporal", "30-temporal.yaml")
        self._available("temporal", ["temporal-dev-server"], 120)

    def fakes(self) -> None:
        for directory in ("github", "qdrant"):
            self._run("fakes", "apply", "-f", str(FAKES / directory / "manifests"))
        self._apply("fakes", "44-qdrant-service.yaml")  # the stack's name for the fake Qdrant's pods
        # The fake model endpoint with the twin's script (its ConfigMap first: the pod reads it at start).
        self._run("fakes", "apply", "-f", str(MANIFESTS / "45-model-script.yaml"))
        for name in ("deployment.yaml", "service.yaml"):
            self._run("fakes", "apply", "-f", str(FAKES / "openai" / "manifests" / name))
        self._available("fakes", ["fake-github", "fake-qdrant", "fake-openai"], 120)

    def release(self) -> None:
        self._apply("release", "40-release.yaml")

    def catalog(self) -> None:
        self._apply("catalog", "50-catalog.yaml")
        kinds = ",".join(f"{kind}.{config.GROUP}" for kind in CATALOG_KINDS)
        names = self._run("catalog", "-n", config.NAMESPACE, "get", kinds, "-o", "name").split()
        for kind in CATALOG_KINDS:
            if not any(name.startswith(f"{kind[:-1]}.") for name in names):
                raise UpFailed(
                    f"stack set-up, step catalog: no {kind} in {config.NAMESPACE}: every turn would time out silently"
                )

    def available(self) -> None:
        self._available("available", [config.ORCHESTRATOR, config.GATEWAY, config.CONTROLLER], 300)

    def _available(self, step: str, deployments: list[str], seconds: int) -> None:
        self._run(
            step,
            "-n",
            config.NAMESPACE,
            "wait",
            "--for=condition=Available",
            f"--timeout={seconds}s",
            *(f"deployment/{d}" for d in deployments),
            timeout=seconds + 10.0,
        )
