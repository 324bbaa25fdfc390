"""The agent-controller stack layer: its clients and helpers, the twin target, beside its specs.

It builds on the generic harness (:mod:`harness`) and never the reverse: the contracts in ``pyproject.toml``
(``lint-imports`` in ``make lint``) forbid the generic harness and the fakes other than ``fakes.stack`` to import it.
Import what you need from its modules (``specs.agent_controller.invoke``, ``.credentials``, ...); this package
re-exports nothing, so importing one client never loads the others.
"""
