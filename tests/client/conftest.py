"""Live servers for the client's tests: each with its own data folder, the production web server
(uvicorn), and compaction inline (no worker). A module that needs other settings defines its own
`server`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.live import Instance


def _started(tmp_path_factory, name: str) -> Iterator[Instance]:
    instance = Instance(tmp_path_factory.mktemp(name), OTTO_COMPACTION="inline")
    instance.start_web(production=True)
    yield instance
    instance.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory, request) -> Iterator[Instance]:
    """One server for the module's tests."""
    yield from _started(tmp_path_factory, request.module.__name__.rsplit(".", 1)[-1])


@pytest.fixture
def fresh_server(tmp_path_factory, request) -> Iterator[Instance]:
    """A server of the test's own, for one that needs to start from nothing (an example written
    for a new user reuses names like "demo" another example took)."""
    yield from _started(tmp_path_factory, request.node.name[:40])
