"""Appends (memory/services/items.py): a batch is all or nothing, and bounded in items and bytes."""

from __future__ import annotations

import pytest

from memory.models import Item
from tests.memory.api.test_api_bad_input import assert_nothing_written, assert_refused

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s"})
    return "s"


def test_batch_is_all_or_nothing(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s"})

    response = alice_api.post(
        "/api/v1/sessions/s/items/batch",
        {
            "items": [
                {"role": "user", "text": "fine"},
                {"role": "user", "text": "   "},
            ]
        },
    )
    ok = alice_api.post(
        "/api/v1/sessions/s/items/batch",
        {
            "items": [
                {"role": "user", "text": "one"},
                {"role": "assistant", "text": "two"},
            ]
        },
    )

    assert response.status_code == 422
    assert response.json()["detail"] == "items[1].text must not be empty"
    assert [i["position"] for i in ok.json()["items"]] == [0, 1]
    assert Item.objects.count() == 2


def test_a_batch_of_more_items_than_the_limit_is_413_naming_it(alice_api, session, settings):
    items = [{"role": "user", "text": f"turn {n}"} for n in range(settings.OTTO_MAX_BATCH_ITEMS + 1)]

    response = alice_api.post("/api/v1/sessions/s/items/batch", {"items": items})

    assert_refused(
        response, 413, "the batch has 1,001 items; the limit is 1,000 (OTTO_MAX_BATCH_ITEMS)", "items"
    )
    assert response.json()["code"] == "too_large"
    assert_nothing_written()


def test_a_batch_of_more_text_than_the_limit_is_413_naming_it(alice_api, session, settings):
    # Twice 1 MB of text (each well inside an item's limit) is past the batch's 2 MB.
    items = [{"role": "tool", "text": "é" * 600_000} for _ in range(2)]

    response = alice_api.post("/api/v1/sessions/s/items/batch", {"items": items})

    assert_refused(
        response,
        413,
        "the batch's texts are 2,400,000 bytes; the limit is 2,097,152 (OTTO_MAX_BATCH_BYTES)",
        "items",
    )
    assert_nothing_written()


@pytest.mark.usefixtures("word_vectors")  # the batch is checked, not its vectors
def test_a_batch_at_both_limits_is_taken_whole(alice_api, session, settings):
    settings.OTTO_MAX_BATCH_BYTES = 1000 * 20
    items = [{"role": "user", "text": f"turn {n:03d} " + "x" * 11} for n in range(1000)]

    response = alice_api.post("/api/v1/sessions/s/items/batch", {"items": items})

    assert response.status_code == 201, response.content
    assert [i["position"] for i in response.json()["items"]] == list(range(1000))
    assert Item.objects.count() == 1000


@pytest.mark.django_db(transaction=True)  # committed as in production, where the foreign key is checked
def test_an_append_racing_the_sessions_delete_is_404_not_a_database_fault(alice_api, session, monkeypatch):
    # The request found the session; the delete lands before its append writes (as when another
    # client deletes it mid-request). The client is told the session is gone, not to retry later.
    from memory import services
    from memory.models import Session
    from memory.services import items as item_service

    queue_for = item_service.queue_for

    def deleted_meanwhile(session, kind):
        if Session.objects.filter(pk=session.pk).exists():
            services.delete_session(session=Session.objects.get(pk=session.pk))
        return queue_for(session, kind)

    monkeypatch.setattr(item_service, "queue_for", deleted_meanwhile)

    response = alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "one"})

    assert_refused(
        response, 404, "session 's' was deleted while the turns were appended; nothing was written"
    )
    assert response.json()["code"] == "not_found"
    assert_nothing_written()
