"""LangGraph and LangChain adapters: a LangGraph store over scoped notes, a chat history over a session.

Needs the `langgraph` extra (`pip install '/path/to/ottoweb/clients/python[langgraph]'`); the core
package never imports this module. Every call goes through `Ottoweb`, so the user is always the token's.

- `OttowebStore`: a namespace `("memories", "u1")` is the app scope `appName="memories.u1"` of the
  store's `domain` (default "langgraph"; projectKey `app:memories.u1@langgraph`). LangGraph labels hold
  no ".", so the join is reversible; "%", "@" and whitespace or control characters in a label are
  percent-escaped. An item is the note whose `key` is the item's key; its value is the note's content
  as JSON. `put` is `remember` with that key (the server replaces the note of that key in that scope).
- `OttowebChatMessageHistory` (defined in `langchain_history`): `messages` is the session's bounded view
  (`GET /context`), `add_messages` one all-or-nothing batch append, `clear` a reset of everything.

Bad input raises `OttowebInputError` (an `OttowebError` and a `ValueError`) before anything is sent.
"""

from __future__ import annotations

import asyncio
import json
import operator
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote

from langgraph.store import base as lg

from .client import Ottoweb, OttowebError, OttowebInputError
from .langchain_history import SUMMARY_HEAD, OttowebChatMessageHistory, message_turn, turn_message
from .types import StoredNoteOut

__all__ = [
    "SUMMARY_HEAD",
    "OttowebChatMessageHistory",
    "OttowebInputError",
    "OttowebStore",
    "message_turn",
    "turn_message",
]

MAX_KEY_CHARS = 200  # the notes API's limits
MAX_APP_CHARS = 200
RECALL_LIMIT = 50  # the most notes one recall returns
PAGE = 100  # the most notes one listing returns


# --- the store ------------------------------------------------------------------------------------


def _escape(label: str) -> str:
    return "".join(quote(c, safe="") if c in "%@" or c.isspace() or not c.isprintable() else c for c in label)


def namespace_app(namespace: tuple[str, ...]) -> str:
    """The appName a namespace maps onto: its labels, escaped, joined by '.'."""
    if not namespace:
        raise OttowebInputError("a namespace needs at least one label", field="namespace")
    app = ".".join(_escape(label) for label in namespace)
    if len(app) > MAX_APP_CHARS:
        raise OttowebInputError(
            f"namespace {namespace!r} is {len(app)} characters as an appName; the limit is {MAX_APP_CHARS}",
            field="namespace",
        )
    return app


def app_namespace(app: str) -> tuple[str, ...]:
    """The namespace an appName written by `namespace_app` spells."""
    return tuple(unquote(part) for part in app.split("."))


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or not key or key != key.strip() or len(key) > MAX_KEY_CHARS:
        raise OttowebInputError(
            f"key {key!r} must be a string of 1-{MAX_KEY_CHARS} characters with no surrounding whitespace",
            field="key",
        )
    return key


def _content(value: Any) -> str:
    if not isinstance(value, Mapping):
        raise OttowebInputError(f"a value must be a dict, not {type(value).__name__}", field="value")
    try:
        return json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise OttowebInputError(f"the value is not JSON-serialisable: {exc}", field="value") from None


def _value(content: str) -> dict[str, Any]:
    """A note's content as a value: the JSON object the store wrote, or {"content": text} for any other note."""
    try:
        value = json.loads(content)
    except ValueError:
        return {"content": content}
    return value if isinstance(value, dict) else {"content": content}


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: equality, nested dicts, and $eq $ne $gt $gte $lt $lte."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    return bool(value == wanted)


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op in ("$eq", "$ne"):
        return bool((value == operand) == (op == "$eq"))
    if op not in _COMPARE:
        raise OttowebInputError(f"unsupported filter operator {op!r}", field="filter")
    try:
        return bool(_COMPARE[op](float(value), float(operand)))
    except (TypeError, ValueError):
        return False


_COMPARE = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def _namespace_matches(condition: lg.MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    ours = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(p == "*" or p == n for p, n in zip(path, ours, strict=True))


class OttowebStore(lg.BaseStore):
    """A LangGraph store over ottoweb's scoped notes: `OttowebStore(Ottoweb(url, token=...))`.

    Namespaces live in the app scopes of `domain` (a host name: lower-case letters, digits, '.-_:').
    """

    def __init__(self, client: Ottoweb, *, domain: str = "langgraph") -> None:
        if not domain or domain != domain.lower() or "@" in domain:
            raise OttowebInputError(f"domain {domain!r} must be a lower-case host name", field="domain")
        self.client = client
        self.domain = domain

    def _scope(self, namespace: tuple[str, ...]) -> dict[str, str]:
        return {"app_name": namespace_app(tuple(namespace)), "domain": self.domain}

    # BaseStore's two abstract methods; get/put/search/delete/list_namespaces and their a* twins build on them.

    def batch(self, ops: Iterable[lg.Op]) -> list[lg.Result]:
        ops = list(ops)
        for op in ops:  # validate every op before the first is sent
            lg.validate_op_namespace(op)
            if isinstance(op, (lg.GetOp, lg.PutOp)):
                namespace_app(tuple(op.namespace))
                _check_key(op.key)
            if isinstance(op, lg.PutOp) and op.value is not None:
                _content(op.value)
        results: list[lg.Result] = []
        for op in ops:
            if isinstance(op, lg.GetOp):
                results.append(self._get(tuple(op.namespace), op.key))
            elif isinstance(op, lg.PutOp):
                self._put(tuple(op.namespace), op.key, op.value)
                results.append(None)
            elif isinstance(op, lg.SearchOp):
                results.append(self._search(op))
            elif isinstance(op, lg.ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise OttowebInputError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[lg.Op]) -> list[lg.Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _find(self, namespace: tuple[str, ...], key: str) -> int | None:
        """The id of the note of `key` in the namespace's scope, or None.

        One recall by the key: a query equal to a note's key scores 1 (docs/lessons-and-notes.md), so
        when fewer than RECALL_LIMIT notes come back, a note of that key would be among them. Only
        past that (or when recall says it could not search) are the scope's notes listed page by page.
        """
        scope = self._scope(namespace)
        found = self.client.recall_notes(key, limit=RECALL_LIMIT, **scope)
        for note in found["items"]:
            if note["key"] == key:
                return note["id"]
        if len(found["items"]) < RECALL_LIMIT and not found.get("degraded"):
            return None
        offset = 0
        while True:
            page = self.client.list_notes(limit=PAGE, offset=offset, **scope)
            for stored in page["items"]:
                if stored["key"] == key:
                    return stored["id"]
            offset += PAGE
            if offset >= page["count"]:
                return None

    def _get(self, namespace: tuple[str, ...], key: str) -> lg.Item | None:
        note_id = self._find(namespace, key)
        if note_id is None:
            return None
        try:
            note = self.client.get_note(note_id)
        except OttowebError as exc:  # deleted in between
            if exc.code == "not_found":
                return None
            raise
        return self._item(namespace, note)

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None) -> None:
        if value is not None:
            self.client.remember(_content(value), key=key, **self._scope(namespace))
            return
        note_id = self._find(namespace, key)
        if note_id is not None:
            try:
                self.client.delete_note(note_id)
            except OttowebError as exc:
                if exc.code != "not_found":
                    raise

    @staticmethod
    def _item(namespace: tuple[str, ...], note: StoredNoteOut) -> lg.Item:
        return lg.Item(
            value=_value(note["content"]),
            key=str(note["key"]),
            namespace=namespace,
            created_at=_time(note["created_at"]),
            updated_at=_time(note["updated_at"]),
        )

    def _namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace of this store's domain the caller has notes in."""
        found = []
        for scope in self.client.list_scopes()["items"]:
            if scope["mode"] != "app":
                continue
            app, _, domain = scope["projectKey"].removeprefix("app:").rpartition("@")
            if domain == self.domain and app:
                found.append(app_namespace(app))
        return found

    def _search(self, op: lg.SearchOp) -> list[lg.SearchItem]:
        prefix = tuple(op.namespace_prefix)
        namespaces = [ns for ns in self._namespaces() if ns[: len(prefix)] == prefix]
        wanted = op.offset + op.limit
        hits: list[lg.SearchItem] = []
        for namespace in namespaces:
            scope = self._scope(namespace)
            if op.query:
                limit = RECALL_LIMIT if op.filter else max(1, min(RECALL_LIMIT, wanted))
                for note in self.client.recall_notes(op.query, limit=limit, **scope)["items"]:
                    if note["key"] is None:
                        continue  # a note not written by a store has no key to address it by
                    when = _time(note["updated_at"])  # recall answers no created_at
                    hits.append(
                        lg.SearchItem(
                            namespace, note["key"], _value(note["content"]), when, when, note["score"]
                        )
                    )
                continue
            kept, offset = 0, 0
            while kept < wanted:
                page = self.client.list_notes(limit=PAGE, offset=offset, **scope)
                for stored in page["items"]:
                    item = self._item(namespace, stored) if stored["key"] is not None else None
                    if item and (not op.filter or _matches(item.value, op.filter)):
                        hits.append(
                            lg.SearchItem(namespace, item.key, item.value, item.created_at, item.updated_at)
                        )
                        kept += 1
                offset += PAGE
                if offset >= page["count"]:
                    break
        if op.filter:
            hits = [h for h in hits if _matches(h.value, op.filter)]
        if op.query:
            hits.sort(key=lambda h: (-(h.score or 0.0), -h.updated_at.timestamp()))
        else:
            hits.sort(key=lambda h: h.updated_at, reverse=True)
        return hits[op.offset : wanted]

    def _list_namespaces(self, op: lg.ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {
            ns[: op.max_depth] if op.max_depth is not None else ns
            for ns in self._namespaces()
            if all(_namespace_matches(c, ns) for c in op.match_conditions or ())
        }
        return sorted(found)[op.offset : op.offset + op.limit]
