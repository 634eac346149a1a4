"""In-run compaction as a service: fit an agent's transcript to its model's window (issue 8).

The algorithm is `memory.engine.inrun`; this module supplies what it needs from Django — the window
registry with learned limits persisted in `LearnedWindow`, the configured summariser, and the
session's context tier, where every rewritten or dropped message is stored before the rewrite is
handed back.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from ottoweb.errors import Invalid, NotFound, TooLarge

from .. import hooks
from ..engine import inrun
from ..engine.hashing import content_hash
from ..engine.types import clean_name, is_blank
from ..models import Item, LearnedWindow, Session
from ..windows import RefreshingWindows
from .compaction import summarizer_for
from .items import NewItem, store_context_items
from .jobs import enqueue_context_store

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class DjangoLearnedStore:
    """`inrun.LearnedStore` on the LearnedWindow table for one user, read on every lookup so that
    every process (web workers, a restarted server) uses a limit as soon as any of them learned it.

    A limit belongs to the user whose run taught it (issue 15): another user's fit never sees it.
    """

    def __init__(self, user: User) -> None:
        self.user = user

    def _rows(self) -> QuerySet[LearnedWindow]:
        return LearnedWindow.objects.filter(user=self.user)

    def get(self, model: str) -> int | None:
        return self._rows().filter(model=model).values_list("window", flat=True).first()

    def put(self, model: str, window: int) -> None:
        try:
            with transaction.atomic():
                LearnedWindow.objects.update_or_create(
                    user=self.user, model=model, defaults={"window": window, "updated_at": timezone.now()}
                )
        except IntegrityError:
            # Two processes learned the same model at once; keep the smaller limit.
            self._rows().filter(model=model, window__gt=window).update(
                window=window, updated_at=timezone.now()
            )

    def all(self) -> dict[str, int]:
        return dict(self._rows().values_list("model", "window"))


class _NoLearnedLimits:
    """The registry's own store: empty, since every learned limit has an owner and is passed in."""

    def get(self, model: str) -> int | None:
        return None

    def put(self, model: str, window: int) -> None:
        raise AssertionError("a learned limit is recorded for its user, never installation-wide")

    def all(self) -> dict[str, int]:
        return {}


def learned_limits(*, user: User) -> list[LearnedWindow]:
    """The user's learned limits, by model name."""
    return list(LearnedWindow.objects.filter(user=user).order_by("model"))


def clear_learned_limit(*, user: User, model: str) -> None:
    """Forget the limit `user` taught for `model`; the table's window applies again. NotFound if none."""
    key = check_model(model)
    deleted, _ = LearnedWindow.objects.filter(user=user, model=key).delete()
    if not deleted:
        raise NotFound(f"no learned limit for {key}", field="model")


_registry_lock = threading.Lock()
_registry: RefreshingWindows | None = None


def window_registry() -> RefreshingWindows:
    """The process's window registry (one background refresher per process and URL)."""
    global _registry
    url = settings.OTTO_MODEL_WINDOWS_URL
    with _registry_lock:
        if _registry is None or _registry.url != url:
            _registry = RefreshingWindows(url=url, learned=_NoLearnedLimits())
        return _registry


def reset_window_registry() -> None:
    """Forget the process's registry, as a restart would (the learned limits stay in the database)."""
    global _registry
    with _registry_lock:
        _registry = None


def judges() -> inrun.Judges:
    """The configured summariser (OTTO_SUMMARIZER) and the offline "still needed?" heuristic."""
    return inrun.Judges(
        summarize=summarizer_for(settings.OTTO_SUMMARIZER),
        still_needed=inrun.heuristic_still_needed,
    )


def check_model(model: str, *, field: str = "model") -> str:
    """The normalised `vendor:model`, or Invalid naming `field`."""
    try:
        return inrun.normalize_model(model)
    except ValueError as exc:
        raise Invalid(f"{field}: {exc}", field=field) from None


@dataclass(frozen=True, slots=True)
class ContextLengthError:
    """The provider's answer to the last send: its words, and the limit when the agent knows it."""

    message: str = ""
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class FitOutcome:
    messages: list[dict[str, Any]]
    stages: list[str]
    window: int
    budget: int
    summary: str | None
    tokens: int
    over_budget: bool
    window_source: str
    learned: int | None
    evicted: int
    stored: int
    # The job storing and embedding the evicted turns (job mode, with a session and something
    # new to store); None when they were stored in the request (inline mode) or there were none.
    job_id: str | None = None
    # The recorded fixes of the failing tool (memory/hooks.py: error memory's records), or None when
    # none were looked up (the run did not end in a failed tool result, or the caller turned it off).
    related_errors: list[Any] | None = None


def fit_run(
    *,
    user: User,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    session: Session | None = None,
    last_input_tokens: int | None = None,
    error: ContextLengthError | None = None,
    previous_model: str | None = None,
    registry: inrun.WindowRegistry | None = None,
    related_errors: bool = True,
) -> FitOutcome:
    """Fit `messages` into `model`'s window; see `memory.engine.inrun` for the stages.

    Everything is validated before anything is written (more than OTTO_MAX_FIT_MESSAGES messages:
    TooLarge). A limit from `error` is learned (persisted) when it is smaller than the window in
    use; the stages run outside any transaction (they hold no lock however long the transcript);
    and with `session`, every message rewritten or dropped is stored whole in that session's
    context tier (kind "context"), so recall can bring it back. In job mode the request writes
    them raw, with a job, in one short transaction, and the worker stores and embeds them
    (`jobs.enqueue_context_store`; `job_id` names it); in inline mode (no worker) they are
    stored here, in short batches. Without a session nothing is stored and the
    stubs say so. When the transcript ends with a tool result reporting an error and
    `related_errors` is on, up to 3 of the user's live records of that tool come back, best first,
    each a hit (its TTL restarts), as `POST /lessons/related` would answer (docs/decisions.md).
    """
    limit = settings.OTTO_MAX_FIT_MESSAGES
    if len(messages) > limit:
        raise TooLarge(
            f"the transcript has {len(messages):,} messages; the limit is {limit:,} (OTTO_MAX_FIT_MESSAGES)",
            field="messages",
        )
    key = check_model(model)
    switched = previous_model is not None and check_model(previous_model, field="previous_model") != key
    transcript = [dict(m) for m in messages]
    try:
        inrun.check_transcript(transcript)
    except inrun.TranscriptError as exc:
        raise Invalid(exc.detail, field=exc.field) from None
    registry = registry or window_registry()
    mine = DjangoLearnedStore(user)
    overflow: inrun.Overflow | None = None
    learned: int | None = None
    if error is not None:
        parsed = inrun.parse_overflow(error.message)
        told = error.limit if error.limit is not None else parsed.limit
        overflow = inrun.Overflow(limit=told, used=parsed.used)
        if told is not None and registry.learn(key, told, learned=mine):
            learned = told
    window = registry.lookup(key, learned=mine)
    fitted = inrun.fit(
        transcript,
        window=window.window,
        last_input_tokens=last_input_tokens,
        overflow=overflow,
        model_switched=switched,
        judges=judges(),
        stored=session is not None,
    )
    stored, job_id = (
        store_evicted(session=session, evicted=fitted.evicted, model=key) if session else (0, None)
    )
    failed = inrun.failed_tool_result(transcript) if related_errors else None
    return FitOutcome(
        related_errors=_related_errors(user, failed) if failed is not None else None,
        messages=fitted.messages,
        stages=fitted.stages,
        window=fitted.window,
        budget=fitted.budget,
        summary=fitted.summary,
        tokens=fitted.tokens,
        over_budget=fitted.over_budget,
        window_source=window.source,
        learned=learned,
        evicted=len(fitted.evicted),
        stored=stored,
        job_id=job_id,
    )


def _related_errors(user: User, failed: inrun.FailedToolResult) -> list[Any] | None:
    # Error memory is another app's (lessons registers its lookup, memory/hooks.py).
    return hooks.related_errors(user=user, tool=failed.tool, error=failed.error)


def _parts(text: str) -> list[str]:
    # An item is limited to OTTO_MAX_ITEM_CHARS; a longer message is stored in consecutive parts.
    size = settings.OTTO_MAX_ITEM_CHARS
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _speaker(message: dict[str, Any], tool_name: str | None) -> str:
    """The stored item's name: the message's own `name`, else the tool a result came from."""
    name = message.get("name") if isinstance(message.get("name"), str) else ""
    name = name or (f"tool {tool_name}" if tool_name else "")
    # Stored names are single-line and short (`name_problem`, checked on append); a message's
    # may be anything.
    return clean_name(name)


def evicted_items(evicted: Sequence[inrun.Evicted], *, model: str) -> list[NewItem]:
    """The context items for evicted messages, in order: a message longer than an item in
    consecutive parts, a part repeated within the call once."""
    items: list[NewItem] = []
    seen: set[str] = set()
    for entry in evicted:
        message = entry.message
        parts = _parts(entry.text)
        for number, part in enumerate(parts):
            if is_blank(part) or content_hash(part) in seen:
                continue
            seen.add(content_hash(part))
            meta: dict[str, Any] = {"source": "runs.fit", "stage": entry.stage, "model": model}
            if message.get("tool_call_id"):
                meta["tool_call_id"] = message["tool_call_id"]
            if len(parts) > 1:
                meta["part"], meta["parts"] = number + 1, len(parts)
            items.append(
                NewItem(
                    role=message["role"],
                    text=part,
                    kind="context",
                    meta=meta,
                    name=_speaker(message, entry.tool_name),
                )
            )
    return items


def store_evicted(
    *, session: Session, evicted: Sequence[inrun.Evicted], model: str
) -> tuple[int, str | None]:
    """Store evicted messages whole in the session's context tier: (how many items are new, the
    job storing them in job mode).

    A message already stored (the agent resent a transcript, or two calls evicted the same message)
    is not stored again: chunks are content-addressed, and its context item already exists.
    """
    items = evicted_items(evicted, model=model)
    if not items:
        return 0, None
    if settings.OTTO_COMPACTION != "job":
        # No worker: stored here, each batch a short transaction of its own.
        return store_context_items(session=session, items=items), None
    # A read: the count handed back, and nothing already stored sent to the worker again.
    held = set(
        Item.objects.filter(
            session=session, kind="context", chunk__hash__in=[content_hash(i.text) for i in items]
        ).values_list("chunk__hash", flat=True)
    )
    fresh = [i for i in items if content_hash(i.text) not in held]
    if not fresh:
        return 0, None
    return len(fresh), enqueue_context_store(session=session, items=fresh).id
