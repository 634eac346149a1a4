"""The LangGraph store and the LangChain chat history of ottoweb_client.langchain, against a live server.

No network, no model: the chat model is langchain's own scripted fake.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from ottoweb_client import Ottoweb, OttowebError
from ottoweb_client.langchain import (
    SUMMARY_HEAD,
    OttowebChatMessageHistory,
    OttowebInputError,
    OttowebStore,
    app_namespace,
    namespace_app,
)

from memory.engine.tokens import count_tokens
from tests.live import run_coroutine

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the adapters, not the database, are tested


@pytest.fixture(scope="module")
def alice(server) -> Ottoweb:
    return Ottoweb(server.url, server.token)


@pytest.fixture(scope="module")
def bob(server) -> Ottoweb:
    return Ottoweb(server.url, server.manage("create_token", "bob").strip())


# --- LangGraph ------------------------------------------------------------------------------------

MEMORIES = [
    "The user's dog is called Biscuit and is a beagle.",
    "The user prefers dark mode in every editor.",
    "The user's sister lives in Porto.",
    "The user is allergic to peanuts.",
    "The user drives a blue 2014 Volvo estate.",
]


class State(TypedDict, total=False):
    user: str
    write: list[str]
    question: str
    found: list[str]


def remember(state: State, *, store: BaseStore) -> State:
    for n, text in enumerate(state.get("write", [])):
        store.put(("memories", state["user"]), f"m{n}", {"text": text, "n": n})
    return {}


def recall(state: State, *, store: BaseStore) -> State:
    hits = store.search(("memories", state["user"]), query=state["question"], limit=3)
    return {"found": [h.value["text"] for h in hits]}


def graph(store: OttowebStore):
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


def test_namespaces_map_onto_app_names_and_back():
    for namespace in [("memories", "u1"), ("a b", "x@y", "100%", "tab\there", "é/ü")]:
        assert app_namespace(namespace_app(namespace)) == namespace
    assert namespace_app(("memories", "u1")) == "memories.u1"
    assert "@" not in namespace_app(("x@y",))


def test_a_graph_writes_and_searches_memories_per_user(alice, bob):
    alice_store, bob_store = OttowebStore(alice), OttowebStore(bob)
    a = graph(alice_store).invoke({"user": "alice", "write": MEMORIES, "question": "What is my pet's name?"})
    b = graph(bob_store).invoke(
        {"user": "bob", "write": ["Bob's cat is called Tiger."], "question": "What is my pet's name?"}
    )

    # The planted memory ranks first among several, through the graph's injected store.
    assert a["found"][0] == MEMORIES[0]
    assert b["found"] == ["Bob's cat is called Tiger."]
    # Each token sees only its own namespaces and items.
    assert alice_store.list_namespaces() == [("memories", "alice")]
    assert bob_store.list_namespaces() == [("memories", "bob")]
    assert bob_store.get(("memories", "alice"), "m0") is None
    assert bob_store.search(("memories", "alice"), query="dog") == []
    assert bob_store.search(("memories",)) != [] and all(
        h.namespace == ("memories", "bob") for h in bob_store.search(("memories",))
    )
    assert alice_store.get(("memories", "alice"), "m0").value == {"text": MEMORIES[0], "n": 0}
    # The notes API shows the mapping: one app scope per namespace, one keyed note per item.
    scopes = [s["projectKey"] for s in alice.list_scopes()["items"]]
    assert scopes == ["app:memories.alice@langgraph"]
    assert alice.list_notes(app_name="memories.alice", domain="langgraph")["count"] == len(MEMORIES)


def test_put_replaces_by_key_delete_removes_and_listing_filters(alice):
    store = OttowebStore(alice, domain="keys.test")
    ns = ("prefs", "u7")
    store.put(ns, "theme", {"value": "light", "rank": 1})
    first = store.get(ns, "theme")
    store.put(ns, "theme", {"value": "dark", "rank": 1})
    store.put(ns, "Theme", {"value": "case differs", "rank": 2})
    store.put(ns, "lang", {"value": "pt", "rank": 3})
    store.put(("prefs", "u7", "deep"), "x", {"value": "deeper", "rank": 4})

    got = store.get(ns, "theme")
    assert got.value == {"value": "dark", "rank": 1}
    assert got.created_at == first.created_at and got.updated_at > first.updated_at
    assert store.get(ns, "Theme").value["value"] == "case differs"
    assert alice.list_notes(app_name="prefs.u7", domain="keys.test")["count"] == 3  # no duplicate key
    listed = store.search(("prefs",))
    assert [(h.namespace, h.key) for h in listed] == [
        (("prefs", "u7", "deep"), "x"),
        (ns, "lang"),
        (ns, "Theme"),
        (ns, "theme"),
    ]
    assert [
        h.key for h in store.search(("prefs",), filter={"rank": {"$gte": 2}, "value": {"$ne": "pt"}})
    ] == [
        "x",
        "Theme",
    ]
    # A prefix takes in the namespaces below it too.
    assert [h.key for h in store.search(ns, limit=2, offset=1)] == ["lang", "Theme"]
    assert [h.key for h in store.search(ns + ("deep",))] == ["x"]
    assert store.list_namespaces(prefix=("prefs",), max_depth=2) == [("prefs", "u7")]
    assert store.list_namespaces(suffix=("deep",)) == [("prefs", "u7", "deep")]

    store.delete(ns, "theme")
    assert store.get(ns, "theme") is None
    assert store.get(ns, "Theme") is not None
    store.delete(ns, "never-there")  # deleting a missing key is a no-op, as in every LangGraph store


def test_the_async_api_answers_as_the_sync_one(alice):
    store = OttowebStore(alice, domain="async.test")
    ns = ("notes", "trip")
    texts = ["We land in Lisbon at 7:40 on Friday.", "The hotel is in Alfama.", "Dinner is booked for 9pm."]

    async def run():
        for n, text in enumerate(texts):
            await store.aput(ns, f"k{n}", {"text": text})
        return (
            await store.aget(ns, "k1"),
            await store.asearch(ns, query="when does our flight arrive?"),
            await store.asearch(ns),
            await store.alist_namespaces(),
        )

    got, ranked, listed, namespaces = run_coroutine(run())
    assert got == store.get(ns, "k1")
    assert [(h.key, h.score) for h in ranked] == [
        (h.key, h.score) for h in store.search(ns, query="when does our flight arrive?")
    ]
    assert ranked[0].value == {"text": texts[0]}
    assert [h.key for h in listed] == [h.key for h in store.search(ns)] == ["k2", "k1", "k0"]
    assert namespaces == store.list_namespaces() == [ns]


def test_store_bad_input_raises_and_writes_nothing(alice):
    store = OttowebStore(alice, domain="bad.test")
    ns = ("bad",)
    for value in [{"when": datetime(2024, 5, 1)}, {"x": float("nan")}, {"s": {1, 2}}]:
        with pytest.raises(OttowebInputError, match="not JSON-serialisable"):
            store.put(ns, "k", value)
    with pytest.raises(OttowebInputError, match="key"):
        store.put(ns, " padded ", {"ok": True})
    with pytest.raises(OttowebInputError, match="limit is 200"):
        store.put(("n" * 201,), "k", {"ok": True})
    # A batch with one bad op sends none of its ops.
    with pytest.raises(OttowebInputError):
        from langgraph.store.base import PutOp

        store.batch([PutOp(ns, "good", {"ok": True}), PutOp(ns, "bad", {"d": datetime(2024, 1, 1)})])
    assert isinstance(OttowebInputError("x"), (OttowebError, ValueError))
    assert [s for s in alice.list_scopes()["items"] if s["projectKey"].endswith("@bad.test")] == []
    assert store.list_namespaces() == []


# --- LangChain ------------------------------------------------------------------------------------

X, Y = 120, 300


# The brief's RunnableWithMessageHistory: deprecated in favour of LangGraph persistence, still shipped.
@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_a_runnable_with_history_hands_the_model_the_bounded_view_over_300_turns(alice):
    histories: dict[str, OttowebChatMessageHistory] = {}

    def history(session_id: str) -> OttowebChatMessageHistory:
        return histories.setdefault(
            session_id, OttowebChatMessageHistory(alice, session_id, x_budget=X, y_budget=Y, title="chat")
        )

    seen: list[list[BaseMessage]] = []

    def record(messages: list[BaseMessage]) -> list[BaseMessage]:
        seen.append(list(messages))
        return messages

    answers = [f"Noted, item {n}: the {w} crate goes to shelf {n % 7}." for n, w in enumerate("abcdefghij")]
    model = FakeListChatModel(responses=answers)
    chain = RunnableWithMessageHistory(RunnableLambda(record) | model, history)
    said = []
    for n in range(150):  # 150 calls: 300 turns (the question and the answer)
        text = f"Step {n}: move crate {n} from bay {n % 5} to the loading dock at {8 + n % 9}:00, said Ana."
        said.append(text)
        out = chain.invoke(HumanMessage(text, name="Ana"), config={"configurable": {"session_id": "chat"}})
        assert isinstance(out, AIMessage)

    largest = max(count_tokens(t) for t in said + answers)
    sizes = [sum(count_tokens(str(m.content)) for m in messages) for messages in seen]
    assert len(seen) == 150
    assert max(sizes) <= X + Y + largest, (max(sizes), X + Y + largest)
    print("model input tokens: max", max(sizes), "bound", X + Y + largest)
    # The view is what the model read: a leading summary once compaction ran, the newest turns raw.
    last = seen[-1]
    assert isinstance(last[0], SystemMessage) and str(last[0].content).startswith(SUMMARY_HEAD)
    assert [m.content for m in last[-3:]] == [said[-2], answers[148 % len(answers)], said[-1]]
    assert last[-1].name == "Ana" and isinstance(last[-2], AIMessage)
    assert alice.get_session("chat")["turns"] == 300
    assert sum(count_tokens(t) for t in said + answers * 15) > 10 * (X + Y)  # the whole would not fit
    assert max(sizes) > X  # and the view is used: its summary and Y hold more than X alone

    histories["chat"].clear()
    assert histories["chat"].messages == []
    assert alice.get_session("chat")["turns"] == 0


def test_messages_round_trip_with_roles_names_and_tool_calls(alice):
    history = OttowebChatMessageHistory(alice, "roles")
    sent = [
        SystemMessage("You are terse."),
        HumanMessage("Weather in Porto?", name="Ana"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "weather", "args": {"city": "Porto"}}]),
        ToolMessage("18 C, clear", tool_call_id="c1", name="weather"),
        AIMessage([{"type": "text", "text": "18 C and clear."}]),
    ]
    history.add_messages(sent)
    turns = alice.context("roles")["x"]
    got = history.messages

    assert [(t["role"], t["name"]) for t in turns] == [
        ("system", ""),
        ("user", "Ana"),
        ("assistant", ""),
        ("tool", "weather"),
        ("assistant", ""),
    ]
    assert [type(m) for m in got] == [type(m) for m in sent]
    assert got[2].tool_calls[0]["args"] == {"city": "Porto"} and "weather" in str(got[2].content)
    assert (got[3].tool_call_id, got[3].name) == ("c1", "weather")
    assert got[4].content == "18 C and clear."
    assert OttowebChatMessageHistory(alice, "nobody-yet", create=False).messages == []


def chat_api_refusal(messages: list[BaseMessage]) -> str | None:
    """Why a chat-completions API would refuse these messages, or None: an AI message's tool calls
    must be answered by ToolMessages right after it, and a ToolMessage must answer such a call."""
    open_calls: set[str] = set()
    for n, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in open_calls:
                return (
                    f"message {n}: a ToolMessage answering {m.tool_call_id!r}, which no call before it made"
                )
            open_calls.discard(m.tool_call_id)
            continue
        if open_calls:
            return f"message {n}: calls {sorted(open_calls)} were never answered"
        if isinstance(m, AIMessage) and m.tool_calls:
            open_calls = {c["id"] for c in m.tool_calls}
    return f"calls {sorted(open_calls)} were never answered" if open_calls else None


def test_the_view_never_hands_the_model_a_tool_call_without_its_answer(alice):
    history = OttowebChatMessageHistory(alice, "tools", x_budget=200, y_budget=400)
    refusals, split = [], 0
    for n in range(40):
        call = {"id": f"call_{n}", "name": "weather", "args": {"city": f"c{n}"}}
        history.add_messages(
            [HumanMessage(f"What is the weather in city number {n}?"), AIMessage("", tool_calls=[call])]
        )
        history.add_messages(
            [ToolMessage(f"Sunny, {10 + n} degrees in c{n}.", tool_call_id=call["id"], name="weather")]
        )
        history.add_messages([AIMessage(f"It is sunny and {10 + n} degrees in c{n}.")])
        view = alice.context("tools")
        stored = [t["meta"] for t in view["y_raw"] + view["x"]]
        calls = {c["id"] for meta in stored for c in meta.get("tool_calls", [])}
        answers = {meta["tool_call_id"] for meta in stored if "tool_call_id" in meta}
        split += calls != answers  # compaction took one half of a call and left the other in view
        messages = history.messages
        if (why := chat_api_refusal(messages)) is not None:
            refusals.append((n, why))
        texts = [str(m.content) for m in messages]
        for lone in calls ^ answers:  # the half left in view is still said, as text
            k = int(lone.removeprefix("call_"))
            half = (
                f'calls weather({{"city": "c{k}"}})' if lone in calls else f"Sunny, {10 + k} degrees in c{k}."
            )
            assert any(half in t for t in texts), (n, lone, texts)

    assert split > 0  # the case arose
    assert refusals == []


def test_history_bad_input_raises_and_writes_nothing(alice):
    history = OttowebChatMessageHistory(alice, "careful")
    history.add_messages([HumanMessage("first")])
    bad_batches = [
        [HumanMessage("fine"), ChatMessage(role="critic", content="an unmappable role")],
        [HumanMessage("fine"), HumanMessage([{"type": "image_url", "image_url": {"url": "x"}}])],
        [HumanMessage("fine"), AIMessage("")],
    ]
    for batch in bad_batches:
        with pytest.raises(OttowebInputError):
            history.add_messages(batch)
    # The server refuses a bad name for the whole batch: nothing half-written either.
    with pytest.raises(OttowebError) as refused:
        history.add_messages([HumanMessage("fine"), HumanMessage("x", name="line\nbreak")])
    assert refused.value.status == 422
    assert [t["text"] for t in alice.context("careful")["x"]] == ["first"]
    assert alice.get_session("careful")["turns"] == 1
