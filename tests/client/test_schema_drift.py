"""ottoweb_client against the OpenAPI document: any drift between the two fails here.

Checked: every client method's operation exists with the same request and answer components and
query parameters; every sessions, audit, lessons, scoped-memory and runs operation has a client
method; every answer TypedDict has exactly its component's fields, required where the component
requires them; and every method's arguments are exactly its operation's body fields or query
parameters.
"""

from __future__ import annotations

import inspect
import typing

import mypy.api
import ottoweb_client.types as types
import pytest
from ottoweb_client import OPERATIONS, Ottoweb

from ottoweb.api import api
from tests.live import ROOT

PREFIX = "/api/v1"
COVERED_TAGS = {"sessions", "audit", "lessons", "scoped memory", "runs"}
# A method argument the API spells otherwise; path arguments are not body or query fields.
SPELLING = {"app_name": "appName", "conversation_id": "conversationId"}
PATH_ARGUMENTS = {"session_id", "record_id", "note_id", "job_id", "position"}


@pytest.fixture(scope="module")
def schema() -> dict:
    return api.get_openapi_schema()


def ref(node: dict | None) -> str | None:
    if not node:
        return None
    for option in node.get("anyOf", [node]):
        if "$ref" in option:
            return option["$ref"].rsplit("/", 1)[-1]
    return None


def operation(schema: dict, method: str, path: str) -> dict:
    return schema["paths"][PREFIX + path][method.lower()]


def test_client_operations_exist_with_the_same_components_and_query(schema):
    for name, op in OPERATIONS.items():
        found = operation(schema, op.method, op.path)
        body = found.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        answers = {
            ref(r.get("content", {}).get("application/json", {}).get("schema"))
            for status, r in found["responses"].items()
            if str(status).startswith("2")
        }
        query = tuple(p["name"] for p in found.get("parameters", []) if p["in"] == "query")
        assert ref(body) == op.body, name
        assert op.answer in answers, (name, answers)
        assert op.query == query, name


def test_every_memory_audit_lessons_notes_and_runs_operation_has_a_client_method(schema):
    served = {
        (method.upper(), path.removeprefix(PREFIX))
        for path, methods in schema["paths"].items()
        for method, found in methods.items()
        if COVERED_TAGS & set(found.get("tags", []))
    }

    assert served == {(op.method, op.path) for op in OPERATIONS.values()}


def answer_types() -> list[str]:
    return sorted({op.answer for op in OPERATIONS.values() if op.answer} | {"RecordOut", "NotStoredOut"})


def nested(component: str, schema: dict) -> set[str]:
    """Every component reachable from `component` (the TypedDicts its fields name)."""
    seen, todo = set(), [component]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for prop in schema["components"]["schemas"][name].get("properties", {}).values():
            inner = prop.get("items", prop)
            for option in inner.get("anyOf", [inner]):
                if "$ref" in option:
                    todo.append(option["$ref"].rsplit("/", 1)[-1])
                elif "$ref" in option.get("items", {}):
                    todo.append(option["items"]["$ref"].rsplit("/", 1)[-1])
    return seen


def test_every_answer_typeddict_has_exactly_its_components_fields(schema):
    components = set().union(*(nested(name, schema) for name in answer_types()))
    for name in sorted(components):
        component = schema["components"]["schemas"][name]
        typed = getattr(types, name)
        hints = typing.get_type_hints(typed)

        assert set(hints) == set(component.get("properties", {})), name
        assert set(typed.__required_keys__) == set(component.get("required", [])), name


def test_fit_run_s_error_typeddict_has_exactly_the_request_s_error_fields(schema):
    component = schema["components"]["schemas"]["ContextLengthErrorIn"]
    typed = types.ContextLengthError

    assert set(typing.get_type_hints(typed)) == set(component["properties"])
    assert set(typed.__required_keys__) == set(component["required"])
    assert typing.get_args(typing.get_type_hints(typed)["kind"]) == (
        component["properties"]["kind"]["const"],
    )


def test_every_method_takes_exactly_its_operations_fields(schema):
    for name, op in OPERATIONS.items():
        parameters = [p for p in inspect.signature(getattr(Ottoweb, name)).parameters if p != "self"]
        arguments = {SPELLING.get(p, p) for p in parameters if p not in PATH_ARGUMENTS}
        if name == "create_session":
            arguments.add("id")  # the new session's id goes in the body
        elif name == "import_session":
            arguments.remove("document")  # the whole body, a session document
        if op.body:
            fields = set(schema["components"]["schemas"][op.body]["properties"])
            assert arguments == fields, (name, arguments ^ fields)
        else:
            assert arguments == set(op.query), (name, arguments ^ set(op.query))


def test_the_client_knows_the_server_s_ranking_rules(schema):
    # `recall(rules_off=…)` is typed by the client's own list: a rule added to the server and not
    # to the client would be refused by a type checker, though the server takes it.
    from memory.engine.ranking import RULES

    assert typing.get_args(types.RuleName) == RULES
    enum = schema["components"]["schemas"]["RecallIn"]["properties"]["rules_off"]
    assert "updates" in str(enum)


def test_record_error_s_two_answers_are_told_apart_by_stored(schema, tmp_path):
    # record_error answered `RecordOut | NotStoredOut` with nothing to tell them apart: rec["id"]
    # failed mypy --strict. REST's record carries `"stored": true` (as MCP's answer does), each
    # TypedDict a Literal of the component's const, so a check of `stored` narrows the union.
    components = schema["components"]["schemas"]
    for name, const in (("StoredRecordOut", True), ("NotStoredOut", False)):
        assert components[name]["properties"]["stored"]["const"] is const
        assert "stored" in components[name]["required"]
        assert typing.get_args(typing.get_type_hints(getattr(types, name))["stored"]) == (const,)
    agent = tmp_path / "agent.py"
    agent.write_text(
        "from ottoweb_client import Ottoweb\n\n\n"
        "def fix(otto: Ottoweb) -> int | str:\n"
        '    answer = otto.record_error("bash", "disk full", "rm -rf build/")\n'
        '    return answer["id"] if answer["stored"] else answer["reason"]\n'
    )
    config = tmp_path / "mypy.ini"  # the checkout's client, not an installed copy
    config.write_text(f"[mypy]\nmypy_path = {ROOT / 'clients' / 'python'}\n")
    report, errors, status = mypy.api.run(
        [
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            str(config),
            str(agent),
        ]
    )

    assert status == 0, report + errors
