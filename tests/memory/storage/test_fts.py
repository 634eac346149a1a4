"""The keyword index (memory/storage/fts.py): `manage.py flush` empties a database on either backend,
keyword index included."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from memory import services
from memory.models import Item
from memory.services import NewItem
from tests.memory.storage.indexes import fts_count

pytestmark = pytest.mark.django_db(transaction=True)


def test_flush_empties_items_and_their_keyword_index(alice):
    session = services.create_session(user=alice, sid="f")
    services.append_items(session=session, items=[NewItem(role="user", text="Remember ERR_7731.")])
    assert fts_count(session.pk, "history") == 1

    call_command("flush", "--noinput", verbosity=0)

    assert not Item.objects.exists()
    assert fts_count(session.pk, "history") == 0
