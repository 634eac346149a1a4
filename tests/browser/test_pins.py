"""Issue 25, items 5 and 6, in Chromium: a turn pinned and unpinned from the session page, the Summary
tab's pinned turns following without a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

from .conftest import Live, conversation, shot
from .test_page_text import said_turns

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_pin_a_turn_see_it_among_the_pinned_turns_then_unpin_it(page: Page, live: Live):
    sid = live.new_id("pins")
    turns = said_turns(12)
    live.make_session(sid, title="Pinned turns", turns=turns, x=400, y=2000)
    memory: dict = live.api("GET", f"/sessions/{sid}/context")  # type: ignore[assignment]
    target = next(t for t in memory["x"] if t["name"])  # the oldest named turn in X
    page.goto(f"{live.url}/sessions/{sid}/?tab=summary")
    pinned = page.locator("#pinned-turns")
    expect(pinned).to_contain_text("No pinned turns.")
    # Anything htmx does keeps this page; a reload would start a new one without the mark.
    page.evaluate("window.__samePage = true")

    page.locator("details.tier-list > summary", has_text="recent turn").click()
    in_x = page.locator("details.tier-list[open] li.turn").filter(has_text=target["text"])
    in_x.get_by_role("button", name="Pin").click()

    # The toggle turns into Unpin, and the turn appears among the pinned turns, who and when kept.
    expect(in_x.get_by_role("button", name="Unpin")).to_be_visible()
    expect(in_x.locator(".pin-tag")).to_have_text("pinned")
    expect(pinned.locator("li.turn")).to_have_count(1)
    entry = pinned.locator("li.turn")
    expect(entry.locator(".pos")).to_have_text(f"#{target['position']}")
    expect(entry.locator(".turn-text")).to_have_text(target["text"])
    expect(entry.locator(".tier-tag")).to_have_text("in X")
    said = turns[target["position"]]
    expect(entry.locator(".name")).to_have_text(said["name"])
    expect(entry.locator("time.when")).to_have_attribute("datetime", said["occurred_at"])
    expect(pinned.locator(".count")).to_have_text("1")
    assert page.evaluate("window.__samePage") is True
    view: dict = live.api("GET", f"/sessions/{sid}/context")  # type: ignore[assignment]
    assert [t["position"] for t in view["x"] if t["pinned"]] == [target["position"]]
    shot(page, "28-pinned-turn")

    entry.get_by_role("button", name="Unpin").click()

    expect(pinned.locator("li.turn")).to_have_count(0)
    expect(pinned).to_contain_text("No pinned turns.")
    # The copy of the toggle in X follows the one clicked among the pinned turns.
    expect(in_x.get_by_role("button", name="Pin")).to_be_visible()
    expect(in_x.locator(".pin-tag")).to_have_count(0)
    assert page.evaluate("window.__samePage") is True
    view = live.api("GET", f"/sessions/{sid}/context")  # type: ignore[assignment]
    assert [t["position"] for t in view["x"] if t["pinned"]] == []


def test_a_keyboard_pin_leaves_the_focus_on_the_toggle_where_it_was_pressed(page: Page, live: Live):
    # The toggle was swapped out of band and the pinned turns reloaded: the focus fell to the page.
    sid = live.new_id("pin-focus-x")
    live.make_session(sid, title="Pin focus", turns=said_turns(12), x=400, y=2000)
    page.goto(f"{live.url}/sessions/{sid}/?tab=summary")
    page.locator("#tier-x > summary").click()
    in_x = page.locator("#tier-x li.turn").first
    position = in_x.locator(".pos").inner_text().lstrip("#")
    toggle = page.locator(f"#tier-x .pin-at-{position} button")

    toggle.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#pinned-turns li.turn")).to_have_count(1)
    expect(toggle).to_have_text("Unpin")
    expect(toggle).to_be_focused()
    page.keyboard.press("Enter")  # the keyboard goes on from there
    expect(page.locator("#pinned-turns li.turn")).to_have_count(0)
    expect(toggle).to_have_text("Pin")
    expect(toggle).to_be_focused()

    # Unpinned from the pinned turns, the turn leaves them: the focus goes to its toggle in X.
    toggle.focus()
    page.keyboard.press("Enter")
    among_pinned = page.locator(f"#pinned-turns .pin-at-{position} button")
    expect(among_pinned).to_have_text("Unpin")
    among_pinned.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#pinned-turns li.turn")).to_have_count(0)
    expect(toggle).to_have_text("Pin")
    expect(toggle).to_be_focused()


def test_a_pin_past_the_cap_is_refused_beside_its_toggle(page: Page, live: Live):
    sid = live.new_id("pin-cap")
    long = "Please remember every step of this checklist, in order. " * 20  # over the protected share
    live.make_session(sid, title="Too long to pin", turns=[{"role": "user", "text": long}], x=2000, y=200)
    page.goto(f"{live.url}/sessions/{sid}/?tab=summary")
    page.evaluate("window.__samePage = true")

    page.locator("details.tier-list > summary", has_text="recent turn").click()
    turn = page.locator("details.tier-list[open] li.turn").first
    turn.get_by_role("button", name="Pin").click()

    expect(turn.get_by_role("alert")).to_contain_text("pinned turns may hold at most 100 tokens")
    expect(turn.get_by_role("button", name="Pin")).to_be_visible()
    expect(page.locator("#pinned-turns li.turn")).to_have_count(0)
    assert page.evaluate("window.__samePage") is True
    view: dict = live.api("GET", f"/sessions/{sid}/context")  # type: ignore[assignment]
    assert [t["pinned"] for t in view["x"]] == [False]
    turn.scroll_into_view_if_needed()
    shot(page, "29-pin-refused", full=False)


def open_a_bullet(page: Page, live: Live, stem: str) -> tuple[Locator, Locator, Locator]:
    """A compacted conversation's summary tab with its first summarised bullet opened: the bullets,
    that bullet, and the first of its cited turns that can be pinned."""
    sid = live.new_id(stem)
    live.make_session(sid, title=stem, turns=conversation())
    document = live.export(sid)
    first = next(b for b in document["bullets"] if b["kind"] == "history" and not b["protected"])
    page.goto(f"{live.url}/sessions/{sid}/?tab=summary")
    bullets = page.locator("ol.bullets > li")
    bullet = bullets.filter(has_text=first["text"][:40]).first
    bullet.locator("summary").click()
    cited = bullet.locator(".cited-turns li.turn").filter(has=page.get_by_role("button", name="Pin")).first
    expect(cited).to_have_count(1)
    return bullets, bullet, cited


def test_pinning_a_bullets_archived_turn_adds_its_pinned_bullet_in_place(page: Page, live: Live):
    # The pinned turns and tiers followed, but the new pinned bullet appeared only after a reload.
    bullets, bullet, cited = open_a_bullet(page, live, "pin-archived")
    page.evaluate("window.__samePage = true")
    before = bullets.count()
    expect(bullets.filter(has=page.locator("summary .pin-tag"))).to_have_count(0)
    text = cited.locator(".turn-text").inner_text()
    position = cited.locator(".pos").inner_text()
    cited.get_by_role("button", name="Pin").click()

    pinned = bullets.filter(has=page.locator("summary .pin-tag"))
    expect(pinned).to_have_count(1)
    expect(pinned.locator(".bullet-text")).to_contain_text(text[:40])
    expect(bullets).to_have_count(before + 1)
    expect(page.locator("#pinned-turns li.turn")).to_have_count(1)
    # The bullet opened before is open still, its turn now shown pinned.
    opened = bullet.locator("details")
    expect(opened).to_have_attribute("open", "")
    turn = opened.locator(".cited-turns li.turn").filter(has=page.get_by_text(position, exact=True))
    expect(turn.locator(".pin-tag")).to_have_text("pinned")
    assert page.evaluate("window.__samePage") is True


def test_pinning_a_bullets_turn_with_the_keyboard_leaves_the_focus_on_its_toggle(page: Page, live: Live):
    # The bullets reloaded in place and the focus fell to the page (document.body).
    bullets, bullet, cited = open_a_bullet(page, live, "pin-focus")
    before = bullets.count()
    position = cited.locator(".pos").inner_text().lstrip("#")
    opened = page.locator(f"#{bullet.locator('details').get_attribute('id')}")
    page.evaluate("document.getElementById('summary-bullets').__before = true")

    cited.get_by_role("button", name="Pin").focus()
    page.keyboard.press("Enter")

    expect(bullets).to_have_count(before + 1)  # the bullets reloaded: a pinned bullet joined them
    assert page.evaluate("document.getElementById('summary-bullets').__before") is None
    toggle = opened.locator(f".cited-turns .pin-at-{position} button")
    expect(toggle).to_have_text("Unpin")
    expect(toggle).to_be_focused()
    where = "(e => [e.closest('details').id, e.closest('form').classList.contains('pin-at-' + %s)])"
    focused = page.evaluate(f"{where % position}(document.activeElement)")
    assert focused == [opened.get_attribute("id"), True]
    page.keyboard.press("Enter")  # the keyboard goes on from there: Enter unpins the turn again
    expect(toggle).to_have_text("Pin")
    expect(toggle).to_be_focused()
    expect(page.locator("#pinned-turns li.turn")).to_have_count(0)
