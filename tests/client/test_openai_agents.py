"""The OpenAI Agents SDK adapter against a live server and worker, driven by the SDK's own Runner
with a scripted model of the SDK's own `Model` interface (no network, no model): 300 turns within
the view's bounds, a fact of turn 3 found through the recall tool at turn 300, pop_item then export
→ import whole, clear_session empty, and bad items refused with nothing written."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_function_web_search import ActionSearch
from ottoweb_client import Ottoweb
from ottoweb_client.openai_agents import SUMMARY_PREFIX, OttowebSession, recall_tool

from memory.engine.tokens import count_tokens
from tests.live import Instance
from tests.live import run_coroutine as run

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the adapter, not the database, is tested

X, Y = 300, 900
# Turn 3: the person asks, and the model's answer holds the fact (a person's own words stay in the
# view by design; the model's leave it, and only recall brings them back).
ASK = "Please check the vet records for my cat."
FACT = "The vet records say your cat is called Miso and she was born in Tallinn."
QUESTION = "Remind me: what is my cat called?"


def text_of(item: dict[str, Any]) -> str:
    """What a model reads of one input item."""
    if item.get("type") == "function_call":
        return f"{item['name']}({item['arguments']})"
    if item.get("type") == "function_call_output":
        return str(item["output"])
    content = item.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content)


class ScriptedModel(Model):
    """Answers each turn with a line of routine work; asked about the cat, it calls `recall`, and
    answers with what the tool found. Every input it is given is kept."""

    def __init__(self) -> None:
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(
        self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **_
    ):  # noqa: A002
        items = [dict(i) for i in input] if isinstance(input, list) else [{"role": "user", "content": input}]
        self.inputs.append(items)
        last = items[-1]
        n = len(self.inputs)
        if last.get("type") == "function_call_output":
            output: Any = message(f"From memory: {last['output']}")
        elif text_of(last) == ASK:
            output = message(FACT)
        elif text_of(last) == QUESTION:
            output = ResponseFunctionToolCall(
                id=f"fc_{n}",
                type="function_call",
                call_id=f"call_{n}",
                name="recall",
                arguments=json.dumps({"query": "what is my cat called"}),
                status="completed",
            )
        else:
            output = message(f"Done with step {n}: the report for batch {n} is filed under ticket OPS-{n}.")
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the test runs without streaming")


def message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    instance = Instance(tmp_path_factory.mktemp("agents"))  # job mode: the worker compacts
    instance.start_web(production=True)
    instance.start_worker()
    set_tracing_disabled(True)
    yield instance
    instance.close()


def settle(client: Ottoweb, sid: str) -> None:
    """Wait until no compaction of the session is queued (the view has caught up)."""
    for _ in range(600):
        if not client.context(sid)["held_back"]:
            return
        time.sleep(0.1)


def test_a_runner_loop_of_300_turns_stays_within_the_view_and_recalls_turn_3(server):
    client = Ottoweb(server.url, server.token)
    session = OttowebSession("agent-run", client, x_budget=X, y_budget=Y)
    model = ScriptedModel()
    agent = Agent(name="helper", model=model, tools=[recall_tool(client, "agent-run")])
    said = []

    async def loop() -> Any:
        result = None
        for turn in range(1, 301):
            text = (
                FACT
                if turn == 3
                else QUESTION
                if turn == 300
                else f"Turn {turn}: please file the report for batch {turn}."
            )
            said.append(text)
            result = await Runner.run(agent, text, session=session)
        return result

    final = run(loop())

    stored = client.export_session("agent-run")
    largest = max(count_tokens(e["text"]) for e in stored["chunks"] + stored["pending"])
    sizes = [sum(count_tokens(text_of(i)) for i in inputs) for inputs in model.inputs]
    assert len(model.inputs) == 301  # one call a turn, and one more after the recall tool answered
    assert max(sizes) <= X + Y + largest, max(sizes)
    # The summary took over early turns: the view is a summary and the newest turns, not the history.
    assert any(text_of(i).startswith(SUMMARY_PREFIX) for i in model.inputs[-1])
    assert not any(text_of(i) == FACT for i in model.inputs[-2])  # turn 3 is no raw item of the view
    # Turn 3's fact came back through the tool, to the model and into its answer.
    (output,) = [i for i in model.inputs[-1] if i.get("type") == "function_call_output"]
    assert "Miso" in output["output"]
    assert "Miso" in final.final_output


def test_pop_item_then_export_and_import_round_trip_and_clear_empties_the_view(server):
    client = Ottoweb(server.url, server.token)
    session = OttowebSession("agent-pop", client, x_budget=X, y_budget=Y)
    model = ScriptedModel()
    agent = Agent(name="helper", model=model)

    async def scenario() -> Any:
        for turn in range(40):
            await Runner.run(agent, f"Turn {turn}: please file the report for batch {turn}.", session=session)
        popped = await session.pop_item()
        before = await session.get_items()
        return popped, before

    popped, before = run(scenario())
    settle(client, "agent-pop")
    exported = client.export_session("agent-pop")
    client.import_session(exported, id="agent-pop-copy")
    again = client.export_session("agent-pop-copy")

    assert popped == {
        "role": "assistant",
        "content": "Done with step 40: the report for batch 40 is filed under ticket OPS-40.",
    }
    assert text_of(before[-1]) == "Turn 39: please file the report for batch 39."
    for part in ("pending", "archive", "bullets"):
        assert again[part] == exported[part], part

    run(session.clear_session())
    assert run(session.get_items()) == []
    assert run(session.pop_item()) is None


class HostedSearchModel(Model):
    """Answers as the Responses API does for an agent with WebSearchTool: the hosted call, then the
    message; every input it is given is kept."""

    def __init__(self) -> None:
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(self, system_instructions, input, *args, **kwargs):  # noqa: A002
        self.inputs.append([dict(i) for i in input] if isinstance(input, list) else [{"content": input}])
        search = ResponseFunctionWebSearch(
            id=f"ws_{len(self.inputs)}",
            type="web_search_call",
            status="completed",
            action=ActionSearch(type="search", query="weather porto"),
        )
        return ModelResponse(
            output=[search, message("It is sunny in Porto.")], usage=Usage(), response_id=None
        )

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the test runs without streaming")


def test_a_hosted_tool_s_call_is_stored_and_given_back_as_it_came(server):
    # An agent with WebSearchTool: add_items raised ValueError on the web_search_call after the model
    # answered, and the answer was lost (only the user's turn was stored).
    client = Ottoweb(server.url, server.token)
    session = OttowebSession("agent-hosted", client)
    model = HostedSearchModel()
    agent = Agent(name="helper", model=model)

    first = run(Runner.run(agent, "Weather in Porto?", session=session))
    run(Runner.run(agent, "And tomorrow?", session=session))

    assert first.final_output == "It is sunny in Porto."
    turns = client.context("agent-hosted")["x"]
    assert [t["text"] for t in turns[:3]] == [
        "Weather in Porto?",
        "(searched the web for: weather porto)",
        "It is sunny in Porto.",
    ]
    # The next turn's input holds the hosted call as the SDK gave it, then the answer.
    given = model.inputs[1]
    (search,) = [i for i in given if i.get("type") == "web_search_call"]
    assert search["id"] == "ws_1" and search["action"]["query"] == "weather porto"
    assert [text_of(i) for i in given if i.get("type", "message") == "message"][:2] == [
        "Weather in Porto?",
        "It is sunny in Porto.",
    ]


def test_an_item_of_an_unknown_type_is_kept_with_the_rest_of_the_turn(server):
    client = Ottoweb(server.url, server.token)
    session = OttowebSession("agent-unknown", client)
    call = {"type": "computer_call", "id": "cu_1", "call_id": "c1", "action": {"type": "click", "x": 1}}
    output = {"type": "computer_call_output", "call_id": "c1", "output": {"type": "computer_screenshot"}}
    lone = {"type": "future_item", "id": "f_1", "payload": "x" * 5000}  # too large for meta: its text

    run(session.add_items([{"role": "user", "content": "Click it."}, call, output, lone]))
    items = run(session.get_items())

    assert items[:3] == [{"role": "user", "content": "Click it."}, call, output]
    assert items[3]["role"] == "assistant" and items[3]["content"].startswith(
        '(future_item: {"payload": "xxx'
    )
    # Half a call in view comes back as words, not as an item a model API would refuse alone.
    assert run(session.pop_item()) == items[3]
    run(session.pop_item())
    assert run(session.get_items())[1:] == [
        {
            "role": "assistant",
            "content": '(computer_call: {"call_id": "c1", "action": {"type": "click", "x": 1}})',
        }
    ]


def test_an_item_the_adapter_cannot_map_raises_and_nothing_is_written(server):
    client = Ottoweb(server.url, server.token)
    session = OttowebSession("agent-bad", client)
    good = {"role": "user", "content": "This turn must not be stored alone."}

    with pytest.raises(ValueError, match="content part"):
        run(session.add_items([good, {"role": "user", "content": [{"type": "hologram"}]}]))
    with pytest.raises(ValueError, match="role"):
        run(session.add_items([good, {"role": "wizard", "content": "hi"}]))

    assert run(session.get_items()) == []


def test_the_recall_tool_gives_each_turn_s_time_speaker_and_hash(server):
    # It gave `role: text` only: the agent could not say when something was said, or cite it.
    client = Ottoweb(server.url, server.token)
    client.create_session("agent-cite")
    said = client.append("agent-cite", "user", ASK, name="ada", occurred_at="2026-05-01T09:30:00+01:00")
    answer = client.append("agent-cite", "assistant", FACT, occurred_at="2026-05-01T09:31:00+01:00")
    model = ScriptedModel()
    agent = Agent(name="helper", model=model, tools=[recall_tool(client, "agent-cite")])

    run(Runner.run(agent, QUESTION))

    (output,) = [i for i in model.inputs[-1] if i.get("type") == "function_call_output"]
    (passage,) = json.loads(output["output"])
    assert passage.splitlines()[:2] == [
        f"2026-05-01T09:30:00+01:00 ada (user) #{said['hash'][:10]}: {ASK}",
        f"2026-05-01T09:31:00+01:00 assistant #{answer['hash'][:10]}: {FACT}",
    ]
