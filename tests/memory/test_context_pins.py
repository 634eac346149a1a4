"""GET /context while a compaction is due: the oldest unpinned raw turns of Y are held back, a
pinned one never (memory/reads.py `_within_y`)."""

from __future__ import annotations

import pytest

from memory import services
from memory.reads import session_context
from memory.services.items import NewItem

pytestmark = pytest.mark.django_db


def test_a_pinned_turn_raw_in_y_is_never_held_back_while_a_compaction_is_due(alice, settings):
    settings.OTTO_COMPACTION = "job"  # no worker runs here: the compaction stays due
    session = services.create_session(user=alice, sid="due", x_budget=40, y_budget=120)
    texts = [f"Report {n}: the nightly export of batch {n} finished without errors." for n in range(30)]
    items = [NewItem(role="assistant", text=t, pinned=n == 1) for n, t in enumerate(texts)]
    services.append_items(session=session, items=items)

    context = session_context(session)

    shown = [t["text"] for t in context["y_raw"]]
    assert context["held_back"] > 0
    assert texts[1] in shown  # pinned, among the oldest
    assert texts[0] not in shown and texts[2] not in shown  # its unpinned neighbours are held back
    assert [t["position"] for t in context["y_raw"]] == sorted(t["position"] for t in context["y_raw"])
    assert context["tokens"]["bullets"] + context["tokens"]["y_raw"] <= 120
