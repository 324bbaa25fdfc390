"""The twin's configuration: the stack's e2e names, ports, secrets and markers.

Timings are not here: the twin takes every one from the timing profile (``profile.toml``, :mod:`fakes.stack.profile`)
at its time scale, and deploys the scaled values in its manifests, so a budget means the same on the twin and on
minikube at scale 1.
"""

from __future__ import annotations

NAMESPACE = "controller-agent"
GROUP = "core.controller-agent.dev"
VERSION = "v1alpha1"
AGENTRUNS = f"agentruns.{GROUP}"  # plural.group, as the twin's API client names resources
AGENTS = f"agents.{GROUP}"

# --- services, selectors, ports (specs/cluster/README.md §2) ------------------------------------------------
GATEWAY = "agent-controller-integration-gateway"
GATEWAY_PORT = 8090
ORCHESTRATOR = "agent-orchestrator"
ORCHESTRATOR_SERVICE = "agent-orchestrator-invoke"
ORCHESTRATOR_PORT = 8081
CONTROLLER = "core-controller"
FAKE_GITHUB = "fake-github"
FAKE_GITHUB_PORT = 8080
QDRANT = "agent-controller-qdrant"
QDRANT_PORT = 6333
NATS = "nats"
NATS_PORT = 4222
REDIS = "agent-orchestrator-redis"
REDIS_PORT = 6379
TEMPORAL = "temporal-dev-server"
TEMPORAL_PORT = 7233

# --- shared secrets with fixed values (both ends must agree) ------------------------------------------------
GATEWAY_TOKEN = "e2e-gateway-token"
GATEWAY_SUBJECT = "client-integration-gateway"
IDENTITY_LINK_TOKEN = "e2e-identity-link-token"
SENDER_ASSERTION_SECRET = "e2e-sender-assertion-secret"
GATEWAY_SECRETS = "e2e-integration-gateway-secrets"

# --- identities and markers (§5) ------------------------------------------------------------------------------
TRIGGER_LABEL = "ai-triage"
BOT_LOGIN = "e2e-bot"
ALLOWLIST = ("e2e-user", "e2e-other-user", "E2E-User")
REPLY_MARKER = "<!-- agent-controller:reply -->"
ERROR_PREFIX = "Something went wrong processing this:"
STUB_REPLY_PREFIX = "stub-agent-reply"
CREDENTIAL_LABEL = "controller-agent.io/credential"
CLAUDE_SECRET_PREFIXES = ("claude-auth-setup-token", "claude-auth-login")
GITHUB_LINK_PREFIX = "identity-link-github"
STUB_AGENT = "stub-agent"
STUB_REPORTED_ENV = ("AGENT_ACTOR_LOGIN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_LOGIN_CREDENTIALS_JSON", "GITHUB_TOKEN")

# --- timing: every cadence, budget and window is in the timing profile (fakes/stack/profile.toml), which the
# twin runs at its time scale (fakes.stack.profile.Effective, reached as PodContext.timing). Only a message is here.
LEGACY_NO_REPLY_MS = 3_660_000  # the bound the legacy relabelling printed (the incident's "3660000ms")
