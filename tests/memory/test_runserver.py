"""`manage.py runserver` is ours: every accepted TCP connection has Nagle's algorithm off."""

from __future__ import annotations

import socket

import pytest
from django.core.management import get_commands
from django.core.servers.basehttp import WSGIRequestHandler
from django.db import connections

from ottoweb.management.commands.runserver import NoDelayWSGIServer


def test_manage_py_runserver_is_the_nodelay_one():
    assert get_commands()["runserver"] == "ottoweb"


def test_accepted_connections_have_nagle_off():
    server = NoDelayWSGIServer(("127.0.0.1", 0), WSGIRequestHandler)
    try:
        client = socket.create_connection(server.server_address)
        try:
            accepted, _ = server.get_request()
            try:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            finally:
                accepted.close()
        finally:
            client.close()
    finally:
        server.server_close()


@pytest.mark.django_db(transaction=True)
def test_a_finished_request_leaves_no_database_connection_open():
    """Each request has a thread of its own; a connection it leaves open lingers until garbage
    collection, and PostgreSQL ran out of connections under 16 clients."""
    server = NoDelayWSGIServer(("127.0.0.1", 0), WSGIRequestHandler)
    client = socket.create_connection(server.server_address)
    try:
        accepted, _ = server.get_request()
        connections["default"].ensure_connection()
        assert connections["default"].connection is not None

        server.close_request(accepted)

        assert connections["default"].connection is None
    finally:
        client.close()
        server.server_close()
