"""The per-request lookups in SQL written once (memory/storage/lookups.py, accounts/storage.py) return what the ORM
returns: the same rows, every field converted the same way, another user's rows never."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone as django_timezone

from accounts import storage as accounts_storage
from accounts.models import ApiToken
from memory import services
from memory.models import Item, Session, TierState
from memory.services import NewItem
from memory.storage import lookups

pytestmark = pytest.mark.django_db


def fields(row) -> dict[str, object]:
    return {f.attname: getattr(row, f.attname) for f in type(row)._meta.concrete_fields}


def test_each_lookup_returns_the_row_the_orm_returns_with_every_field_converted(alice):
    session = services.create_session(user=alice, sid="s1", x_budget=500, y_budget=900)
    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone(timedelta(hours=-5)))
    services.append_items(
        session=session,
        items=[
            NewItem(role="user", text="first", name="Caroline", occurred_at=when, meta={"dia": "D1:1"}),
            NewItem(role="assistant", text="second", protected=True),
        ],
    )
    token, plain = ApiToken.issue(alice, "laptop")

    found = accounts_storage.live_token(ApiToken.digest_of(plain))
    assert fields(found) == fields(ApiToken.objects.get(pk=token.pk))
    assert fields(found.user) == fields(type(alice).objects.get(pk=alice.pk))
    assert fields(lookups.user_session(alice.pk, "s1")) == fields(Session.objects.get(pk=session.pk))
    state = lookups.tier_state(session.pk, "history")
    assert fields(state) == fields(TierState.objects.get(session=session, kind="history"))
    for position, text in ((0, "first"), (1, "second")):
        item, said = lookups.item_at(session.pk, "history", position)
        assert fields(item) == fields(Item.objects.get(session=session, kind="history", position=position))
        assert said == text
    first, _ = lookups.item_at(session.pk, "history", 0)
    # Converted as the ORM converts them: an aware time, the JSON object, the name.
    assert first.occurred_at == when and django_timezone.is_aware(first.occurred_at)
    assert first.meta == {"dia": "D1:1"} and first.name == "Caroline"
    assert lookups.item_at(session.pk, "history", 2) is None
    assert lookups.item_at(session.pk, "context", 0) is None


def test_a_session_is_found_only_for_its_owner(alice, django_user_model):
    bob = django_user_model.objects.create_user("bob", password="bob-password-1")
    services.create_session(user=alice, sid="shared-name")

    assert lookups.user_session(alice.pk, "shared-name") is not None
    assert lookups.user_session(bob.pk, "shared-name") is None
    assert lookups.user_session(alice.pk, "other") is None


def test_a_locked_state_lookup_is_select_for_update_where_the_database_has_it(alice):
    session = services.create_session(user=alice, sid="s1")
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        assert lookups.tier_state(session.pk, "history", lock=True) is not None
        assert lookups.tier_state(session.pk, "nothing", lock=True) is None
    selects = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    assert len(selects) == 2
    assert all(("FOR UPDATE" in sql) == connection.features.has_select_for_update for sql in selects)


def test_chunk_ids_reads_past_one_in_list_of_500_and_only_the_sessions_own(alice):
    one = services.create_session(user=alice, sid="one")
    other = services.create_session(user=alice, sid="other")
    items = [NewItem(role="tool", text=f"line {n}") for n in range(700)]
    services.append_items(session=one, items=items)
    services.append_items(session=other, items=items[:10])
    hashes = list(Item.objects.filter(session=one).values_list("chunk__hash", flat=True))

    found = lookups.chunk_ids(one.pk, [*hashes, "0" * 64])

    assert found == dict(Item.objects.filter(session=one).values_list("chunk__hash", "chunk_id"))
    assert len(found) == 700
