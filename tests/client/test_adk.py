"""ottoweb_client.adk against a live production server: an ADK Runner (a scripted model, no
network) whose memory is ottoweb remembers one session in the next, adding a session twice stores it
once, another ottoweb user (or ADK user) finds nothing, and bad input writes nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from datetime import datetime

import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.adk.tools import load_memory
from google.genai import types
from ottoweb_client import Ottoweb
from ottoweb_client.adk import OttowebMemoryService, session_id_for

from tests.live import run_coroutine

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the adapter, not the database, is tested

APP, USER = "trips", "u-1"
FACT = "My sister Ana moved to Lisbon in May and teaches piano there."
QUESTION = "Where does my sister Ana live now?"
FIRST = ["I moved my dentist appointment to Tuesday.", FACT, "Our team deploys with Postgres 16 on Fridays."]


class ScriptedModel(BaseLlm):
    """Asks `load_memory` a question (a text ending in "?"), answers with what it loaded, and
    says "Noted." to anything else."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        loaded = [p.function_response for p in last.parts or [] if p.function_response]
        if loaded:
            part = types.Part(text="From memory: " + json.dumps(loaded[0].response, default=str))
        elif (last.parts[0].text or "").endswith("?"):  # type: ignore[index]
            call = types.FunctionCall(name="load_memory", args={"query": last.parts[0].text})  # type: ignore[index]
            part = types.Part(function_call=call)
        else:
            part = types.Part(text="Noted.")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def runner_for(memory: OttowebMemoryService) -> Runner:
    agent = LlmAgent(name="concierge", model=ScriptedModel(), tools=[load_memory])
    return Runner(app_name=APP, agent=agent, session_service=InMemorySessionService(), memory_service=memory)


async def say(runner: Runner, session: Session, *texts: str) -> str:
    """Each text as the user's message in turn; the agent's last text."""
    answer = ""
    for text in texts:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(
            user_id=session.user_id, session_id=session.id, new_message=message
        ):
            if event.content and event.content.parts and event.content.parts[0].text:
                answer = event.content.parts[0].text
    return answer


async def stored(runner: Runner, session: Session) -> Session:
    """The session as the session service holds it now, with every event of the run."""
    found = await runner.session_service.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.id
    )
    assert found is not None
    return found


def turns(client: Ottoweb) -> list[tuple[str, str, str, str]]:
    """(kind, role, name, text) of every turn of the ADK user's ottoweb session."""
    document = client.export_session(session_id_for(APP, USER))
    chunks = {c["hash"]: c["text"] for c in document["chunks"]}
    # Tool output goes to the context tier's archive at once; the export gives its text as a chunk.
    every = document["pending"] + [{**t, "text": chunks[t["hash"]]} for t in document["archive"]]
    every.sort(key=lambda t: (t["kind"], t["position"]))
    return [(t["kind"], t["role"], t["name"], t["text"]) for t in every]


def test_a_fact_of_one_session_is_found_first_in_a_later_one_and_only_by_its_user(server):
    alice = Ottoweb(server.url, server.token)
    memory = OttowebMemoryService(alice)
    runner = runner_for(memory)

    async def scenario():  # type: ignore[no-untyped-def]
        first = await runner.session_service.create_session(app_name=APP, user_id=USER)
        await say(runner, first, *FIRST)
        first = await stored(runner, first)
        await memory.add_session_to_memory(first)
        await memory.add_session_to_memory(first)  # again: nothing new
        once = turns(alice)

        later = await runner.session_service.create_session(app_name=APP, user_id=USER)
        direct = await memory.search_memory(app_name=APP, user_id=USER, query=QUESTION)
        answer = await say(runner, later, QUESTION)  # the model calls load_memory
        later = await stored(runner, later)
        await memory.add_session_to_memory(later)
        await memory.add_session_to_memory(later)
        other_user = await memory.search_memory(app_name=APP, user_id="u-2", query=QUESTION)
        return first, once, direct, answer, other_user

    first, once, direct, answer, other_user = run_coroutine(scenario())
    both = turns(alice)
    meta = alice.export_session(session_id_for(APP, USER))["pending"][2]

    # Stored once, with roles, author and time, the ADK ids in meta.
    assert once == [
        (kind, role, name, text)
        for said in FIRST
        for kind, role, name, text in [
            ("history", "user", "user", said),
            ("history", "assistant", "concierge", "Noted."),
        ]
    ]
    fact_event = first.events[2]
    assert meta["meta"] == {"adk_session": first.id, "adk_event": fact_event.id}
    # The fact first, as a user's memory with its time.
    assert direct.memories, "nothing found"
    top = direct.memories[0]
    assert (top.content.parts[0].text, top.content.role, top.author) == (FACT, "user", "user")
    assert top.timestamp is not None
    assert abs(datetime.fromisoformat(top.timestamp).timestamp() - fact_event.timestamp) < 1e-3
    # Through the agent's load_memory tool.
    assert answer.startswith("From memory: ") and "Lisbon" in answer
    # The later session: its question and the reply, the tool call and its answer (context tier); once.
    history = [t for t in both if t[0] == "history"]
    context = [t for t in both if t[0] == "context"]
    assert history[: len(once)] == once
    assert [(r, n) for _, r, n, _ in history[len(once) :]] == [("user", "user"), ("assistant", "concierge")]
    assert history[len(once)][3] == QUESTION and "Lisbon" in history[-1][3]
    assert [(r, n) for _, r, n, _ in context] == [("tool", "concierge"), ("tool", "concierge")]
    assert context[0][3].startswith("load_memory(") and "Lisbon" in context[1][3]
    # Another ADK user of the same app and token: nothing.
    assert other_user.memories == []

    # Another ottoweb user, the same app and user ids, a session of his own: nothing of alice's.
    bob = OttowebMemoryService(Ottoweb(server.url, server.manage("create_token", "bob").strip()))
    bobs = runner_for(bob)

    async def his():  # type: ignore[no-untyped-def]
        before = await bob.search_memory(app_name=APP, user_id=USER, query=QUESTION)
        session = await bobs.session_service.create_session(app_name=APP, user_id=USER)
        await say(bobs, session, "My brother Ana lives in Porto, I think.")
        await bob.add_session_to_memory(await stored(bobs, session))
        after = await bob.search_memory(app_name=APP, user_id=USER, query=QUESTION)
        return before, after

    before, after = run_coroutine(his())
    assert before.memories == []
    texts = [p.text for m in after.memories for p in m.content.parts or []]
    assert "My brother Ana lives in Porto, I think." in texts
    assert not any("Lisbon" in (t or "") for t in texts)


def test_bad_input_raises_value_error_and_writes_nothing(server):
    carol = Ottoweb(server.url, server.manage("create_token", "carol").strip())
    memory = OttowebMemoryService(carol)
    said = types.Content(role="user", parts=[types.Part(text="I am allergic to peanuts.")])
    fine = Event(author="user", content=said, invocation_id="i-1")
    no_time = Event(author="user", content=said, invocation_id="i-1", timestamp=float("nan"))
    no_id = Event(author="user", content=said, invocation_id="i-1")
    no_id.id = ""

    def refused(session: Session) -> str:
        with pytest.raises(ValueError) as raised:
            run_coroutine(memory.add_session_to_memory(session))
        return str(raised.value)

    messages = [
        refused(Session(id="s-1", app_name=APP, user_id="", events=[fine])),
        refused(Session(id="", app_name=APP, user_id=USER, events=[fine])),
        refused(Session(id="s-1", app_name=APP, user_id=USER, events=[fine, no_time])),
        refused(Session(id="s-1", app_name=APP, user_id=USER, events=[fine, no_id])),
    ]
    with pytest.raises(ValueError, match="user_id"):
        run_coroutine(memory.search_memory(app_name=APP, user_id=" ", query="peanuts"))

    assert messages[0] == "session.user_id must be a non-empty string, not ''"
    assert messages[1] == "session.id must be a non-empty string, not ''"
    assert "no usable timestamp" in messages[2]
    assert messages[3] == "an event's id must be a non-empty string, not ''"
    assert carol.list_sessions()["count"] == 0
    assert carol.list_notes()["count"] == 0
    # The same session without its bad event is stored whole.
    run_coroutine(memory.add_session_to_memory(Session(id="s-1", app_name=APP, user_id=USER, events=[fine])))
    assert [t["text"] for t in carol.export_session(session_id_for(APP, USER))["pending"]] == [
        "I am allergic to peanuts."
    ]


def test_a_long_session_goes_in_batches_of_at_most_a_thousand_turns_each_stored_once(server):
    dan = Ottoweb(server.url, server.manage("create_token", "dan").strip())
    calls: list[int] = []
    append_batch = dan.append_batch
    dan.append_batch = lambda sid, items: calls.append(len(items)) or append_batch(sid, items)  # type: ignore[method-assign]
    memory = OttowebMemoryService(dan)

    def event(n: int) -> Event:
        role = "user" if n % 2 == 0 else "model"
        said = types.Content(role=role, parts=[types.Part(text=f"Line {n} of the log.")])
        return Event(author="user" if role == "user" else "concierge", content=said, invocation_id=f"i-{n}")

    session = Session(id="long", app_name=APP, user_id=USER, events=[event(n) for n in range(1500)])
    run_coroutine(memory.add_session_to_memory(session))
    run_coroutine(memory.add_session_to_memory(session))
    session.events.append(event(1500))
    run_coroutine(memory.add_session_to_memory(session))

    assert calls == [1000, 500, 1]
    detail = dan.get_session(session_id_for(APP, USER))
    assert detail["turns"] == 1501
