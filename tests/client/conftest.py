"""A live server per test module: its own data folder, the production web server (uvicorn), and
compaction inline (no worker). A module that needs other settings defines its own `server`."""

from __future__ import annotations

import pytest

from tests.live import Instance


@pytest.fixture(scope="module")
def server(tmp_path_factory, request):
    instance = Instance(
        tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]), OTTO_COMPACTION="inline"
    )
    instance.start_web(production=True)
    yield instance
    instance.close()
