"""Isolation, generated from the URL conf: Bob on any of Alice's objects gets 404 and changes nothing.

Every route that takes a value from its path is found by walking Django's resolver, so a route added
later is tested without anyone listing it (and the test fails if it cannot fill the route in). Also:
tokens are stored only as their sha256, and the server binds to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import load_command_class
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from accounts.models import ApiToken
from accounts.services import issue_token
from lessons.models import ErrorRecord
from memory import services
from memory.models import Bullet, Job, LearnedWindow, ScopedMemory
from ottoweb.api import api
from tests.conftest import ApiClient
from tests.live import ROOT, Instance
from tests.reliability.snapshot import all_rows

pytestmark = pytest.mark.django_db

SECRET = "Alice's secret: the vault code is 7731"

# Routes that take path values but look nothing up for a user: a one-time login link (signed, tested
# in tests/dashboard) and static files.
NOT_OBJECT_ROUTES = {"login/link/<str:uidb64>/<str:token>/", "^static/(?P<path>.+)$"}

# A valid body for each API operation that has one, so a refusal can only be the object lookup
# (an invalid body would answer 422 before the lookup ever ran).
API_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/sessions/{sid}/items"): {"role": "user", "text": "Bob writes here"},
    ("POST", "/api/v1/sessions/{sid}/items/batch"): {"items": [{"role": "user", "text": "Bob writes"}]},
    ("POST", "/api/v1/sessions/{sid}/items/{position}/pin"): {"pinned": True},
    ("POST", "/api/v1/sessions/{sid}/recall"): {"query": "vault code", "match": "keyword"},
    ("POST", "/api/v1/sessions/{sid}/memory"): {"action": "reset", "mode": "all"},
    ("POST", "/api/v1/sessions/{sid}/reembed"): {},
    ("PATCH", "/api/v1/lessons/errors/{record_id}"): {"action": "Bob's action"},
}

# Operations that take an object's id in the body rather than the path.
API_BODY_REFERENCES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/runs/fit"): {
        "session": "plans",
        "model": "openai:gpt-4o",
        "messages": [{"role": "user", "content": "hello"}],
    },
}


@pytest.fixture
def world(alice, bob):
    """Alice's session (compacted, so it has bullets), a job, a lesson, a token, a scoped note."""
    session = services.create_session(user=alice, sid="plans", title=SECRET, x_budget=40, y_budget=80)
    for n in range(12):
        services.append_items(
            session=session,
            items=[services.NewItem(role="assistant", text=f"{SECRET}, step {n} of the migration plan.")],
        )
    # A last short turn stays raw, so that Alice can take it back (items/pop) where Bob cannot.
    services.append_items(session=session, items=[services.NewItem(role="user", text="Noted.")])
    job = Job.objects.create(id="0123456789abcdef", user=alice, session=session, kind="reembed")
    lesson = ErrorRecord.objects.create(user=alice, tool="bash", error=SECRET, action="rm -rf build/")
    token, _ = issue_token(user=alice, name="laptop")
    learned = LearnedWindow.objects.create(user=alice, model="openai:gpt-4o", window=8192)
    note = ScopedMemory.objects.create(user=alice, mode="app", project_key="app:crm@acme.com", content=SECRET)
    bullet = Bullet.objects.filter(session=session, superseded=False).first()
    assert bullet is not None
    values = {
        "sid": session.sid,
        "job_id": job.id,
        "record_id": str(lesson.pk),
        "bullet_id": str(bullet.pk),
        "token_id": str(token.pk),
        "learned_id": str(learned.pk),
        "note_id": str(note.pk),
        # A turn's position is an object of the session only: Bob's lookup fails at the session.
        "position": "0",
    }
    return values


def url_routes() -> list[tuple[str, URLPattern]]:
    """(route template, pattern) for every route of the URL conf, includes flattened."""

    def walk(resolver: URLResolver, prefix: str) -> list[tuple[str, URLPattern]]:
        found = []
        for item in resolver.url_patterns:
            if isinstance(item, URLResolver):
                found += walk(item, prefix + str(item.pattern))
            else:
                found.append((prefix + str(item.pattern), item))
        return found

    return walk(get_resolver(), "")


def path_names(pattern: URLPattern) -> list[str]:
    return list(pattern.pattern.regex.groupindex)


def id_routes() -> dict[str, list[str]]:
    """Every route that takes a value from its path: template → the names of those values."""
    return {route: path_names(p) for route, p in url_routes() if path_names(p)}


def openapi_template(route: str) -> str:
    """A Django route ("api/v1/sessions/<sid>") as its OpenAPI path ("/api/v1/sessions/{sid}")."""
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)


def api_operations() -> dict[tuple[str, str], dict[str, Any]]:
    """(METHOD, path) → OpenAPI operation, for every operation of the NinjaAPI."""
    paths = api.get_openapi_schema()["paths"]
    return {(method.upper(), path): op for path, ops in paths.items() for method, op in ops.items()}


def body_fields(op: dict[str, Any]) -> set[str]:
    """The top-level field names of an operation's JSON body."""
    schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    if "$ref" in schema:
        schema = api.get_openapi_schema()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return set(schema.get("properties", {}))


def fill(template: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)


def expect_not_found(response) -> None:
    assert response["Content-Type"] == "application/json; charset=utf-8"
    body = response.json()
    assert (response.status_code, body["code"]) == (404, "not_found")
    assert SECRET not in response.content.decode()


def as_alice_and_roll_back(alice_api: ApiClient, method: str, path: str, body: Any) -> int:
    """The same request as Alice, undone afterwards: proves the ids name real objects of hers."""
    with transaction.atomic():
        status = alice_api.call(method, path, body).status_code
        transaction.set_rollback(True)
    return status


def test_every_id_route_of_the_url_conf_is_covered(world):
    routes = id_routes()
    api_routes = {r for r in routes if r.startswith("api/")}
    operations = api_operations()
    with_path_ids = {
        key for key, op in operations.items() if any(p["in"] == "path" for p in op.get("parameters", []))
    }

    # Every API route with a path value is an operation of the NinjaAPI, and the other way round.
    assert {openapi_template(r) for r in api_routes} == {path for _, path in with_path_ids}
    # Every operation with a body has one here; none listed here is stale.
    assert {key for key in with_path_ids if "requestBody" in operations[key]} <= set(API_BODIES)
    assert set(API_BODIES) <= with_path_ids
    # Every value a route takes is one the test can fill with an object of Alice's.
    names = {name for route, names in routes.items() if route not in NOT_OBJECT_ROUTES for name in names}
    assert names <= set(world)
    # A body field naming a session is a reference too: every operation with one is listed.
    referencing = {key for key, op in operations.items() if "session" in body_fields(op)}
    assert referencing == set(API_BODY_REFERENCES)


def test_bob_gets_404_on_every_api_operation_that_takes_alices_id(world, alice_api, bob_api):
    operations = api_operations()
    cases = [
        (method, path)
        for (method, path), op in sorted(operations.items())
        if any(p["in"] == "path" for p in op.get("parameters", []))
    ]
    bob_api.get("/api/v1/sessions")  # Bob's token records its first use now, not mid-comparison
    before = all_rows()

    tested = []
    for method, template in cases:
        path = fill(template, world)
        body = API_BODIES.get((method, template))
        response = bob_api.call(method, path, body)
        expect_not_found(response)
        assert as_alice_and_roll_back(alice_api, method, path, body) in (200, 201, 202, 204), (method, path)
        tested.append((method, template))

    assert all_rows() == before
    assert len(tested) == len(cases) >= 12


def test_bob_gets_404_when_a_body_names_alices_session(world, alice_api, bob_api):
    bob_api.get("/api/v1/sessions")
    before = all_rows()

    for (method, path), body in API_BODY_REFERENCES.items():
        response = bob_api.call(method, path, body)
        expect_not_found(response)
        assert as_alice_and_roll_back(alice_api, method, path, body) == 200

    assert all_rows() == before


def test_bob_gets_404_on_every_dashboard_route_that_takes_alices_id(world, alice, bob):
    routes = {
        r: names
        for r, names in id_routes().items()
        if not r.startswith("api/") and r not in NOT_OBJECT_ROUTES
    }
    bob_web, alice_web = Client(), Client()
    bob_web.force_login(bob)
    alice_web.force_login(alice)
    before = all_rows()

    seen = []
    for route in sorted(routes):
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: world[m.group(1)], route)
        for method in ("GET", "POST"):
            response = getattr(bob_web, method.lower())(path)
            # A view that does not take this method refuses it before looking anything up.
            refused_method = response.status_code == 405 and method not in response["Allow"]
            assert (path, method, response.status_code == 404 or refused_method) == (path, method, True)
            assert SECRET not in response.content.decode()
        seen.append(route)
        with transaction.atomic():
            assert (path, alice_web.get(path).status_code != 404) == (path, True)
            transaction.set_rollback(True)

    assert all_rows() == before
    assert sorted(seen) == sorted(routes)


def test_bob_cannot_list_or_search_alices_objects(world, bob_api):
    for path in (
        "/api/v1/sessions",
        "/api/v1/sessions?q=plans",
        "/api/v1/lessons/errors",
        "/api/v1/lessons/errors?q=vault&match=keyword",
    ):
        response = bob_api.get(path)
        assert (path, response.status_code, response.json()["count"]) == (path, 200, 0)
    # Any listing that can be narrowed to a session shows Bob nothing of Alice's.
    for (method, template), op in api_operations().items():
        if method == "GET" and "session" in {
            p["name"] for p in op.get("parameters", []) if p["in"] == "query"
        }:
            response = bob_api.get(f"{template}?session=plans")
            assert (template, response.status_code, SECRET in response.content.decode()) == (
                template,
                200,
                False,
            )
    related = bob_api.post("/api/v1/lessons/related", {"tool": "bash", "error": SECRET, "match": "keyword"})
    assert related.json()["related_errors"] == []


def test_bob_creating_alices_session_id_gets_his_own_session(world, alice, bob_api):
    alice_session = all_rows()["memory_session"]

    response = bob_api.post("/api/v1/sessions", {"id": "plans", "title": "Bob's plans"})

    # Ids are per user: a 409 here would tell Bob that Alice has a session called "plans".
    assert (response.status_code, response.json()["title"], response.json()["turns"]) == (
        201,
        "Bob's plans",
        0,
    )
    assert set(alice_session) < set(all_rows()["memory_session"])


def test_tokens_are_stored_only_as_their_sha256(alice):
    row, plain = issue_token(user=alice, name="ci")

    stored = ApiToken.objects.filter(pk=row.pk).values().get()

    assert stored["digest"] == hashlib.sha256(plain.encode()).hexdigest()
    assert stored["prefix"] == plain[:12]
    assert [key for key, value in stored.items() if plain in str(value)] == []
    assert not any(plain in line for rows in all_rows().values() for line in rows)


def test_serve_and_make_run_default_to_127_0_0_1():
    serve = load_command_class("memory", "serve").create_parser("manage.py", "serve").parse_args([])
    # Without HOST or PORT in the environment: those are how a user tells it otherwise.
    env = {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT")}
    dry_run = subprocess.run(
        ["make", "--dry-run", "run"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )

    assert serve.addrport == "127.0.0.1:8000"
    assert "manage.py serve 127.0.0.1:8000" in dry_run.stdout


def listening_addresses(port: int) -> set[str]:
    """The local addresses a socket LISTENs on at `port`, from /proc/net/tcp and tcp6."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def test_serve_given_only_a_port_listens_on_loopback_only(tmp_path):
    # A migrated database of its own (under DB=postgres a PostgreSQL database, dropped afterwards),
    # never the shared default one. The command line names the port only, no address.
    instance = Instance(tmp_path)
    port = instance.port
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", str(port), "--no-worker"],
        cwd=ROOT,
        env=instance.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not listening_addresses(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        # 0100007F is 127.0.0.1 as /proc/net/tcp writes it (little-endian hex).
        assert listening_addresses(port) == {"0100007F"}
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        instance.close()
