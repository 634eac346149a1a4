"""The MCP server's initialize answer names it and its version: the project's (`ottoweb.__version__`,
the version of the client package shipped with it too). It answered an empty version."""

from __future__ import annotations

import tomllib
from concurrent.futures import ThreadPoolExecutor

import anyio
from mcp import Client

import ottoweb
from memory.mcp.tools import build_server
from tests.live import ROOT


def test_the_initialize_answer_carries_the_project_s_version():
    server = build_server(lambda ctx: None)  # type: ignore[arg-type,return-value]  # no tool is called

    async def main():
        async with Client(server) as client:
            return client.server_info

    with ThreadPoolExecutor(max_workers=1) as runner:  # no event loop of an earlier test in the way
        info = runner.submit(anyio.run, main).result()

    client_package = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]
    assert info.name == "ottoweb"
    assert info.version == ottoweb.__version__ == client_package["version"]
