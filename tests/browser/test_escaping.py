"""Memory text with HTML and script in it is shown as text on every screen, and runs nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import Live, Watched, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCRIPT = "<script>window.__xss = 'script'; alert('xss')</script>"
IMG = "<img src=x onerror=\"window.__xss = 'img'; alert('img')\">"
SVG = "<svg onload=\"window.__xss = 'svg'\"></svg>"


def nothing_ran(watched: Watched, where: str) -> None:
    page = watched.page
    ran = page.evaluate("window.__xss === undefined ? null : String(window.__xss)")
    injected = page.evaluate(
        "[...document.querySelectorAll('script, img, svg[onload]')]"
        ".filter(e => (e.textContent + (e.getAttribute('onerror') || '') + (e.getAttribute('onload') || '')).includes('__xss')).length"
    )
    assert (where, ran, injected, watched.dialogs, watched.errors) == (where, None, 0, [], [])


def test_script_in_memory_text_runs_nothing_on_any_screen(watched: Watched, live: Live):
    page: Page = watched.page
    sid = live.new_id("hostile")
    live.api(
        "POST",
        "/sessions",
        {"id": sid, "title": f"{SCRIPT} title", "workspace": IMG, "x_budget": 60, "y_budget": 200},
    )
    live.api(
        "POST", f"/sessions/{sid}/items", {"role": "user", "text": f"{SCRIPT} remember the quota code QX-42"}
    )
    for n in range(16):
        live.api(
            "POST",
            f"/sessions/{sid}/items",
            {"role": "assistant", "text": f"{IMG} {SVG} reply {n} about QX-42"},
        )
    live.api(
        "POST",
        f"/sessions/{sid}/items",
        {"role": "tool", "kind": "context", "text": f"{SCRIPT} tool output QX-42"},
    )
    lesson = live.api(
        "POST",
        "/lessons/errors",
        {"tool": f"{sid}-tool", "error": IMG, "action": SCRIPT, "context": SVG, "outcome": "resolved"},
    )

    page.goto(f"{live.url}/")
    page.wait_for_load_state("load")
    nothing_ran(watched, "sessions list")
    expect(page.get_by_role("link", name=f"{SCRIPT} title")).to_be_visible()

    page.goto(f"{live.url}/sessions/{sid}/")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"{SCRIPT} title")
    page.get_by_text("X: ").click()
    page.get_by_text("Y raw: ").click()
    page.locator("ol.bullets > li summary").first.click()
    expect(page.locator("ol.bullets .cited-turns .turn-text").first).to_contain_text("<script>window.__xss")
    nothing_ran(watched, "session summary")
    shot(page, "19-script-shown-as-text")

    page.get_by_label("Search this session").fill("QX-42")
    page.get_by_label("Exact words").check()
    page.get_by_role("button", name="Recall").click()
    expect(page.locator("#recall-results .turn.hit").first).to_contain_text("QX-42")
    expect(page.locator("#recall-results")).to_contain_text(SCRIPT)
    nothing_ran(watched, "recall")

    for tab in ("Compact", "Reset"):
        page.get_by_role("tab", name=tab).click()
        expect(page.get_by_role("tab", name=tab)).to_have_attribute("aria-selected", "true")
    page.get_by_label("Wipe everything").check()
    page.get_by_role("button", name="Review what will be lost…").click()
    expect(page.locator(".confirm h3")).to_have_text(f"Wipe everything in “{SCRIPT} title”?")
    nothing_ran(watched, "reset confirmation")

    page.goto(f"{live.url}/sessions/{sid}/delete/")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Delete “{SCRIPT} title”?")
    nothing_ran(watched, "delete confirmation")

    page.goto(f"{live.url}/lessons/?tool={sid}-tool")
    card = page.locator(f"#lesson-{lesson['id']}")
    expect(card.locator(".fix")).to_have_text(SCRIPT)
    card.get_by_role("link", name="Edit fix").click()
    expect(page.get_by_label("Fix", exact=True)).to_have_value(SCRIPT)
    page.get_by_role("button", name="Save fix").click()
    expect(card.locator(".fix")).to_have_text(SCRIPT)
    nothing_ran(watched, "lessons")
