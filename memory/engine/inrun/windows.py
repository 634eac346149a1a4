"""Model context windows: the bundled table, a fetched one, limits learned from overflow errors.

No I/O but reading the bundled JSON file: fetching a newer table is the caller's (memory/windows.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from .overflow import MAX_LIMIT, MIN_LIMIT

# --- model windows ----------------------------------------------------------------------------------

DEFAULT_WINDOW = 128_000
MAX_TABLE_BYTES = 5_000_000
BUNDLED_PATH = Path(__file__).parent.parent / "model_windows.json"

Source = Literal["table", "learned", "default"]
_MODEL = re.compile(r"^[a-z0-9][a-z0-9._-]*:\S+$")


def normalize_model(model: str) -> str:
    """`vendor:model`, lower-cased; ValueError when there is no vendor part."""
    key = (model or "").strip().lower()
    if len(key) > 200 or not _MODEL.match(key):
        raise ValueError(
            f"model must be 'vendor:model' (for example 'openai:gpt-4o'), at most 200 characters; got {model!r}"
        )
    return key


def _window_value(entry: object) -> int | None:
    if isinstance(entry, bool):
        return None
    if isinstance(entry, int):
        return entry if MIN_LIMIT <= entry <= MAX_LIMIT else None
    if isinstance(entry, dict):
        for key in (
            "context_window",
            "window",
            "max_input_tokens",
            "input_tokens",
            "context_length",
            "max_context_window_tokens",
        ):
            if key in entry:
                return _window_value(entry[key])
    return None


def parse_table(document: object) -> dict[str, int]:
    """Windows from a table document, in any of the shapes a table service might publish.

    `{"vendor:model": 128000}`, `{"vendor": {"model": 128000}}`, `{"models": …}` (or items/data), or a
    list of `{"vendor"|"provider", "model"|"name"|"id", "context_window"|"window"|…}`. Entries that
    cannot be read are skipped.
    """
    table: dict[str, int] = {}
    if isinstance(document, dict):
        for wrapper in ("models", "items", "data"):
            if isinstance(document.get(wrapper), dict | list):
                return parse_table(document[wrapper])
        for key, entry in document.items():
            if not isinstance(key, str):
                continue
            if ":" in key:
                value = _window_value(entry)
                if value is not None:
                    _put(table, key, value)
            elif isinstance(entry, dict) and _window_value(entry) is None:
                for model, inner in entry.items():
                    value = _window_value(inner)
                    if isinstance(model, str) and value is not None:
                        _put(table, f"{key}:{model}", value)
    elif isinstance(document, list):
        for entry in document:
            if not isinstance(entry, dict):
                continue
            vendor = entry.get("vendor") or entry.get("provider")
            model = entry.get("model") or entry.get("name") or entry.get("id")
            value = _window_value(entry)
            if not isinstance(model, str) or value is None:
                continue
            key = model if ":" in model or not isinstance(vendor, str) else f"{vendor}:{model}"
            _put(table, key, value)
    return table


def _put(table: dict[str, int], key: str, value: int) -> None:
    try:
        table[normalize_model(key)] = value
    except ValueError:
        pass


@dataclass(frozen=True, slots=True)
class BundledTable:
    models: Mapping[str, int]
    fixed: Mapping[str, int]


def load_bundled(path: Path = BUNDLED_PATH) -> BundledTable:
    document = json.loads(path.read_text(encoding="utf-8"))
    return BundledTable(models=parse_table(document["models"]), fixed=parse_table(document["fixed"]))


def table_from_body(body: bytes) -> dict[str, int]:
    """The windows in a fetched table's body; ValueError when it is too large or holds no usable entry."""
    if len(body) > MAX_TABLE_BYTES:
        raise ValueError("the window table is larger than 5 MB")
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise ValueError(f"the window table is not JSON ({exc})") from None
    table = parse_table(document)
    if not table:
        raise ValueError("the window table has no usable entry")
    return table


class LearnedStore(Protocol):
    """Where limits learned from overflow errors persist (the ORM in production)."""

    def get(self, model: str) -> int | None: ...

    def put(self, model: str, window: int) -> None: ...

    def all(self) -> dict[str, int]: ...


class MemoryLearnedStore:
    """A LearnedStore in a dict, for tests and benchmarks."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}

    def get(self, model: str) -> int | None:
        return self.rows.get(model)

    def put(self, model: str, window: int) -> None:
        self.rows[model] = window

    def all(self) -> dict[str, int]:
        return dict(self.rows)


@dataclass(frozen=True, slots=True)
class WindowInfo:
    model: str
    window: int
    source: Source


class WindowRegistry:
    """Each model's context window: fixed entries, then the current table, then 128K.

    The current table is the bundled one until `use_table` installs another (the caller fetches it:
    this module does no I/O). A learned limit replaces the table's value when it is smaller and
    stands in for a model the table lacks.
    """

    def __init__(self, *, learned: LearnedStore | None = None, bundled: BundledTable | None = None) -> None:
        self.learned: LearnedStore = learned if learned is not None else MemoryLearnedStore()
        self.bundled = bundled if bundled is not None else load_bundled()
        self.fetched: dict[str, int] | None = None

    def use_table(self, table: dict[str, int]) -> None:
        """Answer from `table` from now on (fixed entries still win)."""
        self.fetched = table

    # Looking up ----------------------------------------------------------------------------------

    def _table(self) -> Mapping[str, int]:
        return self.fetched if self.fetched is not None else self.bundled.models

    def table_window(self, model: str) -> int | None:
        """The table's window for `model`: fixed, exact, or the longest entry it extends with '-'."""
        if model in self.bundled.fixed:
            return self.bundled.fixed[model]
        table = self._table()
        if model in table:
            return table[model]
        # Dated or suffixed ids ("anthropic:claude-sonnet-4-20250514") take their family's entry.
        best = ""
        for key in table:
            if model.startswith(key + "-") and len(key) > len(best):
                best = key
        return table[best] if best else None

    def lookup(self, model: str, *, learned: LearnedStore | None = None) -> WindowInfo:
        """The window to use for `model` (already normalised) and where it came from.

        `learned`: the limits of the caller (one user's); the registry's own store otherwise.
        """
        return self._resolve(model, (learned or self.learned).get(model))

    def _resolve(self, model: str, learned: int | None) -> WindowInfo:
        table = self.table_window(model)
        if learned is not None and (table is None or learned < table):
            return WindowInfo(model, learned, "learned")
        if table is not None:
            return WindowInfo(model, table, "table")
        return WindowInfo(model, DEFAULT_WINDOW, "default")

    def learn(self, model: str, limit: int, *, learned: LearnedStore | None = None) -> bool:
        """Record a limit from an overflow error when it is smaller than what is in use; say if it was.

        `learned`: where to record it (one user's limits); the registry's own store otherwise.
        """
        if not MIN_LIMIT <= limit <= MAX_LIMIT:
            return False
        store = learned or self.learned
        table = self.table_window(model)
        known = store.get(model)
        if table is not None and limit >= table:
            return False
        if known is not None and limit >= known:
            return False
        store.put(model, limit)
        return True

    def listing(self, *, learned: LearnedStore | None = None) -> list[WindowInfo]:
        """Every model the registry knows, with the window in use and its source, by name."""
        learned_limits = (learned or self.learned).all()
        names = set(self._table()) | set(self.bundled.fixed) | set(learned_limits)
        return [self._resolve(name, learned_limits.get(name)) for name in sorted(names)]
