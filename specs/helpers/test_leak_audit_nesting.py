"""The leak audit of an in-process pytester session leaves alone the children its outer session already had
(the main job's port-forwards were killed by a guard spec's inner session before it kept a baseline)."""

from __future__ import annotations

import sys

import pytest

from harness import process


def test_an_inner_session_does_not_kill_the_outer_sessions_children(pytester: pytest.Pytester) -> None:
    outer = process.spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pytester.makepyfile("def test_nothing():\n    pass\n")
        result = pytester.runpytest("-p", "no:cacheprovider")
        result.assert_outcomes(passed=1)
        assert outer.poll() is None, "the inner session's audit killed a child of the outer session"
    finally:
        process.kill_group(outer)
