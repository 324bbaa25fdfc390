"""The twin's configuration: the stack's e2e values, so a budget means the same on the twin and on minikube.

Every number here is the one the stack runs with in e2e (timing table in specs/cluster/README.md §6); the
services read them from their pods' environment (the manifests set the same values), these are the defaults
and the names. Seconds are floats; the stack's own settings are in milliseconds where it says ``*_MS``.
"""

from __future__ import annotations

NAMESPACE = "controller-agent"
GROUP = "core.controller-agent.dev"
VERSION = "v1alpha1"
AGENTRUNS = f"agentruns.{GROUP}"  # a name the store resolves
AGENTRUNS_KEY = f"{GROUP}/agentruns"  # the collection key change feeds use
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

# --- timing (§6), seconds --------------------------------------------------------------------------------------
POLL_INTERVAL = 2.0  # gateway pollIntervalMs
POLL_TIMEOUT = 90.0  # gateway pollTimeoutMs
RESUME_WAIT = 20.0  # gateway resumeWaitMs
IDLE_WINDOW = 30.0  # orchestrator agentIdleTimeoutSeconds
RUN_TIMEOUT = 28_800.0  # orchestrator agentRunTimeoutSeconds
REATTACH_BOUND = 45.0  # a re-attached wait (heartbeat 20 s + re-offer 10 s, with slack)
REPLY_RETRY = 10.0  # stub re-offers its reply every 10 s (AGENT_REPLY_ACK_RETRY_MS)
REPLY_HOLD_E2E = 90.0  # AGENT_REPLY_ACK_TIMEOUT_MS in e2e (10 min in production)
REPLY_HOLD_DEFAULT = 600.0  # what the stub holds when the variable is missing (failure mode 44)
STUB_DEFAULT_CADENCE = 2.0  # STUB_NARRATE_EVERY_MS default; 0 means this
STUB_CLAMP = 600.0  # pacing knobs are clamped to 10 min
SHUTDOWN_DRAIN = 25.0  # AGENT_SHUTDOWN_DRAIN_MS
POD_GRACE = 30.0  # terminationGracePeriodSeconds
NATS_RECONNECTS = 10  # client reconnect attempts...
NATS_RECONNECT_WAIT = 2.0  # ...2 s apart: about 20 s, then the connection is closed
NATS_LAME_DUCK = 10.0  # a deleted NATS pod drops its clients, then takes this long to exit...
NATS_RESTART = 12.0  # ...and its replacement this long to serve: a bounce of ~22 s (measured 22.7 s, 24.8 s)
RUN_RETENTION = 3600.0  # DefaultAgentRunRetention
LEGACY_NO_REPLY_MS = 3_660_000  # the bound the legacy relabelling printed (the incident's "3660000ms")
