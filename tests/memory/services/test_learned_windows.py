"""Issue 15, point 4: a limit learned from an overflow belongs to the user who taught it."""

from __future__ import annotations

import pytest

from memory.models import LearnedWindow
from memory.services import runs

pytestmark = pytest.mark.django_db

FIT = "/api/v1/runs/fit"
LEARNED = "/api/v1/models/learned"
MESSAGES = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": "Fix the flaky login test."},
]
OVERFLOW = {"kind": "context_length", "message": "This model's maximum context length is 8192 tokens."}


@pytest.fixture(autouse=True)
def fresh_registry():
    runs.reset_window_registry()
    yield
    runs.reset_window_registry()


def fit(api, **extra):
    return api.post(FIT, {"model": "openai:gpt-4o", "messages": MESSAGES, **extra}).json()


def test_learned_limit_of_one_user_never_changes_another_users_fit(alice_api, bob_api):
    bob_before = fit(bob_api)

    taught = fit(alice_api, error=OVERFLOW)
    bob_after = fit(bob_api)
    alice_after = fit(alice_api)
    bob_windows = {i["model"]: i for i in bob_api.get("/api/v1/models/windows").json()["items"]}

    assert (taught["learned"], alice_after["window"], alice_after["window_source"]) == (8192, 8192, "learned")
    assert bob_after == bob_before
    assert (bob_after["window"], bob_after["window_source"]) == (128000, "table")
    assert bob_windows["openai:gpt-4o"] == {"model": "openai:gpt-4o", "window": 128000, "source": "table"}


def test_learned_limits_are_listed_per_user_and_clearing_restores_the_table(alice_api, bob_api):
    fit(alice_api, error=OVERFLOW)
    fit(bob_api, error={"kind": "context_length", "limit": 4096}, model="acme:new")

    alice_list = alice_api.get(LEARNED).json()["items"]
    bob_list = bob_api.get(LEARNED).json()["items"]
    refused = bob_api.delete(f"{LEARNED}?model=openai:gpt-4o")
    cleared = alice_api.delete(f"{LEARNED}?model=OpenAI:GPT-4o")
    after = fit(alice_api)

    assert [(i["model"], i["window"]) for i in alice_list] == [("openai:gpt-4o", 8192)]
    assert [(i["model"], i["window"]) for i in bob_list] == [("acme:new", 4096)]
    assert (refused.status_code, refused.json()["code"]) == (404, "not_found")
    assert cleared.status_code == 204
    assert (after["window"], after["window_source"]) == (128000, "table")
    assert list(LearnedWindow.objects.values_list("user__username", "model")) == [("bob", "acme:new")]


def test_a_limit_below_the_floor_is_not_learned(alice_api):
    answer = fit(
        alice_api, error={"kind": "context_length", "message": "maximum context length is 100 tokens"}
    )

    assert (answer["learned"], alice_api.get(LEARNED).json()["items"]) == (None, [])


def test_clearing_needs_a_valid_model_name(alice_api):
    response = alice_api.delete(f"{LEARNED}?model=gpt-4o")

    assert (response.status_code, response.json()["field"]) == (422, "model")
