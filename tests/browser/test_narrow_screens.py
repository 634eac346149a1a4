"""The dashboard on a phone (390 px wide), in Chromium: every table's headings and numbers stay
readable words, and a table too wide for the screen scrolls inside its card, never the page."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page

from .conftest import Live, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 390, "height": 844}

# How many lines an element's text takes: the distinct tops of the boxes its text is laid out in.
LINES = """e => {
  const range = document.createRange();
  range.selectNodeContents(e);
  return new Set([...range.getClientRects()].filter((r) => r.width > 1).map((r) => Math.round(r.top))).size;
}"""


def phone_page(browser: Browser, live: Live) -> Page:
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.goto(live.login_link("alice"))
    page.get_by_role("button", name="Log in as alice").click()
    page.wait_for_url(f"{live.url}/**")
    return page


def page_overflow(page: Page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def headings_broken_inside_words(page: Page) -> list[tuple[str, int]]:
    """Each table heading (not an actions column's hidden one) on more lines than it has words."""
    cells = page.locator("table.list th:not(:has(.visually-hidden))")
    lines = [(cells.nth(i).inner_text(), cells.nth(i).evaluate(LINES)) for i in range(cells.count())]
    return [(text, n) for text, n in lines if n > len(text.split())]


def test_tables_on_a_phone_keep_their_headings_and_numbers_whole(browser: Browser, live: Live):
    sid = live.new_id("phone")
    live.api(
        "POST", "/sessions", {"id": sid, "title": "Checkout on a phone", "x_budget": 4000, "y_budget": 9000}
    )
    turns = [
        {"role": "user" if i % 2 else "assistant", "text": f"Step {i} of the checkout."} for i in range(300)
    ]
    live.api("POST", f"/sessions/{sid}/items/batch", {"items": turns})
    live.api(
        "POST",
        "/memory/remember",
        {"appName": "checkout", "domain": "shop.example.com", "key": "currency", "content": "EUR"},
    )
    page = phone_page(browser, live)

    page.goto(f"{live.url}/")
    turns_cell = page.locator("table.sessions tr", has_text="Checkout on a phone").locator("td.num")
    assert turns_cell.inner_text() == "300"
    # The Turns column was 28 px wide: its heading read T-U-R-N-S down the cell, "300" as 3-0-0.
    assert turns_cell.evaluate(LINES) == 1
    assert headings_broken_inside_words(page) == []
    assert page_overflow(page) == 0
    shot(page, "narrow-sessions")

    for path in ("/account/", "/notes/", "/audit/"):
        page.goto(f"{live.url}{path}")
        # Six or five columns in 350 px broke "WHEN", "TOKEN", "CHANGED" letter by letter and cut
        # the Revoke and Delete scope buttons off; now the table scrolls sideways in its card.
        assert headings_broken_inside_words(page) == [], path
        assert page_overflow(page) == 0, path
        scroller = page.locator(".table-scroll").first
        assert scroller.evaluate("e => e.scrollWidth > e.clientWidth"), path
        shot(page, f"narrow{path.rstrip('/').replace('/', '-')}")
    page.context.close()
