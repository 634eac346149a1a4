"""Issue 15, point 5: a run whose last tool result reports an error gets the recorded fixes of that
tool in `/runs/fit`'s answer (docs/decisions.md: up to 3 related records attached automatically)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import time_machine

from lessons.models import ErrorRecord
from memory.services import runs

from .conftest import DAY0, ERRORS, recorded, resolved

pytestmark = pytest.mark.django_db

FIT = "/api/v1/runs/fit"
NO_SPACE = "OSError: [Errno 28] No space left on device"
BUILD_PERMISSION = "build failed: cannot write output file dist/app.js: permission denied"
PORT_TAKEN = "OSError: [Errno 98] Address already in use"


@pytest.fixture(autouse=True)
def fresh_registry():
    runs.reset_window_registry()
    yield
    runs.reset_window_registry()


@pytest.fixture
def clock():
    with time_machine.travel(DAY0, tick=False) as traveller:
        yield traveller


@pytest.fixture
def fixes(alice_api, clock):
    return {
        "disk": recorded(alice_api.post(ERRORS, resolved(error=NO_SPACE, action="clear build caches"))),
        "permission": recorded(
            alice_api.post(ERRORS, resolved(error=BUILD_PERMISSION, action="chown -R $USER dist"))
        ),
        "port": recorded(
            alice_api.post(ERRORS, resolved(error=PORT_TAKEN, action="kill the stale dev server"))
        ),
        "other_tool": alice_api.post(
            ERRORS, resolved(tool="write_file", error=NO_SPACE, action="write somewhere else")
        ).json(),
    }


def run_ending_with(tool: str, result: str) -> list[dict]:
    return [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Build the release."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps({"cmd": "make dist"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]


def test_fit_of_a_run_ending_in_a_tool_error_carries_the_right_fix_first(alice_api, fixes, clock):
    clock.shift(timedelta(days=5))
    failing = run_ending_with(
        "bash", "Error: exit status 1\ndisk is full, the build could not write its output"
    )

    body = alice_api.post(FIT, {"model": "openai:gpt-4o", "messages": failing}).json()

    related = body["related_errors"]
    assert related[0]["id"] == fixes["disk"]["id"]
    assert related[0]["action"] == "clear build caches"
    assert {r["tool"] for r in related} == {"bash"}
    assert 1 <= len(related) <= 3
    # Each record handed back is a hit: its TTL restarts from today.
    disk = ErrorRecord.objects.get(pk=fixes["disk"]["id"])
    assert (disk.hits, disk.expires_at) == (1, DAY0 + timedelta(days=95))
    # The messages themselves are untouched: the fixes ride beside them.
    assert body["messages"] == failing


def test_fit_of_a_run_ending_in_a_successful_tool_result_looks_nothing_up(alice_api, fixes, clock):
    body = alice_api.post(
        FIT, {"model": "openai:gpt-4o", "messages": run_ending_with("bash", "built dist/app.js in 2.1s")}
    ).json()

    assert body["related_errors"] is None
    assert ErrorRecord.objects.filter(hits__gt=0).count() == 0


def test_fit_related_errors_can_be_turned_off(alice_api, fixes, clock):
    failing = run_ending_with("bash", "OSError: [Errno 28] No space left on device")

    body = alice_api.post(
        FIT, {"model": "openai:gpt-4o", "messages": failing, "related_errors": False}
    ).json()

    assert body["related_errors"] is None
    assert ErrorRecord.objects.filter(hits__gt=0).count() == 0


def test_fit_related_errors_never_come_from_another_user(alice_api, bob_api, fixes, clock):
    failing = run_ending_with("bash", "OSError: [Errno 28] No space left on device")

    body = bob_api.post(FIT, {"model": "openai:gpt-4o", "messages": failing}).json()

    assert body["related_errors"] == []


def test_a_failed_tool_whose_name_no_record_can_hold_finds_none_and_the_fit_answers(alice_api, fixes, clock):
    # A record's tool is a one-line label: a name with a line break has no record to find, and the
    # run is fitted all the same (the name is the model's, not the caller's to correct).
    failing = run_ending_with("bash\nrm", "OSError: [Errno 28] No space left on device")

    response = alice_api.post(FIT, {"model": "openai:gpt-4o", "messages": failing})

    assert response.status_code == 200, response.content
    assert response.json()["related_errors"] == []
    assert ErrorRecord.objects.filter(hits__gt=0).count() == 0
