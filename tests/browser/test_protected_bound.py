"""Issue 15: a session of nothing but a person's long turns stays inside its budget on the page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.memory.services.test_protected_bound import PLANTED, person_turns

from .conftest import Live, shot

pytestmark = pytest.mark.browser


def test_session_of_only_person_turns_shows_no_over_budget_and_lists_the_earlier_words(
    page: Page, live: Live
):
    sid = live.new_id("people")
    live.api(
        "POST",
        "/sessions",
        {"id": sid, "title": "One long request thread", "x_budget": 400, "y_budget": 1200},
    )
    texts = person_turns(300)
    for start in range(0, len(texts), 50):
        live.api(
            "POST",
            f"/sessions/{sid}/items/batch",
            {"items": [{"role": "user", "text": t} for t in texts[start : start + 50]]},
        )
    live.wait_for_jobs(sid)
    context = live.api("GET", f"/sessions/{sid}/context")
    recalled = live.api("POST", f"/sessions/{sid}/recall", {"query": "ZEBRA-4471", "match": "keyword"})

    page.goto(f"{live.url}/sessions/{sid}/")
    expect(page.locator("nav.crumbs [aria-current=page]")).to_have_text(sid)

    assert context["over_budget"] is False  # type: ignore[index]
    assert context["tokens"]["total"] <= 400 + 1200 + max(len(t) for t in texts)  # type: ignore[index]
    assert any(PLANTED in t["text"] for p in recalled["results"]["history"] for t in p["turns"])  # type: ignore[index]
    expect(page.locator("#tiers")).not_to_contain_text("over budget")
    expect(page.locator("ol.bullets > li.quote").first).to_contain_text(re.compile(r"Request \d+:"))
    expect(page.locator("ol.bullets > li.quote .meta").first).to_contain_text("the person’s earlier words")
    expect(page.locator("ol.bullets > li.protected").last).to_contain_text("a person’s words, verbatim")
    shot(page, "20-person-turns-bounded")
