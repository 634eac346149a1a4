"""The OpenAI Agents SDK's `Session` over one ottoweb session, and a `recall` tool (docs/integrations.md).

`OttowebSession` stores what a run adds (messages, function calls and their outputs) and hands the
model **the bounded view** instead of the whole history: the rolling summary as one leading system
message that says what it is, then the raw turns still in the view. Everything that left the view
stays in ottoweb, and `recall_tool` lets the agent ask for it.

    from agents import Agent, Runner
    from ottoweb_client import Ottoweb
    from ottoweb_client.openai_agents import OttowebSession, recall_tool

    otto = Ottoweb("http://127.0.0.1:8000", token)
    session = OttowebSession("support-42", otto)
    agent = Agent(name="helper", tools=[recall_tool(otto, "support-42")])
    await Runner.run(agent, "Where did we ship the order?", session=session)

Needs `pip install '/path/to/ottoweb/clients/python[openai-agents]'`. The mapping of each item type onto a turn:
`to_turn` and `from_turns` (an item of a type it does not know, such as a hosted tool's call, is kept
as it came in the turn's meta). Input it cannot map raises `ValueError` before anything is written; a
refusal of the server raises `OttowebError`; an `add_items` is one batch, stored whole or not at all.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agents import FunctionTool, function_tool
from agents.memory.session_settings import SessionSettings

from .client import Ottoweb, OttowebError
from .types import ContextOut, Turn, TurnOut

# What the leading item says of itself: the model must not take the summary for a user's words.
SUMMARY_PREFIX = "Summary of the earlier conversation (oldest first; details: the recall tool):\n"
ROLES: dict[str, Literal["user", "assistant", "system"]] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
# Item types stored as tool turns, given back as themselves when both halves of a call are in view.
CALL, OUTPUT = "function_call", "function_call_output"
# Any other item (a hosted tool's call such as `web_search_call`, an item type newer than this
# adapter) is kept as it came in the turn's meta, as the SDK's SQLiteSession keeps every item, when
# it fits the server's 4 KB (with room for the meta's other keys); a larger one is kept as its text.
VERBATIM_BYTES = 3_800


def _text_of(content: Any) -> str:
    """A message's content as text: a string, or its parts' text (an image or file as a marker)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence):
        raise ValueError(
            f"a message's content must be a string or a list of parts, not {type(content).__name__}"
        )
    parts = []
    for part in content:
        if not isinstance(part, Mapping):
            raise ValueError("a content part must be an object")
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            parts.append(str(part.get("text", "")))
        elif kind == "refusal":
            parts.append(str(part.get("refusal", "")))
        elif kind in ("input_image", "input_file", "input_audio"):
            parts.append(f"[{kind.removeprefix('input_')}]")
        else:
            raise ValueError(f"a content part of type {kind!r} cannot be stored")
    return "\n".join(p for p in parts if p)


def to_turn(item: Mapping[str, Any]) -> Turn:
    """One SDK input item as an ottoweb turn; ValueError for an item it cannot map."""
    if not isinstance(item, Mapping):
        raise ValueError(f"an item must be an object, not {type(item).__name__}")
    kind = item.get("type", "message")
    if kind == "message":
        role = ROLES.get(str(item.get("role")))
        if role is None:
            raise ValueError(f"a message's role must be one of {sorted(ROLES)}, not {item.get('role')!r}")
        turn: Turn = {"role": role, "text": _text_of(item.get("content", ""))}
        if item.get("name"):
            turn["name"] = str(item["name"])[:64]
        return turn
    if kind == CALL:
        name, arguments = str(item.get("name", "")), str(item.get("arguments", ""))
        return {
            "role": "assistant",
            "name": name[:64],
            "text": f"{name}({arguments})",
            "meta": {"sdk_type": CALL, "call_id": str(item.get("call_id", ""))},
        }
    if kind == OUTPUT:
        output = item.get("output", "")
        return {
            "role": "tool",
            "text": output if isinstance(output, str) else _text_of(output),
            "meta": {"sdk_type": OUTPUT, "call_id": str(item.get("call_id", ""))},
        }
    if kind == "reasoning":
        summary = " ".join(str(s.get("text", "")) for s in item.get("summary", []) if isinstance(s, Mapping))
        return {"role": "assistant", "text": summary or "(reasoning)", "meta": {"sdk_type": "reasoning"}}
    return _other_turn(str(kind), item)


def _other_turn(kind: str, item: Mapping[str, Any]) -> Turn:
    """Any other item as an assistant turn (a tool turn for a call's output) that says what it was,
    for the summary and recall; the item itself in `meta.sdk_item` when it fits, given back as it
    came (`_item_of`)."""
    action = item.get("action")
    query = action.get("query") if isinstance(action, Mapping) else None
    if kind == "web_search_call" and query:
        text = f"(searched the web for: {query})"
    else:
        shown = {k: v for k, v in item.items() if k not in ("type", "id", "status")}
        text = f"({kind}: {json.dumps(shown, ensure_ascii=False, default=str)[:2000]})"
    meta: dict[str, Any] = {"sdk_type": kind}
    call_id = item.get("call_id")
    if call_id:
        meta["call_id"] = str(call_id)
    try:
        size = len(json.dumps(item, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError):  # not JSON: kept as its text only
        size = VERBATIM_BYTES + 1
    if size <= VERBATIM_BYTES:
        meta["sdk_item"] = dict(item)
    role: Literal["assistant", "tool"] = "tool" if kind.endswith("_output") else "assistant"
    return {"role": role, "text": text, "meta": meta}


def _message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": text}


def _item_of(turn: TurnOut, paired: set[str]) -> dict[str, Any] | None:
    """A turn of the view as an SDK input item. A function call and its output come back as
    themselves only when both are in the view (a model API refuses an output without its call);
    otherwise as a plain assistant message saying what it was. Reasoning is the model's own: left out."""
    meta, text = turn.get("meta") or {}, turn["text"]
    kind, call_id = meta.get("sdk_type"), str(meta.get("call_id", ""))
    if kind == "reasoning":
        return None
    if kind == CALL:
        name = turn.get("name") or text.split("(", 1)[0]
        arguments = text[len(name) + 1 : -1] if text.startswith(f"{name}(") and text.endswith(")") else text
        if call_id in paired:
            return {"type": CALL, "call_id": call_id, "name": name, "arguments": arguments}
        return _message("assistant", f"(called the tool {name} with {arguments})")
    if kind == OUTPUT:
        if call_id in paired:
            return {"type": OUTPUT, "call_id": call_id, "output": text}
        return _message("assistant", f"(a tool answered: {text})")
    verbatim = meta.get("sdk_item")
    if isinstance(verbatim, dict) and (not call_id or call_id in paired):
        return dict(verbatim)
    role = turn["role"]
    if role == "tool":
        return _message("assistant", f"(a tool answered: {text})")
    return _message(role, text)


def from_turns(view: ContextOut) -> list[dict[str, Any]]:
    """The bounded view as SDK input items: the summary first (when there is one), then the turns."""
    turns = [*view["y_raw"], *view["x"]]
    halves: dict[str, set[str]] = {}
    for turn in turns:
        meta = turn.get("meta") or {}
        kind = str(meta.get("sdk_type", ""))
        if meta.get("call_id") and kind != "reasoning":  # a call and its output (`…_call_output`)
            halves.setdefault(str(meta["call_id"]), set()).add(
                "output" if kind.endswith("_output") else "call"
            )
    paired = {call_id for call_id, kinds in halves.items() if kinds == {"call", "output"}}
    items: list[dict[str, Any]] = []
    if view["bullets"]:
        summary = "\n".join(b["text"] for b in view["bullets"])
        items.append(_message("system", SUMMARY_PREFIX + summary))
    for turn in turns:
        item = _item_of(turn, paired)
        if item is not None:
            items.append(item)
    return items


class OttowebSession:
    """The Agents SDK's `Session` protocol over the ottoweb session `session_id` (created on first
    use with the given budgets, or the server's defaults)."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        client: Ottoweb,
        *,
        x_budget: int | None = None,
        y_budget: int | None = None,
    ) -> None:
        self.session_id = session_id
        self.client = client
        self.x_budget, self.y_budget = x_budget, y_budget
        self._ready = False

    def _ensure(self) -> None:
        if self._ready:
            return
        try:
            self.client.create_session(self.session_id, x_budget=self.x_budget, y_budget=self.y_budget)
        except OttowebError as exc:
            if exc.code != "conflict":  # an existing session is used as it is
                raise
        self._ready = True

    def _view(self) -> list[dict[str, Any]]:
        self._ensure()
        return from_turns(self.client.context(self.session_id))

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = await asyncio.to_thread(self._view)
        return items if limit is None else items[-limit:] if limit > 0 else []

    def _add(self, turns: list[Turn]) -> None:
        self._ensure()
        self.client.append_batch(self.session_id, turns)

    async def add_items(self, items: list[Any]) -> None:
        turns = [to_turn(item) for item in items]  # every item checked before anything is sent
        if turns:
            await asyncio.to_thread(self._add, turns)

    def _pop(self) -> dict[str, Any] | None:
        self._ensure()
        turn = self.client.pop(self.session_id)
        if turn is None:
            return None
        call_id = str((turn.get("meta") or {}).get("call_id", ""))
        # Given back as itself: the caller took it out, whatever its other half.
        return _item_of(turn, {call_id}) or {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": turn["text"]}],
        }

    async def pop_item(self) -> Any:
        return await asyncio.to_thread(self._pop)

    def _clear(self) -> None:
        self._ensure()
        self.client.memory_action(self.session_id, "reset", mode="all")

    async def clear_session(self) -> None:
        await asyncio.to_thread(self._clear)


def _recalled(turn: TurnOut) -> str:
    """A recalled turn as one line: when, who, its hash's first 10 hex digits (the dashboard's), the
    words: `2026-05-01T09:30:00Z ada (user) #3f2a9c1b0d: We land at 7:40.`"""
    who = f"{turn['name']} ({turn['role']})" if turn.get("name") else turn["role"]
    return f"{turn['occurred_at']} {who} #{turn['hash'][:10]}: {turn['text']}"


def recall_tool(client: Ottoweb, session_id: str, *, max_tokens: int = 1500) -> FunctionTool:
    """A function tool `recall(query)` over the session: the raw passages that answer the query,
    from any depth of compaction, within `max_tokens`."""

    @function_tool(name_override="recall")
    def recall(query: str) -> str:
        """Look up earlier parts of this conversation that are no longer in view: the exact words
        said about something (a name, a number, a decision), and when and by whom. Returns the
        passages found, each turn a line `<when, ISO 8601> <speaker> (<role>) #<hash>: <text>`;
        cite a turn by its #hash."""
        found = client.recall(session_id, query, max_tokens=max_tokens)
        passages = ["\n".join(map(_recalled, passage["turns"])) for passage in found["results"]["history"]]
        return json.dumps(passages, ensure_ascii=False) if passages else "nothing found"

    return recall
