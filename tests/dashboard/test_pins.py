"""Issue 25, items 5 and 6, on the dashboard: every history turn the session page shows has a Pin /
Unpin toggle (htmx, or a plain form that goes back to the page), through the one pins service; the
Summary tab lists the pinned turns, whatever their tier, above the bullets."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from memory import services
from memory.models import Bullet, Item
from memory.services import NewItem

from .conftest import say
from .test_who_and_when import queries

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
LISBON = timezone(timedelta(hours=1))
START = datetime(2023, 5, 8, 9, 0, tzinfo=LISBON)
SUMMARY = "/sessions/trip/?tab=summary"


def turn(i: int) -> NewItem:
    """Turn i: Ana's (even) or Otto's (odd), an hour apart from 8 May 2023 09:00 in Lisbon."""
    return NewItem(
        role="user" if i % 2 == 0 else "assistant",
        name="Ana" if i % 2 == 0 else "Otto",
        text=f"Turn {i}: about the trip to Lisbon, part {i}.",
        occurred_at=START + timedelta(hours=i),
    )


def make_trip(user, sid: str = "trip", *, archived: int = 4, live: int = 5):
    """`archived` turns compacted into the summary, then `live` more: X moves into Y whenever a
    third turn overflows it (14 tokens each), so turns 4-6 are raw in Y and 7-8 in X."""
    session = services.create_session(user=user, sid=sid, title="Trip", x_budget=40, y_budget=4000)
    for i in range(archived):
        services.append_items(session=session, items=[turn(i)])
    if archived:
        services.memory_action(session=session, action="compact")
    for i in range(archived, archived + live):
        services.append_items(session=session, items=[turn(i)])
    return session


@pytest.fixture
def trip(alice):
    return make_trip(alice)


def tier_of(session, position: int) -> str:
    return Item.objects.get(session=session, kind="history", position=position).tier


def pinned(session) -> list[int]:
    return list(
        Item.objects.filter(session=session, pinned=True)
        .order_by("position")
        .values_list("position", flat=True)
    )


def toggles(html: str, position: int) -> list[str]:
    """The pin toggles of the turn at `position` in `html`, each as its button's label."""
    forms = re.findall(rf'<form [^>]*class="pin pin-at-{position}".*?</form>', html, flags=re.S)
    return [re.search(r'<button type="submit"[^>]*>(\w+)</button>', f).group(1) for f in forms]


def pinned_list(html: str) -> str:
    start = html.index('<section id="pinned-turns"')
    return html[start : html.index("</section>", start)]


def test_the_tiers_show_every_history_turn_with_a_pin_toggle(alice_web, trip):
    tiers = {p: tier_of(trip, p) for p in range(4, 9)}

    html = alice_web.get(SUMMARY).content.decode()

    assert set(tiers.values()) == {"x", "y"}
    for position in range(4, 9):
        assert toggles(html, position) == ["Pin"], position
    # A plain form to the pin view, going back to this page without JavaScript.
    form = re.search(r'<form [^>]*class="pin pin-at-4".*?</form>', html, flags=re.S).group(0)
    assert 'method="post" action="/sessions/trip/turns/4/pin/"' in form
    assert 'hx-post="/sessions/trip/turns/4/pin/" hx-swap="none"' in form
    assert '<input type="hidden" name="next" value="/sessions/trip/?tab=summary">' in form
    assert '<input type="hidden" name="pinned" value="1">' in form


def test_pin_without_javascript_pins_the_turn_and_goes_back_to_the_page(alice_web, trip):
    response = alice_web.post("/sessions/trip/turns/5/pin/", {"pinned": "1", "next": SUMMARY}, follow=True)
    html = response.content.decode()

    assert response.redirect_chain == [(SUMMARY, 302)]
    assert pinned(trip) == [5]
    assert "Pinned turn #5: it stays verbatim in the prompt view until unpinned." in html
    assert toggles(html, 5) == ["Unpin", "Unpin"]  # in its tier and among the pinned turns
    assert toggles(pinned_list(html), 5) == ["Unpin"]


def test_unpin_without_javascript_unpins_the_turn_and_goes_back_to_the_page(alice_web, trip):
    services.set_pinned(session=trip, position=5)

    response = alice_web.post("/sessions/trip/turns/5/pin/", {"pinned": "0", "next": SUMMARY}, follow=True)
    html = response.content.decode()

    assert response.redirect_chain == [(SUMMARY, 302)]
    assert pinned(trip) == []
    assert "Unpinned turn #5." in html
    assert toggles(html, 5) == ["Pin"]
    assert "No pinned turns." in pinned_list(html)


def test_a_plain_form_goes_back_only_to_a_page_of_this_site(alice_web, trip):
    away = alice_web.post("/sessions/trip/turns/5/pin/", {"pinned": "1", "next": "https://evil.example/"})
    none = alice_web.post("/sessions/trip/turns/5/pin/", {"pinned": "0"})

    assert (away.status_code, away["Location"]) == (302, "/sessions/trip/")
    assert (none.status_code, none["Location"]) == (302, "/sessions/trip/")


def test_pin_through_htmx_answers_the_turns_toggle_for_every_copy_of_it(alice_web, trip):
    response = alice_web.post("/sessions/trip/turns/5/pin/", {"pinned": "1", "next": SUMMARY}, **HX)
    html = response.content.decode().strip()

    assert response.status_code == 200
    assert pinned(trip) == [5]
    # Only the toggle, swapped out of band into every copy of turn 5's toggle on the page.
    assert html.startswith('<form method="post" action="/sessions/trip/turns/5/pin/" class="pin pin-at-5"')
    assert html.endswith("</form>") and html.count("<form") == 1
    assert 'hx-swap-oob="outerHTML:.pin-at-5"' in html
    assert toggles(html, 5) == ["Unpin"]
    assert '<span class="tag pin-tag">pinned</span>' in html
    assert f'name="next" value="{SUMMARY}"' in html  # still goes back to the page without JavaScript
    # The regions that show the session (the tiers, the pinned turns) reload themselves.
    assert response["HX-Trigger-After-Swap"] == '{"session-changed": {}}'


def test_unpin_through_htmx_answers_the_pin_toggle(alice_web, trip):
    services.set_pinned(session=trip, position=5)

    response = alice_web.post("/sessions/trip/turns/5/pin/", {"pinned": "0"}, **HX)
    html = response.content.decode()

    assert response.status_code == 200
    assert pinned(trip) == []
    assert toggles(html, 5) == ["Pin"]
    assert "pin-tag" not in html
    assert response["HX-Trigger-After-Swap"] == '{"session-changed": {}}'


def test_the_pinned_turns_region_reloads_alone_for_htmx(alice_web, trip):
    services.set_pinned(session=trip, position=7)

    html = alice_web.get(SUMMARY, **HX, HTTP_HX_TARGET="pinned-turns").content.decode()

    assert html.lstrip().startswith('<section id="pinned-turns"')
    assert 'hx-trigger="session-changed from:body"' in html
    assert toggles(html, 7) == ["Unpin"] and "<html" not in html


def test_the_summary_bullets_reload_alone_with_a_pinned_archived_turns_bullet(alice_web, trip):
    # A pin of an archived turn adds a pinned bullet, which appeared only after a reload.
    before = alice_web.get(SUMMARY, **HX, HTTP_HX_TARGET="summary-bullets").content.decode()
    archived = Item.objects.filter(session=trip, kind="history", tier="a", role="assistant").first()
    services.set_pinned(session=trip, position=archived.position)

    html = alice_web.get(SUMMARY, **HX, HTTP_HX_TARGET="summary-bullets").content.decode()

    assert html.lstrip().startswith('<div id="summary-bullets"')
    assert 'hx-trigger="session-changed from:body"' in html and "<html" not in html
    assert html.count('<li class="bullet') == before.count('<li class="bullet') + 1
    assert '<span class="tag pin-tag">pinned</span>' in html and "pin-tag" not in before
    assert archived.chunk.text in html
    for bullet in Bullet.objects.filter(session=trip, superseded=False):
        assert f'<details id="bullet-{bullet.pk}">' in html  # ottoweb.js opens again those open before


@pytest.fixture
def capped(trip, settings):
    settings.OTTO_MAX_PINS = 1
    services.set_pinned(session=trip, position=4)
    return trip


def test_a_pin_past_the_cap_without_javascript_writes_nothing_and_says_why(alice_web, capped):
    before = list(Bullet.objects.filter(session=capped).values_list("pk", "pinned", "superseded"))

    response = alice_web.post("/sessions/trip/turns/6/pin/", {"pinned": "1", "next": SUMMARY}, follow=True)
    html = response.content.decode()

    assert response.redirect_chain == [(SUMMARY, 302)]
    assert pinned(capped) == [4]
    assert list(Bullet.objects.filter(session=capped).values_list("pk", "pinned", "superseded")) == before
    assert (
        '<p class="notice error" role="status">Turn #6 was not pinned: the session has 1 pinned turns, '
        "the most a session may pin (OTTO_MAX_PINS = 1): unpin one first</p>"
    ) in html
    assert toggles(html, 6) == ["Pin"]


def test_a_pin_past_the_cap_through_htmx_writes_nothing_and_shows_why_beside_the_toggle(alice_web, capped):
    response = alice_web.post("/sessions/trip/turns/6/pin/", {"pinned": "1"}, **HX)
    html = response.content.decode()

    assert response.status_code == 422  # swapped by the page (htmx-config), like a form's errors
    assert pinned(capped) == [4]
    assert toggles(html, 6) == ["Pin"]
    assert (
        '<span class="error" role="alert">the session has 1 pinned turns, the most a session may pin '
        "(OTTO_MAX_PINS = 1): unpin one first</span>"
    ) in html
    assert "HX-Trigger-After-Swap" not in response


def test_a_pin_past_the_protected_share_is_refused_the_same_way(alice_web, alice):
    session = services.create_session(
        user=alice, sid="tight", x_budget=4000, y_budget=40, protected_share=0.25
    )
    say(session, ("user", "A long instruction that takes more tokens than a quarter of Y can hold, surely."))

    response = alice_web.post("/sessions/tight/turns/0/pin/", {"pinned": "1"}, **HX)

    assert response.status_code == 422
    assert pinned(session) == []
    assert (
        '<span class="error" role="alert">pinned turns may hold at most 10 tokens, the session&#x27;s '
        "protected share of Y"
    ) in response.content.decode()


def test_another_users_session_answers_404_and_nothing_is_pinned(alice_web, bob_web, trip):
    plain = bob_web.post("/sessions/trip/turns/5/pin/", {"pinned": "1"})
    htmx = bob_web.post("/sessions/trip/turns/5/pin/", {"pinned": "1"}, **HX)
    untouched = pinned(trip)
    mine = alice_web.post("/sessions/trip/turns/5/pin/", {"pinned": "1"})

    assert (plain.status_code, htmx.status_code) == (404, 404)
    assert b"Trip" not in plain.content
    assert untouched == []
    assert (mine.status_code, pinned(trip)) == (302, [5])  # the same request, from its owner


def test_a_position_with_no_history_turn_answers_404(alice_web, trip):
    say(trip, ("tool", "df: /var 97% full"), kind="context")  # context position 0 is no history turn

    for position in (9, 2**63):
        response = alice_web.post(f"/sessions/trip/turns/{position}/pin/", {"pinned": "1"})
        assert (position, response.status_code) == (position, 404)
    assert pinned(trip) == []
    assert alice_web.post("/sessions/trip/turns/0/pin/", {"pinned": "1"}).status_code == 302
    assert pinned(trip) == [0]  # history turn 0, not the tool output at context position 0


def test_pinned_must_say_pin_or_unpin(alice_web, trip):
    response = alice_web.post("/sessions/trip/turns/5/pin/", {"pinned": "yes"})

    assert (response.status_code, response.content) == (400, b"pinned must be 1 (pin) or 0 (unpin)")
    assert pinned(trip) == []


def test_pin_is_a_post(alice_web, trip):
    assert alice_web.get("/sessions/trip/turns/5/pin/").status_code == 405


def test_context_items_show_no_toggle(alice_web, trip):
    say(trip, ("tool", "ERROR ERR_QUOTA_7731: build cache quota exceeded"), kind="context")
    history = alice_web.get(
        "/sessions/trip/",
        {"q": "Lisbon", "match": "keyword", "kind": "history"},
        **HX,
        HTTP_HX_TARGET="recall-results",
    ).content.decode()
    context = alice_web.get(
        "/sessions/trip/",
        {"q": "ERR_QUOTA_7731", "match": "keyword", "kind": "context"},
        **HX,
        HTTP_HX_TARGET="recall-results",
    ).content.decode()

    assert '<li class="turn role-tool hit">' in context
    assert 'class="pin ' not in context
    # A history hit has its toggle, showing whether the turn is pinned.
    assert '<li class="turn role-user hit">' in history and toggles(history, 4) == ["Pin"]


def test_a_recall_hit_shows_whether_its_turn_is_pinned(alice_web, trip):
    services.set_pinned(session=trip, position=8)

    html = alice_web.get(
        "/sessions/trip/",
        {"q": "part 8", "match": "keyword", "kind": "history"},
        **HX,
        HTTP_HX_TARGET="recall-results",
    ).content.decode()

    assert toggles(html, 8) == ["Unpin"]


def test_a_bullets_cited_turns_have_their_toggles(alice_web, trip):
    bullet = Bullet.objects.filter(session=trip, superseded=False).order_by("first_position").first()
    cited = sorted(
        Item.objects.filter(session=trip, chunk__hash__in=bullet.hash_refs).values_list("position", flat=True)
    )
    services.set_pinned(session=trip, position=cited[0])

    html = alice_web.get(f"/sessions/trip/bullets/{bullet.pk}/", **HX).content.decode()

    assert cited and tier_of(trip, cited[0]) == "a"
    assert toggles(html, cited[0]) == ["Unpin"]
    for position in cited[1:]:
        assert toggles(html, position) == ["Pin"]


def test_summary_tab_lists_every_pinned_turn_whatever_its_tier_with_who_and_when(alice_web, trip):
    for position in (8, 1, 4):  # in X, archived, raw in Y
        services.set_pinned(session=trip, position=position)
    tiers = [tier_of(trip, p) for p in (1, 4, 8)]

    html = alice_web.get(SUMMARY).content.decode()
    shown = pinned_list(html)

    assert tiers == ["a", "y", "x"]
    assert '<h3 class="h3" id="pinned-h">Pinned turns <span class="count">3</span></h3>' in shown
    entries = re.findall(r'<li class="turn role-(\w+)">(.*?)</li>', shown, flags=re.S)
    assert [role for role, _ in entries] == ["assistant", "user", "user"]
    for (_, entry), position, where in zip(
        entries, (1, 4, 8), ("archived: a pinned bullet keeps it in view", "in Y raw", "in X"), strict=True
    ):
        when = START + timedelta(hours=position)
        assert (
            f'<span class="name">{"Otto" if position % 2 else "Ana"}</span><span class="pos">#{position}</span>'
            in entry
        )
        assert f'<time class="when" datetime="{when.isoformat()}"' in entry
        assert f'<span class="tag tier-tag">{where}</span>' in entry
        assert f"Turn {position}: about the trip to Lisbon, part {position}." in entry
        assert toggles(entry + "</form>", position) == ["Unpin"]
    # The pinned list comes above the bullets.
    assert html.index('id="pinned-turns"') < html.index('<ol class="bullets">')


def test_summary_tab_without_pins_says_how_to_pin(alice_web, trip):
    shown = pinned_list(alice_web.get(SUMMARY).content.decode())

    assert '<span class="count">0</span>' in shown
    assert "No pinned turns." in shown and "<li" not in shown


def test_summary_tab_marks_a_pinned_bullet_as_pinned(alice_web, trip):
    services.set_pinned(session=trip, position=1)  # archived: a pinned bullet carries Otto's words
    bullet = Bullet.objects.get(session=trip, superseded=False, pinned=True)

    html = alice_web.get(SUMMARY).content.decode()
    start = html.index(f'/sessions/trip/bullets/{bullet.pk}/"')
    item = html[html.rindex('<li class="bullet', 0, start) : start]

    assert item.startswith('<li class="bullet protected pinned">')
    assert '<span class="meta"><span class="tag pin-tag">pinned</span> generation ' in item
    assert "· a pinned turn, verbatim until unpinned</span>" in item
    assert "a person’s words" not in item


def test_summary_tab_reads_the_pinned_turns_in_the_same_queries_however_many(alice_web, alice):
    few = make_trip(alice, "few", archived=6, live=8)
    many = make_trip(alice, "many", archived=6, live=8)
    services.set_pinned(session=few, position=7)
    for position in (0, 3, 5, 6, 7, 9, 12, 13):
        services.set_pinned(session=many, position=position)
    assert {tier_of(many, p) for p in pinned(many)} == {"a", "y", "x"}

    one, _ = queries(alice_web, "/sessions/few/?tab=summary")
    eight, html = queries(alice_web, "/sessions/many/?tab=summary")

    assert eight == one
    assert pinned_list(html).count('<li class="turn') == 8
