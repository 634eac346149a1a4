"""Issue 25, item 6, in Chromium: no dashboard page shows template syntax as text, and the turns and
bullets a session shows say who said them and when."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from playwright.sync_api import Browser, Page, expect

from memory.engine.hashing import content_hash

from .conftest import FACTS, Live, conversation, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEMPLATE_SYNTAX = ("{#", "#}", "{%", "%}", "{{", "}}")
LISBON = timezone(timedelta(hours=1))
START = datetime(2023, 5, 8, 9, 0, tzinfo=LISBON)
NAMES = {"user": "Ana", "assistant": "Otto", "tool": ""}


def said_turns(n: int) -> list[dict[str, str]]:
    """The agent's conversation with a speaker for each person's and assistant's turn, three hours
    apart from 8 May 2023 09:00 in Lisbon (+01:00): 24 turns span four days."""
    turns = []
    for i, turn in enumerate(conversation(n)):
        when = (START + timedelta(hours=3 * i)).isoformat()
        name = NAMES[turn["role"]]
        turns.append({**turn, "occurred_at": when, **({"name": name} if name else {})})
    return turns


def when_of(turn: dict[str, str]) -> datetime:
    return datetime.fromisoformat(turn["occurred_at"])


def visible_syntax(page: Page) -> list[tuple[str, str]]:
    """Template syntax in what the page shows (innerText) or holds as text anywhere in its body."""
    shown = page.evaluate("document.body.innerText")
    held = page.evaluate("document.body.textContent")
    return [
        (where, token)
        for where, text in (("shown", shown), ("held", held))
        for token in TEMPLATE_SYNTAX
        if token in text
    ]


# Each turn's speaker (empty when it has none) and the datetime its <time> carries.
SPEAKER_AND_TIME = "els => els.map((e) => [e.querySelector('.name')?.textContent ?? '', e.querySelector('time.when').dateTime])"


def test_no_dashboard_page_shows_template_syntax(browser: Browser, live: Live):
    sid = live.new_id("syntax")
    live.make_session(sid, title="Template syntax walk", turns=said_turns(24), x=60, y=200)
    live.api(
        "POST", f"/sessions/{sid}/items", {"role": "tool", "kind": "context", "text": "df: /var 97% full"}
    )
    # A turn pinned in X and one archived (a pinned bullet): the Summary tab lists them.
    for position in (23, 4):
        live.api("POST", f"/sessions/{sid}/items/{position}/pin", {"pinned": True})
    bullet = live.api("GET", f"/sessions/{sid}/context")["bullets"][0]["id"]  # type: ignore[index]
    job = live.api("POST", f"/sessions/{sid}/reembed")["job_id"]  # type: ignore[index]
    live.api(
        "POST",
        "/lessons/errors",
        {"tool": "bash", "error": "npm ERR! ENOSPC", "action": "cleared the cache", "outcome": "resolved"},
    )
    live.api("POST", "/memory/remember", {"appName": "crm", "domain": "acme.com", "content": "prefers email"})
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    found: dict[str, list[tuple[str, str]]] = {}

    def check(name: str, url: str, *, logged_in: bool = True) -> None:
        response = page.goto(url)
        assert response is not None and response.status == 200, (name, url, response and response.status)
        if logged_in:
            expect(page.get_by_role("navigation", name="Main")).to_be_visible()
        found[name] = visible_syntax(page)

    check("login", f"{live.url}/login/", logged_in=False)
    check("login link", live.login_link("alice"), logged_in=False)
    page.get_by_role("button", name="Log in as alice").click()
    page.wait_for_url(f"{live.url}/**")
    session = f"{live.url}/sessions/{sid}/"
    pages = {
        "sessions": f"{live.url}/",
        "sessions search": f"{live.url}/?q=syntax",
        "summary tab": f"{session}?tab=summary",
        "compact tab": f"{session}?tab=compact",
        "reset tab": f"{session}?tab=reset",
        "reset review": f"{session}?tab=reset&mode=summary",
        "recall by words": f"{session}?q=ERR_QUOTA_7731&match=keyword&kind=all",
        "recall by meaning": f"{session}?q=which+day+never+deploy&match=semantic&kind=all",
        "bullet": f"{session}bullets/{bullet}/",
        "delete": f"{session}delete/",
        "job": f"{live.url}/jobs/{job}/",
        "lessons": f"{live.url}/lessons/",
        "notes": f"{live.url}/notes/",
        "notes scope": f"{live.url}/notes/?scope=app:crm@acme.com",
        "account": f"{live.url}/account/",
        "audit": f"{live.url}/audit/",
        "session audit": f"{live.url}/audit/?session={sid}",
    }
    for name, url in pages.items():
        check(name, url)
    # The tab panels and recall results as htmx swaps them in, every fold open.
    page.goto(session)
    for tab in ("Compact", "Reset", "Summary"):
        page.get_by_role("tab", name=tab).click()
        expect(page.get_by_role("tab", name=tab)).to_have_attribute("aria-selected", "true")
    page.get_by_label("Search this session").fill("ERR_QUOTA_7731")
    page.get_by_role("button", name="Recall").click()
    expect(page.locator("#recall-results")).to_contain_text("ERR_QUOTA_7731")
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    expect(page.locator("ol.bullets .cited-turns").first).to_be_visible()  # a bullet's turns loaded
    found["session, swapped and unfolded"] = visible_syntax(page)
    context.close()

    assert found == {name: [] for name in found}
    assert len(found) == len(pages) + 3


def test_summary_bullets_and_their_turns_show_who_said_them_and_when(page: Page, live: Live):
    sid = live.new_id("said")
    turns = said_turns(24)
    live.make_session(sid, title="Who said it, when", turns=turns, x=60, y=200)
    by_hash = {content_hash(t["text"]): t for t in turns}
    memory: dict = live.api("GET", f"/sessions/{sid}/context")  # type: ignore[assignment]
    # A bullet citing a named speaker's turns over more than one day.
    bullet = next(
        b
        for b in memory["bullets"]
        if len({when_of(by_hash[h]).date() for h in b["hash_refs"]}) > 1
        and any("name" in by_hash[h] for h in b["hash_refs"])
    )
    refs = list(dict.fromkeys(bullet["hash_refs"]))
    cited = sorted((by_hash[h] for h in refs), key=when_of)

    page.goto(f"{live.url}/sessions/{sid}/?tab=summary")

    # The Summary tab: the bullet's speakers in the order they first spoke, its first and last day.
    item = page.locator("ol.bullets > li").filter(has_text=bullet["text"][:40]).first
    said = item.locator(".said")
    expect(said.locator(".names")).to_have_text(
        ", ".join(dict.fromkeys(t["name"] for t in cited if "name" in t))
    )
    days = [when_of(cited[0]).date().isoformat(), when_of(cited[-1]).date().isoformat()]
    assert said.locator("time").evaluate_all("els => els.map((e) => e.dateTime)") == days
    # The bullet opened onto its turns, in the order it cites them, each with its speaker and time.
    item.locator("summary").click()
    expect(item.locator(".cited-turns li.turn")).to_have_count(len(refs))
    assert item.locator(".cited-turns li.turn").evaluate_all(SPEAKER_AND_TIME) == [
        [by_hash[h].get("name", ""), when_of(by_hash[h]).isoformat()] for h in refs
    ]
    shot(page, "26-summary-who-and-when")
    # A recall hit: Ana's rule about Fridays, said on 8 May at 21:00 in Lisbon.
    page.get_by_label("Search this session").fill("Fridays")
    page.get_by_role("radio", name="Exact words").check()
    page.get_by_role("button", name="Recall").click()
    hit = page.locator("#recall-results li.turn.hit").first
    assert turns[4]["text"] == FACTS[4][1]
    expect(hit.locator(".name")).to_have_text("Ana")
    expect(hit.locator("time.when")).to_have_attribute("datetime", "2023-05-08T21:00:00+01:00")
    expect(hit.locator("time.when")).to_have_text("8 May 2023, 21:00")
    shot(page, "27-recall-who-and-when")


def test_recent_turns_show_who_said_them_and_when_as_sent(page: Page, live: Live):
    sid = live.new_id("recent")
    turns = said_turns(4)
    live.make_session(sid, title="Recent turns", turns=turns, x=4000, y=8000)

    page.goto(f"{live.url}/sessions/{sid}/?tab=summary")
    page.locator("details.tier-list > summary", has_text="recent turn").click()

    x = page.locator("details.tier-list[open] li.turn")
    expect(x).to_have_count(4)
    # The speaker beside the role (none for the tool), the time as sent (+01:00), not the server's (UTC).
    assert x.evaluate_all(SPEAKER_AND_TIME) == [[t.get("name", ""), t["occurred_at"]] for t in turns]
    expect(x.locator("time.when")).to_have_text(
        ["8 May 2023, 09:00", "8 May 2023, 12:00", "8 May 2023, 15:00", "8 May 2023, 18:00"]
    )
