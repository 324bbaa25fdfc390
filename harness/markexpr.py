"""Whether a run's ``-m`` expression can select cluster specs at all (then the harness touches no kube context)."""

from __future__ import annotations

import pytest


def cluster_specs_selectable(config: pytest.Config) -> bool:
    """False when the ``-m`` expression can never select a spec marked ``cluster``."""
    expression = config.getoption("markexpr", "") or ""
    if not expression:
        return True
    try:
        from _pytest.mark.expression import Expression

        compiled = Expression.compile(expression)
        plain = compiled.evaluate(lambda name, /, **kwargs: name == "cluster")
        disruptive = compiled.evaluate(lambda name, /, **kwargs: name in ("cluster", "disruptive"))
    except Exception:  # pytest's private expression API changed: assume they may be selected
        return True
    return bool(plain or disruptive)
