"""`runserver` with Nagle's algorithm off on every connection it accepts, and no connection left open.

wsgiref writes a response's headers and its body in two `send()` calls. On a kept-alive connection
(any HTTP client library that reuses connections) Nagle's algorithm holds the body back until the
client ACKs the headers, and the client delays that ACK by up to 40 ms: every response stalled
≈ 45 ms (docs/benchmarks.md). TCP_NODELAY sends the body at once.
"""

from __future__ import annotations

import socket
from typing import Any

from django.contrib.staticfiles.management.commands.runserver import Command as StaticFilesRunserver
from django.core.servers.basehttp import WSGIServer
from django.db import connections


class NoDelayWSGIServer(WSGIServer):
    def get_request(self) -> tuple[Any, Any]:
        connection, address = super().get_request()
        if connection.family in (socket.AF_INET, socket.AF_INET6):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address

    def close_request(self, request: Any) -> None:
        # Each request runs in a thread of its own that then ends; its database connection would
        # stay open until garbage collection (CONN_MAX_AGE), and under load PostgreSQL ran out of
        # connections ("too many clients"). Django's own test server closes them the same way.
        connections.close_all()
        super().close_request(request)


class Command(StaticFilesRunserver):
    server_cls = NoDelayWSGIServer
