"""`runserver` with Nagle's algorithm off on every connection it accepts.

wsgiref writes a response's headers and its body in two `send()` calls. On a kept-alive connection
(any HTTP client library that reuses connections) Nagle's algorithm holds the body back until the
client ACKs the headers, and the client delays that ACK by up to 40 ms: every response stalled
≈ 45 ms (README "Benchmarks"). TCP_NODELAY sends the body at once.
"""

from __future__ import annotations

import socket
from typing import Any

from django.contrib.staticfiles.management.commands.runserver import Command as StaticFilesRunserver
from django.core.servers.basehttp import WSGIServer


class NoDelayWSGIServer(WSGIServer):
    def get_request(self) -> tuple[Any, Any]:
        connection, address = super().get_request()
        if connection.family in (socket.AF_INET, socket.AF_INET6):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address


class Command(StaticFilesRunserver):
    server_cls = NoDelayWSGIServer
