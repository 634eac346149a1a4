"""Issue 15, point 3: after every memory action (and every pin or unpin) every hash a live bullet
cites resolves to a stored chunk, and export → import → export round-trips (the export is accepted
by its own import)."""

from __future__ import annotations

import copy
import itertools

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import services
from memory.models import Bullet, Chunk, Item, Session
from memory.services import NewItem
from ottoweb.errors import NotFound, TooManyPins

# References and round trips are checked, not meaning: wordllama's vectors will do.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("word_vectors")]

# The properties are the services'; `make test` searches them over every example, and the
# PostgreSQL pass (the same ORM statements on another database) over a quarter of them.
SHARE = 4 if django_settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else 1


def dangling_refs(session: Session) -> set[str]:
    """Hashes live bullets cite that name no stored chunk of the session."""
    cited = {
        h
        for refs in Bullet.objects.filter(session=session, superseded=False).values_list(
            "hash_refs", flat=True
        )
        for h in refs
    }
    stored = set(Chunk.objects.filter(session=session).values_list("hash", flat=True))
    return cited - stored


def pins_out_of_view(session: Session) -> set[int]:
    """Positions of pinned turns that are archived and held by no live pinned bullet."""
    held = {
        h
        for refs in Bullet.objects.filter(session=session, superseded=False, pinned=True).values_list(
            "hash_refs", flat=True
        )
        for h in refs
    }
    pinned = Item.objects.filter(session=session, kind="history", pinned=True, tier="a")
    return {p for p, h in pinned.values_list("position", "chunk__hash") if h not in held}


def volatile_free(document: dict) -> dict:
    doc = copy.deepcopy(document)
    for key in ("id", "created_at", "updated_at"):
        doc["session"].pop(key)
    return doc


_copies = itertools.count()


def round_trips(session: Session) -> tuple[dict, dict]:
    """(export, export of its import); the copy is deleted again so the store stays as it was."""
    exported = services.export_session(session)
    copy_ = services.import_session(
        user=session.user, document=copy.deepcopy(exported), sid=f"copy-{next(_copies)}"
    )
    again = services.export_session(copy_)
    services.delete_session(session=copy_)
    return volatile_free(exported), volatile_free(again)


def test_reset_summary_keeps_the_chunks_its_bullets_cite_and_round_trips(alice):
    session = services.create_session(user=alice, sid="kept", x_budget=40, y_budget=120)
    for n in range(30):
        role = "user" if n % 3 == 0 else "assistant"
        services.append_items(
            session=session, items=[NewItem(role=role, text=f"turn {n}: the build of module {n} passed.")]
        )
    services.memory_action(session=session, action="compact")
    live = Bullet.objects.filter(session=session, superseded=False).count()

    services.memory_action(session=session, action="reset", mode="summary")
    exported, again = round_trips(session)

    assert (live > 0, dangling_refs(session)) == (True, set())
    assert again == exported
    assert len(exported["bullets"]) == live


TEXTS = [f"line {n}: the {w} step is done." for n, w in enumerate(["build", "test", "lint", "deploy", "tag"])]

step = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(["user", "assistant", "tool"]), st.sampled_from(TEXTS)),
    st.tuples(st.just("compact")),
    st.tuples(st.just("summary")),
    st.tuples(st.just("reset"), st.sampled_from(["summary", "all"])),
    st.tuples(st.just("delete_other")),
)


@settings(
    max_examples=200 // SHARE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=1, max_size=10))
def test_every_memory_action_keeps_refs_resolving_and_export_round_tripping(alice, steps):
    # Each example runs in a savepoint rolled back at its end: examples share one test transaction.
    sid = transaction.savepoint()
    try:
        session = services.create_session(user=alice, sid="prop", x_budget=30, y_budget=80)
        other = services.create_session(user=alice, sid="other", x_budget=30, y_budget=80)
        services.append_items(
            session=other,
            items=[NewItem(role="user" if n % 2 else "assistant", text=t) for n, t in enumerate(TEXTS * 3)],
        )
        for action in steps:
            if action[0] == "append":
                services.append_items(session=session, items=[NewItem(role=action[1], text=action[2])])
            elif action[0] == "reset":
                services.memory_action(session=session, action="reset", mode=action[1])
            elif action[0] == "delete_other":
                if other is not None:
                    services.delete_session(session=other)
                    other = None
            else:
                services.memory_action(session=session, action=action[0])
            session.refresh_from_db()
            exported, again = round_trips(session)

            assert dangling_refs(session) == set(), action
            assert again == exported, action
    finally:
        transaction.savepoint_rollback(sid)


pin_step = st.one_of(
    st.tuples(st.just("pin"), st.integers(0, 17), st.booleans()),
    st.tuples(st.just("append"), st.sampled_from(["user", "assistant"]), st.sampled_from(TEXTS)),
    st.tuples(st.just("compact")),
    st.tuples(st.just("summary")),
    st.tuples(st.just("reset"), st.just("summary")),
)


@settings(
    max_examples=100 // SHARE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(pin_step, min_size=1, max_size=10))
def test_pins_keep_every_pinned_turn_in_view_refs_resolving_and_export_round_tripping(alice, steps):
    sid = transaction.savepoint()
    try:
        # Sixteen turns at x 30 / y 120: twelve archived, three in Y, one in X.
        session = services.create_session(user=alice, sid="pins", x_budget=30, y_budget=120)
        for n in range(16):
            services.append_items(
                session=session,
                items=[NewItem(role="user" if n % 3 == 0 else "assistant", text=f"{TEXTS[n % 5]} ({n})")],
            )
        for action in steps:
            if action[0] == "pin":
                try:
                    services.set_pinned(session=session, position=action[1], pinned=action[2])
                except (NotFound, TooManyPins):
                    pass  # no turn there, or past the cap: refused
            elif action[0] == "append":
                services.append_items(session=session, items=[NewItem(role=action[1], text=action[2])])
            elif action[0] == "reset":
                services.memory_action(session=session, action="reset", mode=action[1])
            else:
                services.memory_action(session=session, action=action[0])
            session.refresh_from_db()
            exported, again = round_trips(session)

            assert pins_out_of_view(session) == set(), action
            assert dangling_refs(session) == set(), action
            assert again == exported, action
    finally:
        transaction.savepoint_rollback(sid)
