"""Where the dashboard leaves the address: a page reached by its own link reads as that page, and a
search's answer has an address of its own (Back returns to it, a copy of it opens it)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import Live

pytestmark = pytest.mark.browser


def lesson(live: Live, tool: str) -> dict:
    body = {"tool": tool, "error": "EACCES: permission denied", "action": "npm ci", "outcome": "resolved"}
    return live.api("POST", "/lessons/errors", body)  # type: ignore[return-value]


@pytest.mark.parametrize("button", ["Save fix", "Cancel"])
def test_the_edit_page_of_its_own_returns_to_the_lessons_list(page: Page, live: Live, button: str):
    # Save and Cancel swapped the row in under "Edit the fix", the address still /lessons/<id>/edit/.
    tool = live.new_id("npm")
    record = lesson(live, tool)
    page.goto(f"{live.url}/lessons/{record['id']}/edit/")
    expect(page.get_by_role("heading", name="Edit the fix")).to_be_visible()
    page.get_by_label("Fix", exact=True).fill("npm ci --no-audit")

    page.get_by_role("button" if button == "Save fix" else "link", name=button).click()

    page.wait_for_url(f"{live.url}/lessons/")
    expect(page.get_by_role("heading", name="Lessons", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Edit the fix")).to_have_count(0)
    fix = "npm ci --no-audit" if button == "Save fix" else "npm ci"
    expect(page.locator(f"#lesson-{record['id']} .fix")).to_have_text(fix)
    if button == "Save fix":
        expect(page.locator("#flash")).to_contain_text(f"Saved the fix for “{tool}”.")


def test_reloading_the_account_page_after_issuing_a_token_issues_no_other(page: Page, live: Live):
    # The page was the POST's answer: a reload sent the form again and issued a second token.
    name = live.new_id("reload agent")
    page.goto(f"{live.url}/account/")
    page.get_by_label("Token name").fill(name)
    page.get_by_role("button", name="Issue a token").click()
    expect(page.locator("#new-token")).to_have_value(re.compile(r"^otto_"))
    expect(page).to_have_url(f"{live.url}/account/")

    page.reload()

    expect(page.locator("#new-token")).to_have_count(0)
    expect(page.locator("table.tokens tbody tr", has_text=name)).to_have_count(1)
