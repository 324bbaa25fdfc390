"""Fixtures for the fake GitHub's conformance specs: a seeded fake (in-process or on a socket), real
clients (githubkit per schema version with retries off, PyGithub over the socket), a webhook receiver, a leak check."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from githubkit import GitHub

from fakes.github import FakeGitHub, in_process, unserved
from fakes.server import FakeHandle, serve_fake
from fakes.testing import no_leaks as leak_check
from fakes.testing import register_fuzz_marker
from specs.github.receiver import Receiver
from specs.github.world import SCHEMAS, TOKEN, Schema, seed


def pytest_configure(config: pytest.Config) -> None:
    register_fuzz_marker(config)


@pytest.fixture
def no_leaks() -> Iterator[None]:
    """Fail the test if threads or file descriptors are not back to baseline after it (bounded settle: 5 s)."""
    with leak_check():
        yield


@pytest.fixture
def fake_inproc() -> Iterator[FakeHandle[FakeGitHub]]:
    """A seeded fake reached through the in-process transport (no socket)."""
    with in_process() as handle:
        seed(handle.app)
        yield handle


@pytest.fixture
def served(no_leaks: None, fake_github: FakeHandle[FakeGitHub]) -> FakeHandle[FakeGitHub]:
    """The ``fake_github`` fixture (a real socket), seeded; leak-checked after the server stops."""
    seed(fake_github.app)
    return fake_github


@pytest.fixture(params=SCHEMAS)
def schema(request: pytest.FixtureRequest) -> Schema:
    version: Schema = request.param
    return version


@pytest.fixture
def kit(fake_inproc: FakeHandle[FakeGitHub], schema: Schema) -> Iterator[GitHub[Any]]:
    """githubkit with alice's token, in-process, automatic retries off (specs use ``kit.rest(schema)``)."""
    yield GitHub(
        TOKEN,
        base_url=fake_inproc.url,
        transport=fake_inproc.transport(),
        auto_retry=False,
        http_cache=False,
        timeout=10.0,
    )
    assert [(e.method, e.path) for e in unserved(fake_inproc)] == []  # githubkit called only modelled routes


@pytest.fixture
def receiver(no_leaks: None) -> Iterator[FakeHandle[Receiver]]:
    """A webhook receiver on a real socket that checks signatures like the gateway (401 on mismatch, else 202)."""
    with serve_fake(Receiver(secret="s3cret")) as handle:
        yield handle
