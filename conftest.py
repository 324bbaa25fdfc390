"""Repository-level pytest configuration.

The harness's own pytest plugin (markers ``cluster`` and ``disruptive``, options ``--kube-context`` and
``--namespace``, fixtures ``kube``, ``since``, ``issue_number``, ``forwards``) is loaded through its
``pytest11`` entry point (``harness.pytest_plugin``), so it works the same in any project that installs
the harness. The fakes' fixtures (``fake_qdrant``, ``fake_github``, ``fake_kube``) are listed here.
"""

pytest_plugins = [
    "pytester",  # the plugin's guard specs run inner pytest sessions
    "fakes.github.fixtures",
    "fakes.qdrant.fixtures",
    "fakes.kube.fixtures",
    "fakes.kube.kubectl_builds",  # the kubectl version matrix (fixture kubectl_build, option --kubectl-matrix)
]
