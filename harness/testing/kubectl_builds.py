"""The real kubectl builds installed beside the ``kubectl`` on PATH, for specs about kubectl's own behaviour.

Google Cloud SDK installs a *dispatcher* as ``kubectl`` (it asks the server's version, then runs the matching
``kubectl.1.NN`` next to it; with no server it picks its own default). Specs that pin down what a given kubectl
release does call ``kubectl.1.NN`` directly instead.
"""

from __future__ import annotations

import os
import shutil

MINORS = tuple(range(27, 34))
"""The kubectl minor versions the harness supports: 1.27 to 1.33."""


def real_kubectl(minor: int) -> str | None:
    """The path of ``kubectl.1.<minor>`` beside the ``kubectl`` on PATH, or ``None`` when it is not installed."""
    found = shutil.which("kubectl")
    if found is None:
        return None
    candidate = os.path.join(os.path.dirname(os.path.realpath(found)), f"kubectl.1.{minor}")
    return candidate if os.access(candidate, os.X_OK) else None


def installed() -> dict[int, str]:
    """Minor version -> path of every supported real kubectl build that is installed."""
    return {minor: path for minor in MINORS if (path := real_kubectl(minor)) is not None}
