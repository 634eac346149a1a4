from __future__ import annotations

import itertools

import pytest

from memory.engine.embeddings import MINILM_STAMP, EmbeddingUnavailable
from memory.engine.types import format_moment
from memory.models import ScopedMemory
from memory.services import embedding

pytestmark = pytest.mark.django_db

REMEMBER = "/api/v1/memory/remember"
RECALL = "/api/v1/memory/recall"
APP = {"appName": "crm", "domain": "acme.com"}
CONVERSATION = {"conversationId": "c-7f3a"}
SCOPE_RULE = "appName and domain select app scope; conversationId selects conversation scope; give exactly one of the two"


def remember(api, scope, content, key=None):
    body = {**scope, "content": content, **({"key": key} if key is not None else {})}
    response = api.post(REMEMBER, body)
    assert response.status_code == 200, response.content
    return response.json()


def recall(api, scope, query, **extra):
    response = api.post(RECALL, {**scope, "query": query, **extra})
    assert response.status_code == 200, response.content
    return response.json()


def iso(moment) -> str:
    return format_moment(moment)


def snapshot(user) -> list[tuple]:
    return list(
        ScopedMemory.objects.filter(user=user)
        .order_by("id")
        .values_list("id", "mode", "project_key", "key", "content", "updated_at")
    )


# --- remember: the address and the upsert ---------------------------------------------------------


def test_remember_app_scope_answers_mode_and_project_key(alice, alice_api):
    body = remember(alice_api, APP, "active tenant is acme.com, working on the CRM app", key="active_scope")

    row = ScopedMemory.objects.get()
    assert body == {
        "ok": True,
        "mode": "app",
        "projectKey": "app:crm@acme.com",
        "id": row.pk,
        "upserted": False,
    }
    assert (row.user, row.mode, row.project_key, row.key) == (
        alice,
        "app",
        "app:crm@acme.com",
        "active_scope",
    )
    assert (row.embedding_model, len(bytes(row.embedding))) == (MINILM_STAMP, 384 * 4)


def test_remember_conversation_scope_answers_mode_and_project_key(alice_api):
    body = remember(alice_api, CONVERSATION, "the person rejected approach B on Tuesday")

    row = ScopedMemory.objects.get()
    assert body == {
        "ok": True,
        "mode": "conversation",
        "projectKey": "conversation:c-7f3a",
        "id": row.pk,
        "upserted": False,
    }
    assert (row.mode, row.key) == ("conversation", None)


def test_remember_lower_cases_the_domain_of_the_address(alice_api):
    first = remember(alice_api, {"appName": "crm", "domain": "ACME.com"}, "one", key="k")
    second = remember(alice_api, {"appName": "crm", "domain": " acme.COM "}, "two", key="k")

    assert (first["projectKey"], second["projectKey"]) == ("app:crm@acme.com", "app:crm@acme.com")
    assert (second["id"], second["upserted"]) == (first["id"], True)


@pytest.mark.parametrize("scope", [APP, CONVERSATION], ids=["app", "conversation"])
def test_remember_same_key_twice_leaves_one_record_with_the_new_content(alice_api, scope):
    first = remember(alice_api, scope, "tenant is acme.com", key="active_scope")
    second = remember(alice_api, scope, "tenant is globex.com", key="active_scope")

    assert (first["upserted"], second["upserted"], second["id"]) == (False, True, first["id"])
    assert list(ScopedMemory.objects.values_list("id", "key", "content")) == [
        (first["id"], "active_scope", "tenant is globex.com")
    ]
    assert [i["content"] for i in recall(alice_api, scope, "active_scope")["items"]] == [
        "tenant is globex.com"
    ]


@pytest.mark.parametrize("scope", [APP, CONVERSATION], ids=["app", "conversation"])
def test_remember_without_key_twice_leaves_two_records(alice_api, scope):
    first = remember(alice_api, scope, "decided: use PostgreSQL for reports")
    second = remember(alice_api, scope, "decided: use PostgreSQL for reports")

    assert (first["upserted"], second["upserted"]) == (False, False)
    assert first["id"] != second["id"]
    assert list(ScopedMemory.objects.order_by("id").values_list("id", "key", "content")) == [
        (first["id"], None, "decided: use PostgreSQL for reports"),
        (second["id"], None, "decided: use PostgreSQL for reports"),
    ]


def test_remember_same_key_in_another_scope_is_another_record(alice_api):
    app = remember(alice_api, APP, "app state", key="state")
    other_app = remember(alice_api, {"appName": "crm", "domain": "globex.com"}, "globex state", key="state")
    conversation = remember(alice_api, CONVERSATION, "conversation state", key="state")

    assert len({app["id"], other_app["id"], conversation["id"]}) == 3
    assert [r["upserted"] for r in (app, other_app, conversation)] == [False, False, False]
    assert sorted(ScopedMemory.objects.values_list("project_key", "content")) == [
        ("app:crm@acme.com", "app state"),
        ("app:crm@globex.com", "globex state"),
        ("conversation:c-7f3a", "conversation state"),
    ]


# --- recall: ranked, one scope, fails soft --------------------------------------------------------


def test_recall_ranks_the_note_that_answers_the_question_first(alice_api):
    notes = {
        "tenant": remember(
            alice_api, APP, "active tenant is acme.com, working on the CRM app", key="active_scope"
        ),
        "rejected": remember(alice_api, APP, "the person rejected approach B (caching in redis) on Tuesday"),
        "database": remember(alice_api, APP, "decision: use PostgreSQL for the reporting database"),
        "money": remember(alice_api, APP, "the invoices table stores amounts in cents, not dollars"),
    }

    answers = {
        "tenant": recall(alice_api, APP, "which tenant am I working for?"),
        "rejected": recall(alice_api, APP, "what approaches were rejected?"),
        "database": recall(alice_api, APP, "which database for reports"),
        "money": recall(alice_api, APP, "how are money values stored"),
    }

    for name, answer in answers.items():
        assert answer["items"][0]["id"] == notes[name]["id"], name
        assert (answer["ok"], answer["mode"], answer["projectKey"]) == (True, "app", "app:crm@acme.com")
        assert answer["returned"] == len(answer["items"])
        assert "degraded" not in answer
    top = answers["tenant"]["items"][0]
    row = ScopedMemory.objects.get(pk=top["id"])
    assert {k: v for k, v in top.items() if k != "score"} == {
        "id": row.pk,
        "key": "active_scope",
        "content": "active tenant is acme.com, working on the CRM app",
        "updated_at": iso(row.updated_at),
    }
    assert 0.4 < top["score"] <= 1.0


def test_recall_by_exact_key_scores_one(alice_api):
    note = remember(alice_api, CONVERSATION, "working for acme.com", key="active_scope")

    answer = recall(alice_api, CONVERSATION, "active_scope")

    assert [(i["id"], i["score"]) for i in answer["items"]] == [(note["id"], 1.0)]


def test_recall_respects_limit(alice_api):
    for n in range(4):
        remember(alice_api, APP, f"deploy note {n}: deploys go through the staging pipeline")

    answer = recall(alice_api, APP, "how do deploys work", limit=2)

    assert (answer["returned"], len(answer["items"])) == (2, 2)


def test_recall_with_an_empty_query_returns_the_newest_notes(alice_api):
    older = remember(alice_api, CONVERSATION, "step 1 done")
    newer = remember(alice_api, CONVERSATION, "step 2 done")

    answer = recall(alice_api, CONVERSATION, "")

    assert [(i["id"], i["score"]) for i in answer["items"]] == [(newer["id"], None), (older["id"], None)]
    assert answer["returned"] == 2


def test_recall_miss_is_ok_with_nothing_returned_and_no_degraded_flag(alice_api):
    remember(alice_api, APP, "the invoices table stores amounts in cents, not dollars")

    answer = recall(alice_api, APP, "recipe for pancakes")

    assert answer == {
        "ok": True,
        "mode": "app",
        "projectKey": "app:crm@acme.com",
        "returned": 0,
        "items": [],
        "note": "nothing in app:crm@acme.com matches the query",
    }


def test_recall_of_an_empty_scope_says_nothing_is_stored_there(alice_api):
    answer = recall(alice_api, CONVERSATION, "anything")

    assert answer == {
        "ok": True,
        "mode": "conversation",
        "projectKey": "conversation:c-7f3a",
        "returned": 0,
        "items": [],
        "note": "nothing is stored in conversation:c-7f3a yet",
    }


@pytest.fixture
def search_down(monkeypatch):
    """The vector search cannot run: the embedding model is unavailable (a process-edge fault)."""

    def unavailable(spec=None):
        raise EmbeddingUnavailable("the embedding model could not be loaded (test)")

    monkeypatch.setattr(embedding, "embedder", unavailable)


def test_recall_falls_back_to_keywords_and_says_degraded_when_search_is_unavailable(
    alice, alice_api, search_down
):
    note = ScopedMemory.objects.create(
        user=alice, mode="app", project_key="app:crm@acme.com", content="tenant is acme.com"
    )
    ScopedMemory.objects.create(
        user=alice, mode="app", project_key="app:crm@acme.com", content="reports run nightly"
    )

    response = alice_api.post(RECALL, {**APP, "query": "which tenant"})

    assert (response.status_code, response.json()) == (
        200,
        {
            "ok": True,
            "mode": "app",
            "projectKey": "app:crm@acme.com",
            "returned": 1,
            "items": [
                {
                    "id": note.pk,
                    "key": None,
                    "content": "tenant is acme.com",
                    "score": 1.0,
                    "updated_at": iso(note.updated_at),
                }
            ],
            "degraded": True,
            "note": "ranked by keywords: memory search by meaning is unavailable "
            "(the embedding model could not be loaded (test))",
        },
    )


def test_recall_says_degraded_while_notes_lack_a_vector_of_the_current_model(alice_api, monkeypatch):
    first = remember(alice_api, APP, "tenant is acme.com; reports run nightly")
    ScopedMemory.objects.filter(pk=first["id"]).update(embedding_model="wordllama")  # another model's vector
    remember(alice_api, APP, "the invoices are exported on Mondays")

    answer = recall(alice_api, APP, "when do reports run")

    assert [i["id"] for i in answer["items"]][0] == first["id"]
    assert answer["degraded"] is True
    assert answer["note"].startswith("1 of the 2 notes in app:crm@acme.com have no vector of ")
    assert answer["note"].endswith("they were ranked by keywords (manage.py reembed --all gives them one)")


def test_remember_while_search_is_unavailable_stores_the_note_without_a_vector(
    alice_api, search_down, monkeypatch
):
    body = remember(alice_api, APP, "tenant is acme.com; reports run nightly", key="active_scope")
    row = ScopedMemory.objects.get()
    assert (body["id"], row.embedding, row.embedding_model) == (row.pk, None, "")
    monkeypatch.undo()  # search is back: the note is found by keyword

    answer = recall(alice_api, APP, "when do reports run")

    assert [i["id"] for i in answer["items"]] == [row.pk]


# --- isolation: the user part of the address is the token's --------------------------------------

A_APP = {"appName": "crm", "domain": "acme.com"}
A_CONVERSATION = {"conversationId": "c-7f3a"}
A_KEYS = ["active_scope", None]

# Every way B can spell an address built from A's appName, domain and conversationId.
B_SCOPES = {
    "a-app": A_APP,
    "a-app-upper-domain": {"appName": "crm", "domain": "ACME.COM"},
    "a-appname-other-domain": {"appName": "crm", "domain": "globex.com"},
    "other-appname-a-domain": {"appName": "billing", "domain": "acme.com"},
    "a-conversation": A_CONVERSATION,
    "conversation-named-like-a-app": {"conversationId": "crm@acme.com"},
    "conversation-named-like-a-key": {"conversationId": "app:crm@acme.com"},
}


@pytest.fixture
def alice_memories(alice, alice_api):
    for scope, key in itertools.product([A_APP, A_CONVERSATION], A_KEYS):
        remember(alice_api, scope, f"alice secret: tenant acme.com, key {key}", key=key)
    return snapshot(alice)


@pytest.mark.parametrize("key", A_KEYS, ids=["keyed", "unkeyed"])
@pytest.mark.parametrize("scope", B_SCOPES.values(), ids=B_SCOPES.keys())
def test_scoped_memory_other_user_never_reads_overwrites_or_counts(
    alice, bob, alice_api, bob_api, alice_memories, scope, key
):
    # B reads first: A's notes are not there, not even counted.
    before = recall(bob_api, scope, "alice secret tenant acme.com")
    listed = recall(bob_api, scope, "")
    assert (before["returned"], before["items"], listed["items"]) == (0, [], [])
    assert before["note"] == f"nothing is stored in {before['projectKey']} yet"
    assert "degraded" not in before

    # B writes with A's key (or none): a new note of B's, never an upsert of A's.
    written = remember(bob_api, scope, "bob's own note about tenant acme.com", key=key)
    assert written["upserted"] is False
    assert written["id"] not in [row[0] for row in alice_memories]
    assert snapshot(alice) == alice_memories
    assert [row[4] for row in snapshot(bob)] == ["bob's own note about tenant acme.com"]

    # B now recalls exactly B's note; A recalls exactly A's, and is never shown B's.
    after = recall(bob_api, scope, "")
    assert [(i["id"], i["content"]) for i in after["items"]] == [
        (written["id"], "bob's own note about tenant acme.com")
    ]
    for a_scope in (A_APP, A_CONVERSATION):
        seen = recall(alice_api, a_scope, "")["items"]
        assert all(i["content"].startswith("alice secret") for i in seen)
        assert len(seen) == 2


def test_scoped_memory_other_user_cannot_name_a_user(alice, alice_api, bob_api, alice_memories):
    for body in (
        {**A_APP, "query": "tenant", "userId": alice.pk},
        {**A_APP, "query": "tenant", "user": "alice"},
    ):
        response = bob_api.post(RECALL, body)
        field = next(k for k in body if k.startswith("user"))
        assert (response.status_code, response.json()["detail"]) == (422, f"{field}: unknown field")
    response = bob_api.post(REMEMBER, {**A_APP, "content": "x", "key": "active_scope", "userId": alice.pk})
    assert (response.status_code, response.json()["detail"]) == (422, "userId: unknown field")
    assert snapshot(alice) == alice_memories


@pytest.mark.parametrize("key", A_KEYS, ids=["keyed", "unkeyed"])
def test_app_scope_and_conversation_scope_never_return_each_other(alice_api, key):
    app = remember(alice_api, A_APP, "app note: tenant acme.com uses the CRM", key=key)
    conversation = remember(
        alice_api, A_CONVERSATION, "conversation note: tenant acme.com uses the CRM", key=key
    )

    for query in ("tenant acme.com CRM", "", "active_scope"):
        from_app = recall(alice_api, A_APP, query)["items"]
        from_conversation = recall(alice_api, A_CONVERSATION, query)["items"]
        assert {i["id"] for i in from_app} <= {app["id"]}, query
        assert {i["id"] for i in from_conversation} <= {conversation["id"]}, query
    assert [i["id"] for i in recall(alice_api, A_APP, "tenant acme.com CRM")["items"]] == [app["id"]]
    assert [i["id"] for i in recall(alice_api, A_CONVERSATION, "tenant acme.com CRM")["items"]] == [
        conversation["id"]
    ]
    for lookalike in ("crm@acme.com", "app:crm@acme.com"):
        assert recall(alice_api, {"conversationId": lookalike}, "tenant acme.com CRM")["items"] == []


# --- bad input: 422 naming the problem, nothing written -------------------------------------------


def assert_refused(response, detail: str, field: str) -> None:
    assert response.status_code == 422, response.content
    body = response.json()
    assert (body["detail"], body["code"], body["field"]) == (detail, "invalid", field)


SCOPE_ERRORS = [
    ({}, f"no scope was given: {SCOPE_RULE}", "appName"),
    ({**APP, **CONVERSATION}, f"both scopes were given: {SCOPE_RULE}", "conversationId"),
    ({"appName": "crm", **CONVERSATION}, f"both scopes were given: {SCOPE_RULE}", "conversationId"),
    ({"appName": "crm"}, "app scope needs both appName and domain; domain is missing", "domain"),
    ({"domain": "acme.com"}, "app scope needs both appName and domain; appName is missing", "appName"),
    ({"appName": " ", "domain": "acme.com"}, f"appName must not be empty ({SCOPE_RULE})", "appName"),
    ({"conversationId": ""}, f"conversationId must not be empty ({SCOPE_RULE})", "conversationId"),
    ({"conversationId": "\u200b"}, f"conversationId must not be empty ({SCOPE_RULE})", "conversationId"),
    (
        {"appName": "crm@acme.com", "domain": "x.com"},
        "appName must not contain '@' (it separates appName from domain)",
        "appName",
    ),
    (
        {"appName": "crm", "domain": "acme.com/evil"},
        "domain must be a host name: letters, digits, '.', '-', '_' and ':'",
        "domain",
    ),
    (
        {"appName": "crm", "domain": "a@b.com"},
        "domain must be a host name: letters, digits, '.', '-', '_' and ':'",
        "domain",
    ),
    (
        {"conversationId": "c\n1"},
        "conversationId must not contain control characters, line breaks or direction overrides (it holds U+000A)",
        "conversationId",
    ),
    (
        {"appName": "crm\u202egnp.exe", "domain": "acme.com"},
        "appName must not contain control characters, line breaks or direction overrides (it holds U+202E)",
        "appName",
    ),
    (
        {"conversationId": "c\u20281"},
        "conversationId must not contain control characters, line breaks or direction overrides (it holds U+2028)",
        "conversationId",
    ),
    ({"conversationId": "c" * 201}, "conversationId is 201 characters; the limit is 200", "conversationId"),
    ({"appName": 5, "domain": "acme.com"}, "appName: Input should be a valid string", "appName"),
]


@pytest.mark.parametrize("scope, detail, field", SCOPE_ERRORS)
def test_remember_refuses_a_bad_scope_and_writes_nothing(alice_api, scope, detail, field):
    assert_refused(alice_api.post(REMEMBER, {**scope, "content": "note", "key": "k"}), detail, field)
    assert ScopedMemory.objects.count() == 0


@pytest.mark.parametrize("scope, detail, field", SCOPE_ERRORS)
def test_recall_refuses_a_bad_scope(alice_api, scope, detail, field):
    assert_refused(alice_api.post(RECALL, {**scope, "query": "note"}), detail, field)


@pytest.mark.parametrize(
    "body, detail, field",
    [
        ({"content": ""}, "content must not be empty", "content"),
        ({"content": " \n\t"}, "content must not be empty", "content"),
        ({"content": "\u200b\ufeff"}, "content must not be empty", "content"),
        ({"content": "x" * 100_001}, "content is 100,001 characters; the limit is 100,000", "content"),
        ({}, "content: Field required", "content"),
        ({"content": None}, "content: Input should be a valid string", "content"),
        ({"content": "x", "key": ""}, "key must not be empty (leave it out to insert a new memory)", "key"),
        ({"content": "x", "key": "k" * 201}, "key is 201 characters; the limit is 200", "key"),
        ({"content": "x", "projectKey": "app:crm@acme.com"}, "projectKey: unknown field", "projectKey"),
        ({"content": "x", "mode": "app"}, "mode: unknown field", "mode"),
    ],
)
def test_remember_refuses_bad_content_and_writes_nothing(alice_api, body, detail, field):
    assert_refused(alice_api.post(REMEMBER, {**APP, **body}), detail, field)
    assert ScopedMemory.objects.count() == 0


@pytest.mark.parametrize(
    "body, detail, field",
    [
        ({"query": "x", "limit": 0}, "limit: Input should be greater than or equal to 1", "limit"),
        ({"query": "x", "limit": 51}, "limit: Input should be less than or equal to 50", "limit"),
        (
            {"query": "x", "limit": "many"},
            "limit: Input should be a valid integer",
            "limit",
        ),
        ({}, "query is required (an empty query recalls the newest notes)", "query"),
        ({"query": None}, "query is required (an empty query recalls the newest notes)", "query"),
        ({"query": "x" * 100_001}, "query is 100,001 characters; the limit is 100,000", "query"),
        ({"query": "x", "match": "keyword"}, "match: unknown field", "match"),
    ],
)
def test_recall_refuses_bad_input(alice_api, body, detail, field):
    remember(alice_api, APP, "a note")

    assert_refused(alice_api.post(RECALL, {**APP, **body}), detail, field)


def test_scoped_memory_needs_a_token(alice_api):
    response = alice_api.post(REMEMBER, {**APP, "content": "x"}, token="otto_nope")

    assert (response.status_code, response.json()["code"]) == (401, "unauthorized")
    assert ScopedMemory.objects.count() == 0
