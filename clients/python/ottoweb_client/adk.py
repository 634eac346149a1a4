"""A Google ADK memory service on ottoweb: `OttowebMemoryService(Ottoweb(url, token))` (`pip install
'/path/to/ottoweb/clients/python[adk]'`; tested against google-adk 1.1.1). Only this module imports
google.adk.

One ottoweb token is one ottoweb user: the server keeps every other user's data out of reach.
Under it, each ADK (app_name, user_id) is one ottoweb session (`session_id_for`) that every ADK
session of that user is appended to, each turn's meta naming its ADK session and event. Search is
then one recall over all of that user's earlier sessions, ranked in one list, and one ADK user
never reads another's session.

Adding a session again stores only the events added since: a note in a conversation scope of that
ADK session's own (`ledger_scope_for`) records how far it was stored, written after each batch.
Two adds of one ADK session running at the same moment may both store its new events.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from .client import Ottoweb, OttowebError

if TYPE_CHECKING:
    from google.adk.events import Event
    from google.adk.sessions import Session

    from .types import RecallTurn, Turn

__all__ = ["OttowebMemoryService", "ledger_scope_for", "session_id_for"]

MAX_BATCH_ITEMS = 1000  # the API's batch (OTTO_MAX_BATCH_ITEMS)
MAX_BATCH_BYTES = 2_000_000  # below the server's OTTO_MAX_BATCH_BYTES (2 MiB of text)
MAX_NAME = 64  # the API's `name`
LEDGER_KEY = "adk-stored"


def _digest(*parts: str, size: int) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:size]


def _slug(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", value)[:40]


def session_id_for(app_name: str, user_id: str) -> str:
    """The ottoweb session holding the ADK user's events: readable, and distinct for every pair."""
    return f"adk-{_slug(app_name)}-{_slug(user_id)}-{_digest(app_name, user_id, size=16)}"


def ledger_scope_for(app_name: str, user_id: str, session_id: str) -> str:
    """The notes scope (conversationId) whose one note records how far an ADK session is stored."""
    return f"adk-events-{_digest(app_name, user_id, session_id, size=32)}"


def _required(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, not {value!r}")
    return value


def _moment(event: Event) -> str:
    stamp = event.timestamp
    if (
        isinstance(stamp, bool)
        or not isinstance(stamp, (int, float))
        or not math.isfinite(stamp)
        or stamp < 0
    ):
        raise ValueError(f"event {event.id!r} has no usable timestamp ({stamp!r})")
    return datetime.fromtimestamp(stamp, UTC).isoformat()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def event_turns(session_id: str, event: Event) -> list[Turn]:
    """An ADK event as ottoweb turns: its text (parts joined, thoughts left out) as a user or
    assistant turn, each function call and response as a tool turn in the context tier; an event
    without either, none. ValueError when the event has no id, author or usable timestamp."""
    event_id = _required(getattr(event, "id", None), "an event's id")
    author = _required(getattr(event, "author", None), f"event {event_id!r}'s author")
    when = _moment(event)
    content = event.content
    if content is None or not content.parts:
        return []
    said = "user" if content.role == "user" or (content.role is None and author == "user") else "assistant"
    base: dict[str, Any] = {
        "name": author[:MAX_NAME],
        "occurred_at": when,
        "meta": {"adk_session": session_id, "adk_event": event_id},
    }
    turns: list[Turn] = []
    texts: list[str] = []

    def said_so_far() -> None:
        text = "\n".join(texts).strip()
        if text:
            turns.append({"role": said, "text": text, **base})  # type: ignore[typeddict-item]
        texts.clear()

    for part in content.parts:
        if part.text is not None and not part.thought:
            texts.append(part.text)
        elif part.function_call is not None or part.function_response is not None:
            said_so_far()
            call, answer = part.function_call, part.function_response
            text = (
                f"{call.name}({_json(call.args or {})})"
                if call is not None
                else f"{answer.name} -> {_json(answer.response)}"
            )
            turns.append({"role": "tool", "text": text, "kind": "context", **base})  # type: ignore[typeddict-item]
    said_so_far()
    return turns


def _batches(events: list[list[Turn]]) -> list[list[list[Turn]]]:
    """Whole events cut into batches the API takes: an event's turns never straddle two."""
    batches: list[list[list[Turn]]] = [[]]
    items = size = 0
    for turns in events:
        weight = sum(len(t["text"].encode()) for t in turns)
        if len(turns) > MAX_BATCH_ITEMS:
            raise ValueError(f"an event maps to {len(turns)} turns; at most {MAX_BATCH_ITEMS} fit a batch")
        if batches[-1] and (items + len(turns) > MAX_BATCH_ITEMS or size + weight > MAX_BATCH_BYTES):
            batches.append([])
            items = size = 0
        batches[-1].append(turns)
        items, size = items + len(turns), size + weight
    return batches


def _entry(turn: RecallTurn) -> MemoryEntry:
    role = "user" if turn["role"] == "user" else "model"
    return MemoryEntry(
        content=types.Content(role=role, parts=[types.Part(text=turn["text"])]),
        author=turn["name"] or turn["role"],
        timestamp=turn["occurred_at"],
    )


class OttowebMemoryService(BaseMemoryService):  # type: ignore[misc]  # google.adk is untyped
    """ADK memory on ottoweb. `max_tokens` bounds what one search returns (server default: none)."""

    def __init__(self, client: Ottoweb, *, max_tokens: int | None = None) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self._created: set[str] = set()

    async def add_session_to_memory(self, session: Session) -> None:
        """Store the session's events not stored yet, one batch call per ≤ 1,000 turns.

        Every event is mapped before anything is written: ValueError (a session without
        app_name, user_id or id, or an event `event_turns` refuses) writes nothing. Each batch is
        atomic; a refusal by the server is an OttowebError, and what earlier batches stored stays
        recorded, so adding the session again resumes after it."""
        app = _required(getattr(session, "app_name", None), "session.app_name")
        user = _required(getattr(session, "user_id", None), "session.user_id")
        adk_sid = _required(getattr(session, "id", None), "session.id")
        events = list(getattr(session, "events", None) or [])
        mapped = [event_turns(adk_sid, e) for e in events]
        scope = ledger_scope_for(app, user, adk_sid)
        start = await asyncio.to_thread(self._stored_upto, scope, events)
        sid = session_id_for(app, user)
        done = start
        for batch in _batches(mapped[start:]) if start < len(events) else []:
            turns = [t for event in batch for t in event]
            done += len(batch)
            if turns:
                await asyncio.to_thread(self._append, sid, app, user, turns)
            record = _json({"events": done, "last": events[done - 1].id})
            await asyncio.to_thread(self.client.remember, record, key=LEDGER_KEY, conversation_id=scope)

    def _stored_upto(self, scope: str, events: list[Event]) -> int:
        """How many of `events` are stored already (the ledger's count, checked against its ids)."""
        notes = self.client.list_notes(conversation_id=scope, limit=1)["items"]
        if not notes:
            return 0
        try:
            ledger = json.loads(notes[0]["content"])
            count, last = int(ledger["events"]), ledger["last"]
        except (ValueError, TypeError, KeyError):
            raise ValueError(f"the note in scope {scope!r} is not this service's record") from None
        if 0 < count <= len(events) and events[count - 1].id == last:
            return count
        for index, event in enumerate(events):
            if event.id == last:
                return index + 1
        raise ValueError(
            f"the memory holds events of this session up to {last!r}, which the session no longer has; "
            f"delete the note scope {scope!r} to store it again"
        )

    def _append(self, sid: str, app: str, user: str, turns: list[Turn]) -> None:
        """One batch into `sid`, created first the first time this service writes to it (and again
        if it was deleted meanwhile)."""
        if sid not in self._created:
            self._create(sid, app, user)
        try:
            self.client.append_batch(sid, turns)
        except OttowebError as err:
            if err.code != "not_found":
                raise
            self._create(sid, app, user)
            self.client.append_batch(sid, turns)

    def _create(self, sid: str, app: str, user: str) -> None:
        try:
            self.client.create_session(sid, title=f"ADK {app} / {user}"[:200], workspace="adk")
        except OttowebError as err:
            if err.code != "conflict":  # "conflict": it exists already
                raise
        self._created.add(sid)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's earlier turns that answer `query`, best first: one recall, one entry per hit
        turn (its text, role, author and time). No memory yet, or a blank query: no entries."""
        sid = session_id_for(_required(app_name, "app_name"), _required(user_id, "user_id"))
        if not isinstance(query, str) or not query.strip():
            return SearchMemoryResponse()
        try:
            found = await asyncio.to_thread(self.client.recall, sid, query, max_tokens=self.max_tokens)
        except OttowebError as err:
            if err.code == "not_found":  # nothing was ever added for this user
                return SearchMemoryResponse()
            raise
        results = found["results"]
        passages = sorted(results["history"] + results["context"], key=lambda p: -p["score"])
        seen: set[tuple[str, int]] = set()
        memories = []
        for passage in passages:
            for turn in passage["turns"]:
                if turn["hit"] and (turn["hash"], turn["position"]) not in seen:
                    seen.add((turn["hash"], turn["position"]))
                    memories.append(_entry(turn))
        return SearchMemoryResponse(memories=memories)
