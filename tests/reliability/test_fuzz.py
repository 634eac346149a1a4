"""Schemathesis against the real server: every operation of /api/v1/openapi.json, with a real token.

Each operation gets valid and invalid inputs (schemathesis' positive and negative modes), with path
ids both generated and naming real objects (a session with turns, a job, a lesson), so the calls
reach the code behind the lookup. Every answer must be no 5xx, a documented status code, the
documented content type, and a body matching the documented schema.

The example count is bounded (OTTO_FUZZ_EXAMPLES per operation, default 60) and the run is
derandomized, so `make test` is repeatable; raise the count to search further.
"""

from __future__ import annotations

import collections
import json
import os
import time
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from ottoweb.api import api
from tests.live import Instance

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("OTTO_FUZZ_EXAMPLES", "60"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
SEED_TURNS = [
    {"role": "user", "text": "Never deploy on Fridays."},
    {"role": "assistant", "text": "Noted: no deploys on Fridays."},
    {"role": "tool", "text": "exit 0", "kind": "context"},
]


class Server:
    """The live instance and the real objects the fuzzer's path ids may name."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.headers = {"Authorization": f"Bearer {instance.token}"}
        self.seed_session()
        self.ids = {
            "sid": "fuzz",
            "job_id": self.call("POST", "/api/v1/sessions/fuzz/reembed", {})["job_id"],
            "record_id": self.call(
                "POST",
                "/api/v1/lessons/errors",
                {"tool": "bash", "error": "disk full", "action": "rm -rf build/", "outcome": "resolved"},
            )["id"],
            "note_id": self.call(
                "POST",
                "/api/v1/memory/remember",
                {"appName": "crm", "domain": "acme.com", "key": "scope", "content": "tenant is acme.com"},
            )["id"],
            "position": 0,  # the seed's first history turn
        }
        self.document = self.call("GET", "/api/v1/sessions/fuzz/export")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.instance.request(method, path, body)
        assert status < 300, (method, path, status, answer)
        return answer

    def seed_session(self) -> None:
        self.instance.request("POST", "/api/v1/sessions", {"id": "fuzz", "x_budget": 60, "y_budget": 200})
        self.call("POST", "/api/v1/sessions/fuzz/items/batch", {"items": SEED_TURNS})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    instance = Instance(tmp_path_factory.mktemp("fuzz") / "data")
    instance.start_web()
    yield Server(instance)
    instance.close()


def strategies_for(operation, server: Server) -> list:
    """Valid and invalid cases; with real ids as well as generated ones; a real session document."""
    names = [p.name for p in operation.path_parameters]
    # The token is fixed, so invalid inputs go to the body, query and path, never to the auth.
    auth = server.headers
    found = []
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        found.append(operation.as_strategy(generation_mode=mode, headers=auth))
        if names:
            real = {name: server.ids[name] for name in names}
            found.append(operation.as_strategy(generation_mode=mode, headers=auth, path_parameters=real))
    if operation.label == "POST /api/v1/sessions/import":
        found.append(operation.as_strategy(headers=auth, body=server.document, media_type="application/json"))
    return found


def api_operations() -> set[str]:
    """Every operation of the NinjaAPI, as schemathesis labels them."""
    paths = api.get_openapi_schema()["paths"]
    return {f"{method.upper()} {path}" for path, ops in paths.items() for method in ops}


def inputless_operations() -> set[str]:
    """The operations that take no parameter and no body."""
    paths = api.get_openapi_schema()["paths"]
    return {
        f"{method.upper()} {path}"
        for path, ops in paths.items()
        for method, spec in ops.items()
        if not spec.get("parameters") and "requestBody" not in spec
    }


def test_schema_names_are_unique_so_every_operation_documents_its_own_shapes():
    """ninja keys OpenAPI components by class name: two classes of one name would share one entry."""
    names: dict[str, set[str]] = collections.defaultdict(set)
    seen: set[type] = set()

    def walk(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation in seen:
                return
            seen.add(annotation)
            if annotation.__module__.split(".")[0] in ("memory", "lessons", "ottoweb"):
                names[annotation.__name__].add(f"{annotation.__module__}.{annotation.__qualname__}")
            for field in annotation.model_fields.values():
                walk(field.annotation)
        for arg in getattr(annotation, "__args__", ()):
            walk(arg)

    for _, router in api._routers:
        for path_view in router.path_operations.values():
            for operation in path_view.operations:
                for model in [*operation.models, *operation.response_models.values()]:
                    walk(model)

    assert len(names) >= 40
    assert {name: where for name, where in names.items() if len(where) > 1} == {}


def test_fuzzing_every_operation_finds_no_server_error_and_no_schema_violation(server):
    schema = schemathesis.openapi.from_url(server.instance.url + "/api/v1/openapi.json")
    http = requests.Session()
    failures: list[str] = []
    statuses: collections.Counter[int] = collections.Counter()
    examples: dict[str, int] = {}
    slowest = 0.0

    for result in schema.get_all_operations():
        operation = result.ok()
        examples[operation.label] = 0

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(st.one_of(strategies_for(operation, server)))
        def run(case) -> None:
            nonlocal slowest
            examples[case.operation.label] += 1
            started = time.monotonic()
            response = case.call(session=http, headers=server.headers, timeout=120)
            slowest = max(slowest, time.monotonic() - started)
            statuses[response.status_code] += 1
            try:
                case.validate_response(response, checks=CHECKS, headers=server.headers)
            except FailureGroup as exc:
                failures.append(f"{case.operation.label}: {exc}"[:3000])
            if (
                case.operation.method.upper() == "DELETE"
                and response.status_code == 204
                and "sid" in (case.path_parameters or {})
            ):
                server.seed_session()  # keep the real session there for the operations after this one

        run()

    figures = {
        "operations": len(examples),
        "examples": sum(examples.values()),
        "server_errors": sum(n for status, n in statuses.items() if status >= 500),
        "statuses": dict(sorted(statuses.items())),
        "slowest_s": round(slowest, 2),
    }
    print("fuzz figures:", json.dumps(figures))
    assert failures == []
    assert figures["server_errors"] == 0
    assert set(examples) == api_operations()
    # Hypothesis stops early only where an operation has fewer distinct inputs than that: one,
    # for an operation that takes no input at all.
    assert {label: n for label, n in examples.items() if n < min(EXAMPLES, 10)} == {
        label: 1 for label in inputless_operations()
    }
