"""`manage.py mcp`: the MCP tools over stdio, for desktop clients that start a process.

The token comes from OTTO_TOKEN (never an argument: a process list would show it) and is checked at
start and again on every call, so revoking it stops the process's access at once. stdout carries
only the protocol; logs go to stderr.
"""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections
from mcp.server.mcpserver import Context

from accounts.auth import token_owner
from memory.mcp.calls import Caller, unauthorized
from memory.mcp.tools import build_server


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio as the user of the token in OTTO_TOKEN."

    def handle(self, *args, **options):
        token = os.environ.get("OTTO_TOKEN", "").strip()
        if not token:
            raise CommandError("set OTTO_TOKEN to an ottoweb API token (manage.py create_token USERNAME)")
        if token_owner(token) is None:
            raise CommandError("OTTO_TOKEN is not a live ottoweb token (unknown or revoked)")
        close_old_connections()

        def identify(ctx: Context) -> Caller:
            row = token_owner(token)
            if row is None:
                raise unauthorized("OTTO_TOKEN was revoked")
            return Caller(row, "stdio")

        build_server(identify).run("stdio")
