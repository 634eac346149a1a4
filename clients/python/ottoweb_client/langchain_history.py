"""LangChain's chat history over one ottoweb session (docs/integrations.md); `ottoweb_client.langchain`
exports it beside the LangGraph store. Needs the `langgraph` extra.

`messages` is the session's bounded view: the rolling summary as one leading SystemMessage, then the raw
turns in view. An AI message's tool calls and their ToolMessages come back as such only when the calls
and every answer are all in view; otherwise as text saying what was called or answered, since a model
API refuses tool calls without their answers, and an answer without its call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from .client import Ottoweb, OttowebError, OttowebInputError
from .types import Turn, TurnOut

SUMMARY_HEAD = "Summary of the earlier conversation (oldest first):"
ROLES: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"),
    (AIMessage, "assistant"),
    (SystemMessage, "system"),
    (ToolMessage, "tool"),
)


def _text(message: BaseMessage, where: str) -> str:
    if isinstance(message.content, str):
        return message.content
    parts = []
    for block in message.content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            raise OttowebInputError(
                f"{where} holds a {kind!r} content block; only text is stored", field=where
            )
    return "".join(parts)


def message_turn(message: BaseMessage, where: str = "message") -> Turn:
    """The turn a message is appended as, or OttowebInputError saying why it cannot be one."""
    role = next((r for cls, r in ROLES if isinstance(message, cls)), None)
    if role is None:
        raise OttowebInputError(
            f"{where} is a {type(message).__name__} (type {message.type!r}); only human, ai, system and "
            "tool messages map onto turns",
            field=where,
        )
    text = _text(message, where)
    meta: dict[str, Any] = {"lc_id": message.id} if message.id else {}
    if isinstance(message, AIMessage) and message.tool_calls:
        meta["tool_calls"] = [
            {"id": c["id"], "name": c["name"], "args": c["args"]} for c in message.tool_calls
        ]
        if not text.strip():  # a turn needs text: say what was called
            text = "; ".join(
                f"calls {c['name']}({json.dumps(c['args'], default=str)})" for c in message.tool_calls
            )
    if isinstance(message, ToolMessage):
        meta["tool_call_id"] = message.tool_call_id
    if not text.strip():
        raise OttowebInputError(f"{where} has no text", field=where)
    try:
        json.dumps(meta, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise OttowebInputError(
            f"{where}'s id or tool calls are not JSON-serialisable: {exc}", field=where
        ) from None
    turn: Turn = {"role": role, "text": text}  # type: ignore[typeddict-item]
    if message.name:
        turn["name"] = message.name
    if meta:
        turn["meta"] = meta
    return turn


def turn_message(turn: TurnOut) -> BaseMessage:
    """A turn of the view as the message it was appended as."""
    meta, name, text = turn["meta"] or {}, turn["name"] or None, turn["text"]
    extra: dict[str, Any] = {"id": meta["lc_id"]} if meta.get("lc_id") else {}
    if turn["role"] == "assistant":
        return AIMessage(content=text, name=name, tool_calls=meta.get("tool_calls", []), **extra)
    if turn["role"] == "tool":
        return ToolMessage(content=text, name=name, tool_call_id=meta.get("tool_call_id", ""), **extra)
    if turn["role"] == "system":
        return SystemMessage(content=text, name=name, **extra)
    return HumanMessage(content=text, name=name, **extra)


def paired(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The view's messages with each AI message's tool calls kept only when every one of them is
    answered in view, and a ToolMessage kept only when its call is: a half left alone (the other
    compacted into the summary) is an AI message saying what was called or answered."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    kept = {
        c["id"]
        for m in messages
        if isinstance(m, AIMessage) and all(c["id"] in answered for c in m.tool_calls)
        for c in m.tool_calls
    }
    out: list[BaseMessage] = []
    for m in messages:
        if isinstance(m, AIMessage) and any(c["id"] not in kept for c in m.tool_calls):
            said = "; ".join(f"calls {c['name']}({json.dumps(c['args'], default=str)})" for c in m.tool_calls)
            text = str(m.content) if said in str(m.content) else f"{m.content}\n({said})".lstrip()
            out.append(AIMessage(content=text, name=m.name, id=m.id))
        elif isinstance(m, ToolMessage) and m.tool_call_id not in kept:
            tool = f"the tool {m.name}" if m.name else "a tool"
            out.append(AIMessage(content=f"({tool} answered: {m.content})", id=m.id))
        else:
            out.append(m)
    return out


class OttowebChatMessageHistory(BaseChatMessageHistory):
    """One ottoweb session as a LangChain chat history; the session is created on the first append
    (with `create_options`: title, x_budget, y_budget, protected_share) unless `create=False`."""

    def __init__(
        self, client: Ottoweb, session_id: str, *, create: bool = True, **create_options: Any
    ) -> None:
        self.client, self.session_id = client, session_id
        self.create, self.create_options = create, create_options

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The bounded view: the rolling summary as one leading SystemMessage, then Y's raw turns and X's."""
        try:
            view = self.client.context(self.session_id)
        except OttowebError as exc:
            if exc.code == "not_found":
                return []
            raise
        out: list[BaseMessage] = []
        if view["bullets"]:
            lines = []
            for bullet in view["bullets"]:
                label = "- "
                if bullet.get("quote"):
                    label = "- the person's earlier words (excerpt; the full text is in memory): "
                elif bullet["protected"]:
                    label = "- verbatim: "
                lines.append(label + bullet["text"])
            out.append(SystemMessage(content="\n".join([SUMMARY_HEAD, *lines])))
        return out + paired([turn_message(t) for t in (*view["y_raw"], *view["x"])])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append every message in one batch call: all of them or, on any refusal, none."""
        turns = [message_turn(m, f"messages[{i}]") for i, m in enumerate(messages)]
        if not turns:
            return
        try:
            self.client.append_batch(self.session_id, turns)
        except OttowebError as exc:
            if exc.code != "not_found" or not self.create:
                raise
            try:
                self.client.create_session(self.session_id, **self.create_options)
            except OttowebError as taken:
                if taken.code != "conflict":
                    raise
            self.client.append_batch(self.session_id, turns)

    def clear(self) -> None:
        """Reset the session: every turn and the rolling summary (`memory` action reset, mode all)."""
        try:
            self.client.memory_action(self.session_id, "reset", mode="all")
        except OttowebError as exc:
            if exc.code != "not_found":
                raise
