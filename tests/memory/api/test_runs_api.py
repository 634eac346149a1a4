"""POST /api/v1/runs/fit and GET /api/v1/models/windows: the HTTP contract of in-run compaction."""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memory import tasks
from memory.engine.inrun import NOTE_HEADER, NOTICE, STEP_STORED, STEP_UNSTORED, transcript_tokens
from memory.models import Chunk, Item, ItemVector, Job, JobPayload, LearnedWindow
from memory.services import runs

pytestmark = pytest.mark.django_db

FIT = "/api/v1/runs/fit"
WINDOWS = "/api/v1/models/windows"
WORDS = "login session cache deploy index parser router token window budget tier chunk bullet".split()


@pytest.fixture(autouse=True)
def fresh_registry():
    # Each test starts as a freshly started server would: no fetched table in memory.
    runs.reset_window_registry()
    yield
    runs.reset_window_registry()


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def step(cid: str, name: str, arguments: dict[str, Any], result: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": cid, "content": result},
    ]


SEED = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": "Fix the flaky login test."},
]


def tool_run(calls: int, *, seed: int = 1, words: int = 300) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    messages = list(SEED)
    for n in range(calls):
        messages += step(
            f"call_{n}", "read_file", {"path": f"src/m{n}.py"}, f"marker-{n} " + prose(rng, words)
        )
    return messages


def context_texts(sid: str = "run") -> list[str]:
    rows = Item.objects.filter(session__sid=sid, kind="context").select_related("chunk").order_by("position")
    return [row.chunk.text for row in rows]


def assert_refused(response, status: int, detail: str, field: str | None = None) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert detail in body["detail"]
    assert isinstance(body["code"], str) and body["code"]
    if field is not None:
        assert body["field"] == field


def test_fit_answers_the_contract_fields_and_leaves_a_small_transcript_alone(alice_api):
    messages = [*SEED, {"role": "assistant", "content": "On it.", "refusal": None, "x_vendor": {"k": 1}}]

    response = alice_api.post(FIT, {"model": "openai:gpt-4o", "messages": messages})

    assert response.status_code == 200
    assert response.json() == {
        "messages": messages,
        "stages": ["CheckThreshold"],
        "window": 128000,
        "budget": 102400,
        "summary": None,
        "tokens": transcript_tokens(messages),
        "over_budget": False,
        "window_source": "table",
        "learned": None,
        "evicted": 0,
        "stored": 0,
        "job_id": None,
        "related_errors": None,
    }


def test_fit_with_a_session_stores_every_evicted_message_whole_in_the_context_tier(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "run"})
    messages = tool_run(30)

    body = alice_api.post(FIT, {"session": "run", "model": "openai:gpt-4", "messages": messages}).json()

    assert body["stages"] == ["CheckThreshold", "ToolHistory"]
    assert (body["window"], body["budget"]) == (8192, 6553)
    assert body["tokens"] <= 6553
    kept = [m for m in messages if m in body["messages"]]
    evicted = [m for m in messages if m not in body["messages"]]
    assert body["evicted"] == body["stored"] == len(evicted) > 0
    stored = context_texts()
    for message in evicted:
        if message["role"] == "tool":
            assert (
                f"[tool result of read_file, call {message['tool_call_id']}]\n{message['content']}" in stored
            )
        else:
            call = message["tool_calls"][0]
            assert f"[tool call {call['id']}] read_file({call['function']['arguments']})" in stored
    assert len(stored) == len(evicted)
    assert set(Item.objects.filter(kind="context").values_list("tier", flat=True)) == {"a"}
    # The stubs say where the originals are, because they really are there.
    stubs = [m for m in body["messages"] if m not in kept]
    assert stubs and all(m["content"].endswith(STEP_STORED) for m in stubs)


def test_evicted_messages_are_found_by_recall_with_kind_context(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "run"})
    messages = tool_run(30)
    alice_api.post(FIT, {"session": "run", "model": "openai:gpt-4", "messages": messages})

    found = alice_api.post(
        "/api/v1/sessions/run/recall", {"query": "marker-3", "kind": "context", "match": "keyword"}
    ).json()

    texts = [turn["text"] for passage in found["results"]["context"] for turn in passage["turns"]]
    assert any(text.startswith("[tool result of read_file, call call_3]\nmarker-3 ") for text in texts)
    assert found["results"]["history"] == []


def test_fit_without_a_session_stores_nothing_and_its_stubs_say_so(alice_api):
    body = alice_api.post(FIT, {"model": "openai:gpt-4", "messages": tool_run(30)}).json()

    assert body["stages"] == ["CheckThreshold", "ToolHistory"]
    assert (body["evicted"] > 0, body["stored"]) == (True, 0)
    assert Item.objects.count() == 0
    stubs = [m for m in body["messages"] if str(m.get("content") or "").startswith("[ottoweb")]
    assert stubs and all(m["content"].endswith(STEP_UNSTORED) for m in stubs)


def test_a_resent_transcript_is_not_stored_twice(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "run"})
    request = {"session": "run", "model": "openai:gpt-4", "messages": tool_run(30)}

    first = alice_api.post(FIT, request).json()
    second = alice_api.post(FIT, request).json()

    assert second["messages"] == first["messages"]
    assert (second["evicted"], second["stored"]) == (first["evicted"], 0)
    assert len(context_texts()) == first["stored"]


def test_a_message_longer_than_an_item_is_stored_in_parts(alice_api, settings):
    settings.OTTO_MAX_ITEM_CHARS = 1000
    alice_api.post("/api/v1/sessions", {"id": "run"})
    long_result = "x" * 2500
    messages = [*SEED, *step("big", "read_file", {"path": "big.txt"}, long_result), *tool_run(2)[2:]]

    body = alice_api.post(
        FIT,
        {
            "session": "run",
            "model": "openai:gpt-4o",
            "messages": messages,
            "error": {"kind": "context_length"},
        },
    ).json()

    assert body["stages"] == ["TrimRatio", "TrimFallback"]
    stored = context_texts()
    assert "".join(stored[1:4]) == "[tool result of read_file, call big]\n" + long_result
    metas = list(Item.objects.filter(kind="context").order_by("position").values_list("meta", flat=True))
    assert [(m.get("part"), m.get("parts")) for m in metas[1:4]] == [(1, 3), (2, 3), (3, 3)]


def test_a_300_call_run_over_http_stays_under_budget_and_keeps_everything_recallable(alice_api, settings):
    # What is checked is the budget and the stored text; MiniLM embedding the evicted outputs was
    # most of this test's time.
    settings.OTTO_EMBEDDING_MODEL = "wordllama"
    alice_api.post("/api/v1/sessions", {"id": "run"})
    rng = random.Random(8)
    messages = list(SEED)
    after_compaction: list[int] = []
    for n in range(300):
        latest = step(f"call_{n}", "run_tests", {"k": n}, f"marker-{n} " + prose(rng, rng.randint(50, 300)))
        messages = messages + latest

        body = alice_api.post(FIT, {"session": "run", "model": "openai:gpt-4", "messages": messages}).json()

        messages = body["messages"]
        assert body["tokens"] <= body["budget"] == 6553
        assert messages[:2] == SEED and messages[-2:] == latest
        if body["stages"] != ["CheckThreshold"]:
            after_compaction.append(body["tokens"])

    assert len(after_compaction) > 20
    assert max(after_compaction) <= int(6553 * 0.75)
    stored = "\n".join(context_texts())
    still_here = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    for n in range(300):
        if f"call_{n}" not in still_here:
            assert f"[tool result of run_tests, call call_{n}]\nmarker-{n} " in stored


def test_a_context_length_error_teaches_a_lower_limit_used_from_then_on(alice_api):
    messages = tool_run(40, words=200)
    error = {
        "kind": "context_length",
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9100 tokens.",
    }

    first = alice_api.post(FIT, {"model": "openai:gpt-4o", "messages": messages, "error": error}).json()

    assert first["stages"] == ["TrimRatio", "TrimFallback"]
    assert (first["window"], first["budget"], first["window_source"], first["learned"]) == (
        8192,
        6553,
        "learned",
        8192,
    )
    assert first["tokens"] <= 6553
    assert list(LearnedWindow.objects.values_list("model", "window")) == [("openai:gpt-4o", 8192)]
    later = alice_api.post(FIT, {"model": "openai:gpt-4o", "messages": tool_run(2)}).json()
    assert (later["window"], later["window_source"]) == (8192, "learned")
    # A restarted server (a new registry) still uses it: the limit is in the database.
    runs.reset_window_registry()
    restarted = alice_api.post(FIT, {"model": "OpenAI:GPT-4o", "messages": tool_run(2)}).json()
    assert (restarted["window"], restarted["window_source"]) == (8192, "learned")
    listed = {i["model"]: i for i in alice_api.get(WINDOWS).json()["items"]}
    assert listed["openai:gpt-4o"] == {"model": "openai:gpt-4o", "window": 8192, "source": "learned"}


def test_an_explicit_limit_is_learned_and_a_larger_one_leaves_the_table_value(alice_api):
    larger = alice_api.post(
        FIT,
        {
            "model": "openai:gpt-4o",
            "messages": tool_run(4),
            "error": {"kind": "context_length", "limit": 500000},
        },
    ).json()
    unknown = alice_api.post(
        FIT,
        {"model": "acme:new", "messages": tool_run(4), "error": {"kind": "context_length", "limit": 300000}},
    ).json()

    assert (larger["window"], larger["window_source"], larger["learned"]) == (128000, "table", None)
    assert (unknown["window"], unknown["window_source"], unknown["learned"]) == (300000, "learned", 300000)
    assert list(LearnedWindow.objects.values_list("model", "window")) == [("acme:new", 300000)]


def test_a_model_switch_turns_tool_history_into_plain_text(alice_api):
    messages = tool_run(3)

    switched = alice_api.post(
        FIT, {"model": "openai:gpt-4o", "previous_model": "anthropic:claude-sonnet-4", "messages": messages}
    ).json()
    same = alice_api.post(
        FIT, {"model": "openai:gpt-4o", "previous_model": "OPENAI:gpt-4o", "messages": messages}
    ).json()

    assert switched["stages"] == ["RawToolFallback", "CheckThreshold"]
    assert [m["role"] for m in switched["messages"]] == ["system", "user"] + ["assistant", "user"] * 3
    assert all(set(m) == {"role", "content"} for m in switched["messages"][2:])
    for n in range(3):
        assert messages[3 + 2 * n]["content"] in switched["messages"][3 + 2 * n]["content"]
        assert (
            f'called read_file with {{"path": "src/m{n}.py"}} (id call_{n})'
            in switched["messages"][2 + 2 * n]["content"]
        )
    assert (same["stages"], same["messages"]) == (["CheckThreshold"], messages)


def test_stage_names_come_back_in_order(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "run"})
    chat = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} " + "word " * 120}
        for n in range(20)
    ]
    messages = [*SEED, *chat, *tool_run(30)[2:]]

    body = alice_api.post(
        FIT,
        {"session": "run", "model": "openai:gpt-4", "previous_model": "openai:gpt-4o", "messages": messages},
    ).json()

    assert body["stages"] == ["RawToolFallback", "CheckThreshold", "ExtractContextHistories"]
    assert body["messages"][2]["content"].startswith(NOTE_HEADER)
    assert body["messages"][2]["content"].endswith(NOTICE["stored"])
    assert body["summary"] is not None and body["summary"] in body["messages"][2]["content"]


def test_models_windows_lists_each_value_and_its_source(alice_api):
    items = alice_api.get(WINDOWS).json()["items"]
    one = alice_api.get(WINDOWS + "?model=Acme:Thing-1").json()

    by_model = {i["model"]: (i["window"], i["source"]) for i in items}
    assert by_model["openai:gpt-4o"] == (128000, "table")
    assert by_model["anthropic:claude-sonnet-4"] == (200000, "table")
    assert by_model["google:gemini-2.5-pro"] == (1048576, "table")
    assert by_model["deepseek:deepseek-flash"] == (1048576, "table")
    assert by_model["mercury:mercury-2.5"] == (260000, "table")
    assert [i["model"] for i in items] == sorted(by_model)
    assert one == {"items": [{"model": "acme:thing-1", "window": 128000, "source": "default"}]}


class TableServer(ThreadingHTTPServer):
    hits = 0
    # Held until the test releases it, so "a request never waits for the fetch" is observable.
    gate = threading.Event()


class TableHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.gate.wait()  # type: ignore[attr-defined]
        self.server.hits += 1  # type: ignore[attr-defined]
        data = json.dumps(
            {"models": [{"vendor": "openai", "model": "gpt-4o", "context_window": 64000}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def table_url():
    server = TableServer(("127.0.0.1", 0), TableHandler)
    server.gate = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/windows", server
    server.gate.set()
    server.shutdown()
    server.server_close()


def test_models_windows_refreshes_from_the_configured_url_in_the_background(alice_api, settings, table_url):
    url, server = table_url
    settings.OTTO_MODEL_WINDOWS_URL = url

    # The table service is stuck: the request answers from the bundled table without waiting.
    first = alice_api.get(WINDOWS + "?model=openai:gpt-4o").json()
    server.gate.set()
    runs.window_registry().wait()
    second = alice_api.get(WINDOWS + "?model=openai:gpt-4o").json()
    fitted = alice_api.post(FIT, {"model": "openai:gpt-4o", "messages": tool_run(1)}).json()

    assert first == {"items": [{"model": "openai:gpt-4o", "window": 128000, "source": "table"}]}
    assert second == {"items": [{"model": "openai:gpt-4o", "window": 64000, "source": "table"}]}
    assert (fitted["window"], fitted["budget"]) == (64000, 51200)
    assert server.hits == 1


def test_a_fetched_table_failing_never_fails_a_request(alice_api, settings):
    settings.OTTO_MODEL_WINDOWS_URL = "http://127.0.0.1:9/nothing-listens-here"

    response = alice_api.post(FIT, {"model": "openai:gpt-4o", "messages": tool_run(1)})
    runs.window_registry().wait()

    assert response.status_code == 200
    assert response.json()["window"] == 128000
    assert runs.window_registry().last_error is not None


CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    "body, detail, field",
    [
        (
            {"model": "openai:gpt-4o", "messages": []},
            "messages: List should have at least 1 item",
            "messages",
        ),
        (
            {"model": "openai:gpt-4o", "messages": [{"role": "robot", "content": "hi"}]},
            "messages.0.role: Input should be 'system', 'user', 'assistant' or 'tool'",
            "messages.0.role",
        ),
        (
            {"model": "openai:gpt-4o", "messages": [{"role": "tool", "content": "x"}]},
            "messages.0.tool_call_id: a tool message needs the id of the call it answers",
            "messages.0.tool_call_id",
        ),
        (
            {
                "model": "openai:gpt-4o",
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "tool", "tool_call_id": "c9", "content": "x"},
                ],
            },
            "tool result 'c9' answers no call",
            "messages.1.tool_call_id",
        ),
        (
            {"model": "openai:gpt-4o", "messages": [{"role": "assistant", "tool_calls": [CALL]}]},
            "call 'c1' has no tool result after it",
            "messages.0.tool_calls",
        ),
        (
            {"model": "openai:gpt-4o", "messages": [{"role": "assistant", "tool_calls": [{"id": "c1"}]}]},
            "messages.0.tool_calls.0.function: Field required",
            "messages.0.tool_calls.0.function",
        ),
        (
            {"model": "openai:gpt-4o", "messages": [{"role": "assistant", "tool_calls": "f()"}]},
            "messages.0.tool_calls: Input should be a valid list",
            "messages.0.tool_calls",
        ),
        (
            {
                "model": "openai:gpt-4o",
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {}}}],
                    }
                ],
            },
            "messages.0.tool_calls.0.function.arguments: Input should be a valid string",
            "messages.0.tool_calls.0.function.arguments",
        ),
        (
            {"model": "openai:gpt-4o", "messages": [{"role": "user", "content": "x", "tool_calls": [CALL]}]},
            "only an assistant message makes tool calls",
            "messages.0.tool_calls",
        ),
        (
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]},
            "model: model must be 'vendor:model' (for example 'openai:gpt-4o')",
            "model",
        ),
        (
            {
                "model": "openai:gpt-4o",
                "previous_model": "claude",
                "messages": [{"role": "user", "content": "x"}],
            },
            "previous_model: model must be 'vendor:model'",
            "previous_model",
        ),
        (
            {
                "model": "openai:gpt-4o",
                "messages": [{"role": "user", "content": "x"}],
                "error": {"kind": "rate_limit", "message": "slow down"},
            },
            "error.kind: Input should be 'context_length'",
            "error.kind",
        ),
        (
            {
                "model": "openai:gpt-4o",
                "messages": [{"role": "user", "content": "x"}],
                "error": {"kind": "context_length", "limit": 12},
            },
            "error.limit: Input should be greater than or equal to 1024",
            "error.limit",
        ),
        (
            {
                "model": "openai:gpt-4o",
                "messages": [{"role": "user", "content": "x"}],
                "last_input_tokens": -1,
            },
            "last_input_tokens: Input should be greater than or equal to 0",
            "last_input_tokens",
        ),
        (
            {"model": "openai:gpt-4o", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "messages.0.content.0.text: a text part must have a string `text`",
            "messages.0.content.0.text",
        ),
        (
            {
                "model": "openai:gpt-4o",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": 7}]}
                ],
            },
            "messages.0.content.1.text: a text part must have a string `text`",
            "messages.0.content.1.text",
        ),
        (
            {"model": "openai:gpt-4o", "messages": [{"role": "user", "content": "x"}], "sesion": "s"},
            "sesion: unknown field",
            "sesion",
        ),
        (
            {
                "model": "openai:gpt-4o",
                "messages": [{"role": "user", "content": "x"}],
                "related_errors": "yes",
            },
            "related_errors: Input should be a valid boolean",
            "related_errors",
        ),
    ],
)
def test_bad_fit_requests_are_refused_naming_the_field(alice_api, body, detail, field):
    assert_refused(alice_api.post(FIT, body), 422, detail, field)


def test_a_refused_fit_writes_nothing(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "run"})
    body = {
        "session": "run",
        "model": "openai:gpt-4o",
        "messages": [*tool_run(30), {"role": "tool", "tool_call_id": "ghost", "content": "x"}],
        "error": {"kind": "context_length", "message": "maximum context length is 8192 tokens"},
    }

    assert_refused(
        alice_api.post(FIT, body), 422, "tool result 'ghost' answers no call", "messages.62.tool_call_id"
    )
    assert (LearnedWindow.objects.count(), Item.objects.count(), Chunk.objects.count()) == (0, 0, 0)


def test_a_transcript_beyond_the_message_limit_is_413_naming_it_and_writes_nothing(alice_api, settings):
    settings.OTTO_MAX_FIT_MESSAGES = 60
    alice_api.post("/api/v1/sessions", {"id": "run"})
    body = {"session": "run", "model": "openai:gpt-4", "messages": tool_run(30)}

    response = alice_api.post(FIT, body)

    assert_refused(response, 413, "the transcript has 62 messages; the limit is 60 (OTTO_MAX_FIT_MESSAGES)")
    assert (response.json()["code"], response.json()["field"]) == ("too_large", "messages")
    assert (Item.objects.count(), Job.objects.count()) == (0, 0)


def test_in_job_mode_the_request_writes_the_evicted_turns_raw_and_the_worker_stores_and_embeds_them(
    alice_api, settings
):
    settings.OTTO_COMPACTION = "job"
    settings.OTTO_EMBEDDING_MODEL = "wordllama"
    alice_api.post("/api/v1/sessions", {"id": "run"})
    messages = tool_run(30)

    body = alice_api.post(FIT, {"session": "run", "model": "openai:gpt-4", "messages": messages}).json()

    # The request stored no item: it wrote the turns raw, with the job that stores them.
    evicted = [m for m in messages if m not in body["messages"]]
    assert body["evicted"] == body["stored"] == len(evicted) > 0
    assert Item.objects.filter(kind="context").count() == 0
    job = Job.objects.get(pk=body["job_id"])
    assert (job.kind, job.status, len(job.payload.items)) == ("store_context", "queued", len(evicted))

    # The worker's task, run here: every turn stored whole, each with a vector, the payload gone.
    tasks.store_context_task.run(job_id=body["job_id"])

    job.refresh_from_db()
    assert (job.status, job.error) == ("done", "")
    assert not JobPayload.objects.exists()
    stored = context_texts()
    assert len(stored) == len(evicted)
    for message in evicted:
        if message["role"] == "tool":
            assert (
                f"[tool result of read_file, call {message['tool_call_id']}]\n{message['content']}" in stored
            )
    assert ItemVector.objects.filter(kind="context").count() == len(evicted)
    # A second run of the same job (a redelivered message) changes nothing.
    tasks.store_context_task.run(job_id=body["job_id"])
    assert len(context_texts()) == len(evicted)


def test_in_job_mode_a_resent_transcript_queues_nothing_more(alice_api, settings):
    settings.OTTO_COMPACTION = "job"
    alice_api.post("/api/v1/sessions", {"id": "run"})
    request = {"session": "run", "model": "openai:gpt-4", "messages": tool_run(30)}
    first = alice_api.post(FIT, request).json()
    tasks.store_context_task.run(job_id=first["job_id"])

    second = alice_api.post(FIT, request).json()

    assert (second["evicted"], second["stored"], second["job_id"]) == (first["evicted"], 0, None)
    assert Job.objects.count() == 1


def test_fit_with_an_unknown_or_another_users_session_is_not_found(alice_api, bob_api):
    bob_api.post("/api/v1/sessions", {"id": "bobs"})
    body = {"model": "openai:gpt-4", "messages": tool_run(30)}

    assert_refused(alice_api.post(FIT, {**body, "session": "nope"}), 404, "no session 'nope'")
    assert_refused(alice_api.post(FIT, {**body, "session": "bobs"}), 404, "no session 'bobs'")
    assert Item.objects.count() == 0


def test_fit_and_windows_need_a_token(alice_api):
    assert_refused(alice_api.post(FIT, {"model": "a:b", "messages": []}, token="bad"), 401, "bearer token")
    assert_refused(alice_api.get(WINDOWS, token="bad"), 401, "bearer token")


@pytest.mark.parametrize(
    "raw, status, detail",
    [
        ("{not json", 422, "the body is not JSON: Expecting property name"),
        ("", 422, "body: Field required"),
        ("[1, 2]", 422, "body: Input should be a valid dictionary"),
        ("null", 422, "body: Input should be a valid dictionary"),
        ('{"model": "a:b", "messages": {}}', 422, "messages: Input should be a valid list"),
        ('{"model": "a:b", "messages": [{"role": "user", "content": 7}]}', 422, "messages.0.content"),
    ],
)
def test_malformed_bodies_are_refused_not_a_server_error(alice_api, raw, status, detail):
    assert_refused(alice_api.post(FIT, raw=raw), status, detail)


def mutate(rng: random.Random, messages: list[dict[str, Any]]) -> list[Any]:
    """A transcript with one random defect (or, sometimes, none)."""
    out: list[Any] = json.loads(json.dumps(messages))
    i = rng.randrange(len(out))
    choice = rng.randrange(10)
    if choice == 0:
        out[i]["role"] = rng.choice(["tool", "assistant", "robot", None, 3])
    elif choice == 1:
        out[i]["content"] = rng.choice([None, 7, {"a": 1}, [1, 2], [{"type": "text", "text": "x"}], ""])
    elif choice == 2:
        del out[i]
    elif choice == 3:
        out.insert(i, dict(out[i]))
    elif choice == 4:
        out[i]["tool_call_id"] = rng.choice(["ghost", "", None, 5])
    elif choice == 5:
        out[i]["tool_calls"] = rng.choice(
            [[], None, "x", [{"id": "z"}], [{"id": "z", "function": {"name": "f"}}]]
        )
    elif choice == 6:
        rng.shuffle(out)
    elif choice == 7:
        out[i] = rng.choice([None, "text", [], 1])
    elif choice == 8:
        out[i]["name"] = rng.choice([1, None, "n"])
    return out


def test_random_defective_transcripts_never_get_a_server_error(alice_api):
    rng = random.Random(5)
    base = tool_run(6, words=40) + [
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": "ok"},
    ]
    statuses = set()
    for _ in range(150):
        body = {"model": "openai:gpt-4", "messages": mutate(rng, base)}
        if rng.random() < 0.3:
            body["error"] = {"kind": "context_length", "message": "maximum context length is 2048 tokens"}

        response = alice_api.post(FIT, body)

        statuses.add(response.status_code)
        assert response.status_code in (200, 422), response.content
        if response.status_code == 422:
            assert set(response.json()) >= {"detail", "code", "field"}
    assert statuses == {200, 422}
