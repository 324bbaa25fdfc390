"""What the controller manager puts in every namespace: the ``default`` ServiceAccount (the serviceaccount
controller, ``pkg/controller/serviceaccount/serviceaccounts_controller.go``) and the ``kube-root-ca.crt``
ConfigMap (the root CA publisher, ``pkg/controller/certificates/rootcacertpublisher/publisher.go``).

Both appear shortly after their namespace does, and come back when deleted, as on a real cluster (clients that
wait for the ``default`` ServiceAccount before creating pods see it arrive). The ConfigMap holds the CA that signs
the double's serving certificate when it serves https, else a throwaway CA made for this double; the ServiceAccount
lists no token Secrets (none are created since 1.24, ``LegacyServiceAccountTokenNoAutoGeneration``).
"""

from __future__ import annotations

from collections.abc import Iterable

from fakes.kube.controllers.base import ControllerContext, Key, Reconciler, deleting
from fakes.kube.errors import ApiError
from fakes.kube.store import StoreEvent

SERVICE_ACCOUNT = "default"
ROOT_CA = "kube-root-ca.crt"
#: The publisher's annotation on the ConfigMap (``publisher.go``, ``descriptionAnnotation``).
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters."
)


class NamespaceDefaults(Reconciler):
    """Creates (and recreates) the ``default`` ServiceAccount and ``kube-root-ca.crt`` in every live namespace."""

    name = "serviceaccount-controller"
    watches = ("/namespaces", "/serviceaccounts", "/configmaps")

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self._ca_pem: str | None = None

    def start(self) -> None:
        super().start()
        self.ctx.soon(self.resync)

    def resync(self) -> None:
        """Look at every namespace again (at start and after a reset)."""
        for ns in self.store.list("namespaces")[0]:
            self.enqueue("", ns["metadata"]["name"])

    def keys_for(self, event: StoreEvent) -> Iterable[Key]:
        if event.resource.key == "/namespaces":
            if event.type != "DELETED":
                yield "", event.name
        elif event.type == "DELETED" and event.name in (SERVICE_ACCOUNT, ROOT_CA):
            yield "", event.namespace

    def sync(self, namespace: str, name: str) -> None:
        ns = self.store.get("namespaces", None, name)
        if ns is None or deleting(ns):
            return
        if self.store.get("serviceaccounts", name, SERVICE_ACCOUNT) is None:
            self._create("serviceaccounts", {"metadata": {"name": SERVICE_ACCOUNT, "namespace": name}})
        if self.store.get("configmaps", name, ROOT_CA) is None:
            self._create(
                "configmaps",
                {
                    "metadata": {
                        "name": ROOT_CA,
                        "namespace": name,
                        "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
                    },
                    "data": {"ca.crt": self.ca_pem()},
                },
            )

    def ca_pem(self) -> str:
        """The CA bundle the ConfigMap publishes (PEM text)."""
        if self._ca_pem is None:
            served = getattr(self.ctx.double, "ca_pem", None)
            if served is None:
                from fakes.kube import tls

                served = tls.generate().ca_pem
            self._ca_pem = served.decode() if isinstance(served, bytes) else str(served)
        return self._ca_pem

    def _create(self, resource: str, obj: dict[str, object]) -> None:
        try:
            self.store.create(resource, obj)
        except ApiError as exc:
            if exc.code not in (404, 409, 403):  # the namespace went meanwhile, or someone else created it
                raise
