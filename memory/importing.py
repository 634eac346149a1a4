"""Validation of a session document before import: everything is checked before anything is written.

Errors name the path of the first problem, e.g. `pending[2].hash: does not match the sha256 of text`.
"""

from __future__ import annotations

import math
from typing import Any

from .engine.hashing import content_hash
from .engine.types import KINDS, ROLES, meta_problem, name_problem, parse_moment, text_problem


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
    return value  # type: ignore[no-any-return]


def _check_text(value: str, path: str, max_chars: int) -> None:
    if not value.strip():
        raise DocumentError(path, "must not be empty")
    if len(value) > max_chars:
        raise DocumentError(path, f"is {len(value):,} characters; the limit is {max_chars:,}")


# The largest integer every JSON reader keeps exact; far inside SQLite's and PostgreSQL's bigint, so
# a position one past it still fits.
MAX_INT = 2**53 - 1


def _check_values(value: Any, path: str) -> None:
    """Every string storable as text, every number one a database column and JSON can hold."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise DocumentError(path, problem)
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        if not -MAX_INT <= value <= MAX_INT:
            raise DocumentError(path, "is out of range")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise DocumentError(path, "must be a finite number")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_values(key, path)
            _check_values(item, f"{path}.{key}" if path != "$" else str(key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            _check_values(item, f"{path}[{n}]")


def validate(document: Any, *, max_item_chars: int) -> dict[str, Any]:
    """The document, checked: types, hashes, positions, and every hash ref resolving."""
    if not isinstance(document, dict):
        raise DocumentError("$", "a session document must be a JSON object")
    _check_values(document, "$")
    if document.get("format") != "ottoweb.session":
        raise DocumentError("format", 'must be "ottoweb.session"')
    version = document.get("version")
    if version not in (1, 2) or isinstance(version, bool):
        raise DocumentError("version", "must be 1 or 2")
    session = _need(document, "", "session", dict)
    for key in ("id", "title", "workspace", "embedding_model"):
        _need(session, "session", key, str)
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
        problem = meta_problem(_need(entry, path, "meta", dict))
        if problem:
            raise DocumentError(f"{path}.meta", problem)
        # Both optional (a version 1 document has neither): no name, and a turn with no time
        # happened when it is imported.
        problem = name_problem(_need(entry, path, "name", str, optional=True) or "")
        if problem:
            raise DocumentError(f"{path}.name", problem)
        when = _need(entry, path, "occurred_at", str, optional=True)
        if when is not None:
            try:
                entry["occurred_at"] = parse_moment(when)
            except ValueError as exc:
                raise DocumentError(f"{path}.occurred_at", str(exc)) from None

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
        for r, ref in enumerate(refs):
            if not isinstance(ref, str) or ref not in texts:
                raise DocumentError(f"{path}.hash_refs[{r}]", "names no chunk of the document")
        if _need(bullet, path, "generation", int) < 0 or _need(bullet, path, "first_position", int) < 0:
            raise DocumentError(path, "generation and first_position must not be negative")
        _need(bullet, path, "protected", bool)
        role = _need(bullet, path, "role", str)
        if role and role not in ROLES:
            raise DocumentError(f"{path}.role", f"must be empty or one of {', '.join(ROLES)}")
    return document
