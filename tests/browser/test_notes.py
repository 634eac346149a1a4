"""Issue 15, point 6: notes listed, read and deleted through the dashboard in a real browser."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import Live, Watched, shot

pytestmark = pytest.mark.browser


def test_notes_page_lists_scopes_reads_and_deletes_notes(watched: Watched, live: Live):
    page = watched.page
    app = {"appName": "crm", "domain": f"{live.new_id('acme')}.com"}
    key = f"app:crm@{app['domain']}"
    for n in range(3):
        live.api("POST", "/memory/remember", {**app, "key": f"k{n}", "content": f"crm note number {n}"})
    conversation = {"conversationId": live.new_id("c")}
    live.api("POST", "/memory/remember", {**conversation, "content": "a conversation note"})

    page.goto(f"{live.url}/notes/")
    page.get_by_role("link", name=key).click()
    notes = page.locator("ol.notes > li.note")
    expect(notes).to_have_count(3)
    expect(notes.first).to_contain_text("crm note number 2")
    shot(page, "21-notes-scope")

    watched.accept_confirms = True
    notes.first.get_by_role("button", name="Delete").click()
    expect(page.locator(".notice.success, .messages")).to_contain_text(f"Deleted a note of {key}.")
    expect(page.locator("ol.notes > li.note")).to_have_count(2)
    page.get_by_role("button", name=f"Delete every note of {key}").click()
    expect(page.locator("table.scopes")).not_to_contain_text(key)

    listed = live.api("GET", f"/memory/notes?appName=crm&domain={app['domain']}")
    assert listed == {"items": [], "count": 0}
    assert live.api("GET", f"/memory/notes?conversationId={conversation['conversationId']}")["count"] == 1  # type: ignore[index]
