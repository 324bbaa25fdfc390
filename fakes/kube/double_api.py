"""What exec and port-forward need of the double: :class:`~fakes.kube.double_core.DoubleCore` and its registries.

:mod:`fakes.kube.double` installs :mod:`fakes.kube.exec` and :mod:`fakes.kube.portforward`, so they cannot import it
back, not even for types; they type the double with this protocol, which :class:`~fakes.kube.double.KubeDouble`
satisfies.
"""

from __future__ import annotations

from typing import Protocol

from fakes.kube.double_core import DoubleCore
from fakes.kube.extensions import ExecHandlers, LocalRuns, PortMap, SubresourceHandlers


class DoubleApi(DoubleCore, Protocol):
    """The double's ``subresources``, ``ports``, ``exec_handlers`` and ``local_runs`` registries on top of its core."""

    @property
    def subresources(self) -> SubresourceHandlers: ...

    @property
    def ports(self) -> PortMap: ...

    @property
    def exec_handlers(self) -> ExecHandlers: ...

    @property
    def local_runs(self) -> LocalRuns: ...
