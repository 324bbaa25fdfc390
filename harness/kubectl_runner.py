"""What diagnosis needs of a :class:`~harness.kube.Kube`: its namespace and its bounded kubectl calls.

:mod:`harness.rollout` explains rollouts for ``Kube.rollout_status``, so it cannot import :mod:`harness.kube` back (not
even for types: that is an import circle all the same); it types its ``kube`` parameters with this protocol, which
every ``Kube`` satisfies.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from harness.process import Completed


class KubectlRunner(Protocol):
    """A pinned kubectl: ``namespace`` it works in, ``kubectl(*args)`` (a :class:`~harness.process.Completed`) and
    ``kubectl_json(*args)`` (parsed ``-o json``, ``None`` for no output), both bounded by ``timeout`` seconds and
    raising :class:`~harness.errors.KubectlError` as :meth:`harness.kube.Kube.kubectl` documents; ``server_time()``
    the API server's clock (:meth:`harness.kube.Kube.server_time`)."""

    @property
    def namespace(self) -> str: ...

    def kubectl(self, *args: str, timeout: float = ..., input: str | None = ..., check: bool = ...) -> Completed: ...

    def kubectl_json(self, *args: str, timeout: float = ...) -> Any: ...

    def server_time(self, *, timeout: float = ...) -> datetime: ...
