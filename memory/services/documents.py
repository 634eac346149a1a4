"""A session document checked whole before an import writes anything: its types, every hash
against its text, positions, every hash ref resolving, its pins within the cap, and its session's
fields as creating a session checks them. `validate` raises DocumentError naming the path of the
first problem, e.g. `pending[2].hash: does not match the sha256 of text`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from ..engine import tokens as tok
from ..engine.hashing import content_hash
from ..engine.types import (
    KINDS,
    ROLES,
    is_blank,
    json_problem,
    meta_problem,
    name_problem,
    parse_moment,
    path_suffix,
)
from .sessions import session_label_problem


class DocumentError(ValueError):
    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


WORDS = {str: "a string", int: "an integer", list: "a list", dict: "an object", bool: "true or false"}


def _need(obj: Any, path: str, key: str, kind: type, *, optional: bool = False) -> Any:
    """obj[key], which must exist (unless optional) and be of `kind`."""
    where = f"{path}.{key}" if path else key
    if not isinstance(obj, dict):
        raise DocumentError(path or "$", "must be an object")
    if key not in obj:
        if optional:
            return None
        raise DocumentError(where, "is missing")
    value = obj[key]
    # A JSON true is a Python int; it is never a count or a position.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise DocumentError(where, f"must be {WORDS[kind]}")
    return value


def _list(doc: dict[str, Any], key: str) -> list[Any]:
    value = _need(doc, "", key, list)
    return value


def _check_text(value: str, path: str, max_chars: int) -> None:
    if is_blank(value):
        raise DocumentError(path, "must not be empty")
    if len(value) > max_chars:
        raise DocumentError(path, f"is {len(value):,} characters; the limit is {max_chars:,}")


def _check_values(document: dict[str, Any]) -> None:
    """Every string storable as text, every number within the policy every stored number meets
    (engine.types.json_problem): whatever was accepted exports and imports back."""
    found = json_problem(document)
    if found:
        where, problem = found
        raise DocumentError(path_suffix(where).removeprefix(".") or "$", problem)


def validate(document: Any, *, max_item_chars: int) -> dict[str, Any]:
    """The document, checked: types, hashes, positions, and every hash ref resolving."""
    if not isinstance(document, dict):
        raise DocumentError("$", "a session document must be a JSON object")
    _check_values(document)
    if document.get("format") != "ottoweb.session":
        raise DocumentError("format", 'must be "ottoweb.session"')
    version = document.get("version")
    if version not in (1, 2) or isinstance(version, bool):
        raise DocumentError("version", "must be 1 or 2")
    session = _need(document, "", "session", dict)
    for key in ("id", "title", "workspace", "embedding_model"):
        _need(session, "session", key, str)
    # The limits POST /sessions holds them to, named where the document holds them.
    for key in ("title", "workspace"):
        problem = session_label_problem(session[key])
        if problem:
            raise DocumentError(f"session.{key}", problem)
    for key in ("x_budget", "y_budget", "turns", "generation"):
        value = _need(session, "session", key, int)
        if value < 0 or (key.endswith("budget") and not 16 <= value <= 10_000_000):
            raise DocumentError(f"session.{key}", "is out of range")
    generations = _need(session, "session", "generations", dict, optional=True) or {}
    for kind, value in generations.items():
        if kind not in KINDS or isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise DocumentError(
                f"session.generations.{kind}", "must be a non-negative integer of a known kind"
            )
    session["generations"] = generations
    share = session.get("protected_share")
    if share is not None and (
        isinstance(share, bool) or not isinstance(share, int | float) or not 0.05 <= share <= 1.0
    ):
        raise DocumentError("session.protected_share", "must be null or a number between 0.05 and 1")
    session["protected_share"] = None if share is None else float(share)
    # Not kept (the imported session is created and updated by its import), but a document whose
    # times are not times is not one this server wrote: refused rather than silently replaced.
    for key in ("created_at", "updated_at"):
        when = _need(session, "session", key, str, optional=True)
        if when is not None:
            _moment(when, f"session.{key}")

    texts: dict[str, str] = {}
    for n, chunk in enumerate(_list(document, "chunks")):
        path = f"chunks[{n}]"
        text = _need(chunk, path, "text", str)
        digest = _need(chunk, path, "hash", str)
        _check_text(text, f"{path}.text", max_item_chars)
        if content_hash(text) != digest:
            raise DocumentError(f"{path}.hash", "does not match the sha256 of text")
        texts[digest] = text

    seen: set[tuple[str, int]] = set()

    def check_turn(entry: Any, path: str) -> None:
        kind = _need(entry, path, "kind", str)
        if kind not in KINDS:
            raise DocumentError(f"{path}.kind", f"must be one of {', '.join(KINDS)}")
        position = _need(entry, path, "position", int)
        if position < 0 or (kind, position) in seen:
            raise DocumentError(f"{path}.position", "must be a non-negative position not used twice")
        seen.add((kind, position))
        if _need(entry, path, "role", str) not in ROLES:
            raise DocumentError(f"{path}.role", f"must be one of {', '.join(ROLES)}")
        _need(entry, path, "protected", bool)
        found = meta_problem(_need(entry, path, "meta", dict))
        if found:
            raise DocumentError(f"{path}.meta{path_suffix(found[0])}", found[1])
        # Both optional (a version 1 document has neither): no name, and a turn with no time
        # happened when it is imported.
        problem = name_problem(_need(entry, path, "name", str, optional=True) or "")
        if problem:
            raise DocumentError(f"{path}.name", problem)
        when = _need(entry, path, "occurred_at", str, optional=True)
        if when is not None:
            entry["occurred_at"] = _moment(when, f"{path}.occurred_at")
        entry["pinned"] = bool(_need(entry, path, "pinned", bool, optional=True))
        if entry["pinned"] and kind != "history":
            raise DocumentError(f"{path}.pinned", "a context item cannot be pinned")

    for n, entry in enumerate(_list(document, "pending")):
        path = f"pending[{n}]"
        check_turn(entry, path)
        if _need(entry, path, "tier", str) not in ("x", "y"):
            raise DocumentError(f"{path}.tier", 'must be "x" or "y"')
        text = _need(entry, path, "text", str)
        _check_text(text, f"{path}.text", max_item_chars)
        if content_hash(text) != _need(entry, path, "hash", str):
            raise DocumentError(f"{path}.hash", "does not match the sha256 of text")
        texts.setdefault(entry["hash"], text)
    for n, entry in enumerate(_list(document, "archive")):
        path = f"archive[{n}]"
        check_turn(entry, path)
        if _need(entry, path, "hash", str) not in texts:
            raise DocumentError(f"{path}.hash", "names no chunk of the document")
    for n, bullet in enumerate(_list(document, "bullets")):
        path = f"bullets[{n}]"
        if _need(bullet, path, "kind", str) not in KINDS:
            raise DocumentError(f"{path}.kind", f"must be one of {', '.join(KINDS)}")
        _check_text(_need(bullet, path, "text", str), f"{path}.text", max_item_chars)
        refs = _need(bullet, path, "hash_refs", list)
        if not refs:
            # A bullet stands for the turns it summarises; one citing none could never be opened.
            raise DocumentError(f"{path}.hash_refs", "must cite at least one turn of the document")
        for r, ref in enumerate(refs):
            if not isinstance(ref, str) or ref not in texts:
                raise DocumentError(f"{path}.hash_refs[{r}]", "names no chunk of the document")
        if _need(bullet, path, "generation", int) < 0 or _need(bullet, path, "first_position", int) < 0:
            raise DocumentError(path, "generation and first_position must not be negative")
        _need(bullet, path, "protected", bool)
        role = _need(bullet, path, "role", str)
        if role and role not in ROLES:
            raise DocumentError(f"{path}.role", f"must be empty or one of {', '.join(ROLES)}")
        # Optional, as on turns (a document written before pins has none of the three); a summary
        # line has no name and may have no time (null).
        bullet["pinned"] = bool(_need(bullet, path, "pinned", bool, optional=True))
        if bullet["pinned"] and (bullet["kind"] != "history" or not bullet["protected"] or len(refs) != 1):
            # A pinned bullet is one pinned turn carried verbatim: one hash, protected, history.
            raise DocumentError(f"{path}.pinned", "a pinned bullet is one protected history turn")
        name = _need(bullet, path, "name", str, optional=True) or ""
        problem = name_problem(name)
        if problem:
            raise DocumentError(f"{path}.name", problem)
        bullet["name"] = name
        when = bullet.get("occurred_at")
        if when is not None:
            bullet["occurred_at"] = _moment(_need(bullet, path, "occurred_at", str), f"{path}.occurred_at")
    _check_pins(document, texts)
    _check_turns(document)
    return document


def _check_turns(document: dict[str, Any]) -> None:
    """The session's `turns` no more than the history turns the document holds.

    `turns` counts the history turns appended since the session's last reset, and its export holds
    every one of them (every archived turn stays cited by the live bullets, engine/compaction.py).
    It cannot be derived: a reset that keeps the summary sets it to 0 and keeps the turns the
    summary cites, so fewer is a real session's count; more is a count of turns that are not there.
    """
    turns = document["session"]["turns"]
    held = sum(1 for part in ("pending", "archive") for e in document[part] if e["kind"] == "history")
    if turns > held:
        raise DocumentError(
            "session.turns",
            f"is {turns:,}, but the document holds {held:,} history turns (a session counts the turns "
            "appended since its last reset, and its export holds all of them)",
        )


def _moment(value: str, path: str) -> datetime:
    try:
        return parse_moment(value)
    except ValueError as exc:
        raise DocumentError(path, str(exc)) from None


def _check_pins(document: dict[str, Any], texts: dict[str, str]) -> None:
    """The document's pinned turns within the cap a session holds them to (services.pins): at most
    OTTO_MAX_PINS, holding at most the session's protected share of Y; and every pinned bullet is
    the bullet of a turn the document pins."""
    cap = settings.OTTO_MAX_PINS
    meta = document["session"]
    share = int(meta["y_budget"] * (meta["protected_share"] or settings.OTTO_PROTECTED_SHARE))
    pinned = {e["hash"] for part in ("pending", "archive") for e in document[part] if e["pinned"]}
    for n, bullet in enumerate(document["bullets"]):
        if bullet["pinned"] and bullet["hash_refs"][0] not in pinned:
            raise DocumentError(f"bullets[{n}].pinned", "pins a turn the document does not pin")
    count = tokens = 0
    for part in ("pending", "archive"):
        for n, entry in enumerate(document[part]):
            if not entry["pinned"]:
                continue
            count += 1
            tokens += tok.count_tokens(texts[entry["hash"]])
            if count > cap:
                raise DocumentError(
                    f"{part}[{n}].pinned",
                    f"is past the {cap} pinned turns a session may hold (OTTO_MAX_PINS)",
                )
            if tokens > share:
                raise DocumentError(
                    f"{part}[{n}].pinned",
                    f"takes the pinned turns to {tokens:,} tokens, past the {share:,} of the session's "
                    "protected share of Y (OTTO_PROTECTED_SHARE × y_budget)",
                )
