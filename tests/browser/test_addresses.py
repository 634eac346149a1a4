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


def test_a_recall_has_an_address_back_returns_to_and_a_copy_opens(page: Page, live: Live):
    # The address stayed /sessions/<id>/: Back left the session, and the results could not be shared.
    sid = live.new_id("recall-address")
    turns = [
        {"role": "user", "text": "Never deploy on Fridays; ERR_QUOTA_7731 means the build cache is full."},
        {"role": "assistant", "text": "Noted: no deploys on Fridays."},
    ]
    live.make_session(sid, title="Recall address", turns=turns)
    page.goto(f"{live.url}/sessions/{sid}/")
    page.evaluate("window.__samePage = true")
    results = page.locator("#recall-results")

    page.get_by_label("Search this session").fill("ERR_QUOTA_7731")
    page.get_by_label("Exact words").check()
    page.get_by_role("button", name="Recall").click()

    expect(results.locator(".result-line")).to_contain_text("for “ERR_QUOTA_7731”")
    expect(page).to_have_url(
        f"{live.url}/sessions/{sid}/?q=ERR_QUOTA_7731&match=keyword&kind=all&tab=summary"
    )
    assert page.evaluate("window.__samePage") is True  # htmx answered it: no new page
    address = page.url

    page.go_back()
    expect(page).to_have_url(f"{live.url}/sessions/{sid}/")
    expect(results.locator(".result-line")).to_have_count(0)
    page.go_forward()
    expect(page).to_have_url(address)
    expect(results.locator(".result-line")).to_contain_text("for “ERR_QUOTA_7731”")

    shared = page.context.new_page()  # the address opened afresh, as a shared link is
    shared.goto(address)
    expect(shared.locator("#recall-results .result-line")).to_contain_text("for “ERR_QUOTA_7731”")
    expect(shared.locator("#recall-results .turn.hit mark").first).to_have_text("ERR_QUOTA_7731")
    expect(shared.get_by_label("Search this session")).to_have_value("ERR_QUOTA_7731")
    expect(shared.get_by_label("Exact words")).to_be_checked()
    shared.close()


@pytest.mark.parametrize("tab", ["Compact", "Reset"])
def test_a_recall_made_from_another_tab_keeps_that_tab_in_its_address(page: Page, live: Live, tab: str):
    # The address a recall pushed had no ?tab=: reloading it, or coming Back to it, opened the Summary tab.
    sid = live.new_id("recall-tab")
    turns = [
        {"role": "user", "text": "Never deploy on Fridays; ERR_QUOTA_7731 means the build cache is full."}
    ]
    live.make_session(sid, title="Recall from a tab", turns=turns)
    page.goto(f"{live.url}/sessions/{sid}/")
    page.get_by_role("tab", name=tab).click()  # switched in place: the page was rendered on Summary
    expect(page).to_have_url(f"{live.url}/sessions/{sid}/?tab={tab.lower()}")
    selected = page.locator("[role=tab][aria-selected=true]")
    results = page.locator("#recall-results .result-line")

    page.get_by_label("Search this session").fill("ERR_QUOTA_7731")
    page.get_by_label("Exact words").check()
    page.get_by_role("button", name="Recall").click()

    expect(results).to_contain_text("for “ERR_QUOTA_7731”")
    address = f"{live.url}/sessions/{sid}/?q=ERR_QUOTA_7731&match=keyword&kind=all&tab={tab.lower()}"
    expect(page).to_have_url(address)
    page.reload()
    expect(selected).to_have_text(tab)
    expect(results).to_contain_text("for “ERR_QUOTA_7731”")

    # Another tab keeps the recall shown above it in the address (it pushed ?tab=summary alone).
    page.get_by_role("tab", name="Summary").click()
    on_summary = f"{live.url}/sessions/{sid}/?q=ERR_QUOTA_7731&match=keyword&kind=all&tab=summary"
    expect(page).to_have_url(on_summary)
    page.reload()
    expect(selected).to_have_text("Summary")
    expect(results).to_contain_text("for “ERR_QUOTA_7731”")
    page.go_back()
    expect(page).to_have_url(address)
    expect(selected).to_have_text(tab)
    expect(results).to_contain_text("for “ERR_QUOTA_7731”")
