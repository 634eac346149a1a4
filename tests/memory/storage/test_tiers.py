"""The tiers on the ORM (memory/storage/tiers.py): a batch's turns are written together
(`DjangoTierStore.batched`), the same tiers, bullets and keyword index as the turns appended one by
one, in a bounded number of statements."""

from __future__ import annotations

import pytest

from memory import services
from memory.models import Bullet, Item, TierState
from memory.services import NewItem
from tests.memory.engine.conftest import synthetic_turns
from tests.memory.storage.indexes import fts_count

pytestmark = pytest.mark.django_db


def turns() -> list[NewItem]:
    said = [
        NewItem(role=role, text=text, name="ana" if role == "user" else "")
        for role, text in synthetic_turns(240, seed=11)
    ]
    # A text said twice (one chunk, two items) and evicted tool output beside the history.
    said.insert(100, NewItem(role=said[3].role, text=said[3].text))
    said.insert(50, NewItem(role="tool", text="exit 0 after 12 retries", kind="context"))
    return said


def tiers(session) -> dict[str, object]:
    return {
        "items": list(
            Item.objects.filter(session=session)
            .order_by("kind", "position")
            .values_list("kind", "position", "tier", "chunk__hash", "role", "name", "tokens", "protected")
        ),
        "bullets": list(
            Bullet.objects.filter(session=session)
            .order_by("kind", "generation", "first_position", "id")
            .values_list("kind", "generation", "text", "hash_refs", "superseded", "protected")
        ),
        "state": list(
            TierState.objects.filter(session=session)
            .order_by("kind")
            .values_list("kind", "next_position", "generation")
        ),
        "fts": (fts_count(session.pk, "history"), fts_count(session.pk, "context")),
    }


@pytest.mark.parametrize("mode", ["inline", "job"])
def test_a_batch_leaves_everything_as_the_same_turns_appended_one_by_one(alice, settings, mode):
    settings.OTTO_COMPACTION = mode
    settings.OTTO_EMBEDDING_MODEL = "wordllama"  # the tiers are compared, not vectors (MiniLM: 3/4 of it)
    one = services.create_session(user=alice, sid="one", x_budget=150, y_budget=450)
    batch = services.create_session(user=alice, sid="batch", x_budget=150, y_budget=450)

    for item in turns():
        services.append_items(session=one, items=[item])
    outcomes = services.append_items(session=batch, items=turns())

    assert tiers(batch) == tiers(one)
    # Y overflowed inside the batch: a compaction queued (job), or several run inside it (inline).
    if mode == "job":
        assert any(o.compaction for o in outcomes)
    else:
        assert TierState.objects.get(session=batch, kind="history").generation > 3
    assert [o.position for o in outcomes if o.kind == "history"] == list(range(241))


def test_a_batch_of_a_thousand_turns_is_a_bounded_number_of_statements(
    alice, django_assert_max_num_queries, settings
):
    settings.OTTO_COMPACTION = "job"  # the statements of the append alone: its vectors are the worker's
    session = services.create_session(user=alice, sid="big")
    items = [NewItem(role="tool", text=f"line {n} of the build log: ok") for n in range(1000)]

    with django_assert_max_num_queries(40):
        services.append_items(session=session, items=items)

    assert Item.objects.filter(session=session).count() == 1000
    assert fts_count(session.pk, "history") == 1000
    assert TierState.objects.get(session=session, kind="history").next_position == 1000
