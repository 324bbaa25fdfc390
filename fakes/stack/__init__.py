"""A twin of the agent-controller stack: what the cluster specs run against when there is no cluster.

The twin is the Kubernetes API double (:mod:`fakes.kube`, with its controllers and kubelet) with the stack deployed
on it by the real ``kubectl`` in the upstream set-up's order (:mod:`fakes.stack.up`), and a node
(:mod:`fakes.stack.node`) that runs each pod's service as an in-process instance: the integration gateway, the
agent orchestrator, the core-controller, the stub agent (every AgentRun's Job), NATS and Redis stand-ins, and the
fakes playing GitHub and Qdrant. Specs reach it exactly as they reach minikube: a kube context, real kubectl verbs
and ``kubectl port-forward`` to the Services. Deleting a pod or rolling a Deployment restarts the service behind it.

The services reach Kubernetes only through the API server, as the product's do: each with the ServiceAccount token
its node asked for and the RBAC its manifests grant (:mod:`fakes.stack.cluster_api`; lists, watches that resume from
their resourceVersion, conflicts). The node is the one part of the twin that touches the double's insides, and only
for what a node does (its port table, exec and log streams, the environment and volumes a kubelet builds).

Start it::

    with fakes.stack.serve(kubeconfig="/tmp/kc", context="stack-twin") as twin:
        twin.kube()            # a harness.Kube pinned to the twin's context (allowed for it alone)

or ``python -m fakes.stack --kubeconfig PATH [--context NAME] [--bug NAME ...] [--time-scale K] [--set NAME=S]``
(what the harness's ``--target twin`` runs). ``bugs`` switches known product bugs back on (:mod:`fakes.stack.bugs`).
Every timing is the stack's e2e value from the timing profile (``profile.toml``, :mod:`fakes.stack.profile`) divided
by ``time_scale`` (never below the entry's floor; 1 runs the stack's own cadence, as long as on minikube); the
scaled deployed values are in the objects the twin applies, and the namespace says the scale in its annotation
``twin.stack-harness.dev/time-scale``. ``overrides`` deploys chosen values as given (seconds): a mis-set stack.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

import fakes.kube
from fakes.kube.client import Api
from fakes.stack import bugs as bug_switches
from fakes.stack import config
from fakes.stack.node import Host, Node, NodeRunner
from fakes.stack.profile import Effective, effective
from fakes.stack.up import Up

DEFAULT_CONTEXT = "stack-twin"
IMAGE_PREFIX = "twin.stack-harness.dev/"


class TwinHandle:
    """A running twin: ``kubeconfig``, ``context``, ``namespace``, ``kd`` (the API double's handle), ``node``,
    ``bugs`` (the live :class:`fakes.stack.bugs.Switches`),
    ``timing`` (its effective timing profile), ``start_seconds`` (wall time of the whole start, set-up
    included) and ``up_steps``."""

    def __init__(
        self,
        kd: fakes.kube.KubeHandle,
        node: Node,
        bugs: bug_switches.Switches,
        start_seconds: float,
        up_steps: list[tuple[str, float]],
    ) -> None:
        self.kd = kd
        self.node = node
        self.bugs = bugs
        self.timing: Effective = node.timing
        self.start_seconds = start_seconds
        self.up_steps = up_steps
        self.kubeconfig = kd.kubeconfig
        self.context = kd.context
        self.namespace = config.NAMESPACE

    def kube(self, **kwargs: Any) -> Any:
        """A ``harness.Kube`` pinned to the twin's context and the stack's namespace."""
        return self.kd.kube(namespace=config.NAMESPACE, **kwargs)


def register_images(node: Node) -> None:
    from fakes.stack.agent import StubAgent
    from fakes.stack.controller import CoreController
    from fakes.stack.gateway import Gateway
    from fakes.stack.model_endpoint import fake_openai
    from fakes.stack.nats import NatsServer
    from fakes.stack.orchestrator import Orchestrator
    from fakes.stack.pods import IdlePod, TcpPod, fake_github, fake_qdrant
    from fakes.stack.redis import RedisServer

    for image, factory in (
        ("integration-gateway:", Gateway),
        ("agent-orchestrator:", Orchestrator),
        ("core-controller:", CoreController),
        ("stub-agent:", StubAgent),
        ("nats:", NatsServer),
        ("nats-box:", IdlePod),
        ("redis:", RedisServer),
        ("temporal-dev-server:", TcpPod),
    ):
        node.register(IMAGE_PREFIX + image, factory)
    node.register("fake-github:", fake_github)
    node.register("fake-qdrant:", fake_qdrant)
    node.register("fake-openai:", fake_openai)


@contextlib.contextmanager
def serve(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str = DEFAULT_CONTEXT,
    *,
    bugs: list[str] | tuple[str, ...] = (),
    kubectl_version: str = fakes.kube.DEFAULT_KUBECTL_VERSION,
    kubectl: str = "kubectl",
    time_scale: float = 1.0,
    overrides: Mapping[str, float] | None = None,
) -> Iterator[TwinHandle]:
    """Start the API double, the node and the stack; yields a :class:`TwinHandle`; stops everything on exit.

    ``time_scale`` (>= 1) divides every timing of the profile; ``overrides`` (deployed value name -> seconds) deploys
    those as given. Raises :class:`fakes.stack.bugs.UnknownBug` for an unknown switch,
    :class:`fakes.stack.profile.ProfileError` for a scale below 1 or an override naming no deployed value,
    :class:`fakes.stack.up.UpFailed` when a set-up step fails (the message names it),
    ``fakes.server.FakeServerError`` when the double does not start.
    """
    switched = bug_switches.parse(list(bugs))
    timing = effective(time_scale, overrides)
    began = time.monotonic()
    with fakes.kube.serve(
        kubeconfig, context=context, namespace=config.NAMESPACE, kubectl_version=kubectl_version
    ) as kd:
        switches = bug_switches.Switches(switched)
        host = Host(kd.double.ports, kd.double.exec_handlers, kd.controllers.logs, kd.double.clock.time)
        node = Node(host, Api.from_kubeconfig(kd.kubeconfig, kd.context), config.NAMESPACE, switches, timing)
        register_images(node)
        try:
            node.start_loop()
            runner = NodeRunner(node)
            kd.controllers.kubelet.containers.register(runner.matches, runner)

            def run_kubectl(*args: str, input: str | None = None, timeout: float = 60.0) -> Any:
                return kd.kubectl(*args, input=input, timeout=timeout, kubectl=kubectl)

            up = Up(run_kubectl, timing)
            up.run()
            node.publish_bugs()  # from now on the ConfigMap decides, at every turn
            yield TwinHandle(kd, node, switches, time.monotonic() - began, up.steps)
        finally:
            node.close()
