"""Issue 25, item 6: every turn the dashboard shows says who said it and when (in the offset it was
sent with), and each Summary bullet gives the speakers and days of the turns it cites."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from memory import services
from memory.models import Bullet, Item
from memory.services import NewItem

pytestmark = pytest.mark.django_db

LISBON = timezone(timedelta(hours=1))
NEW_YORK = timezone(timedelta(hours=-4))
TURNS = [
    NewItem(
        role="user",
        name="Ana",
        text="I moved to Lisbon last week.",
        occurred_at=datetime(2023, 5, 8, 13, 56, tzinfo=LISBON),
    ),
    NewItem(
        role="assistant",
        name="Otto",
        text="Noted: you live in Lisbon now.",
        occurred_at=datetime(2023, 5, 8, 13, 57, tzinfo=LISBON),
    ),
    NewItem(
        role="user",
        name="Ben",
        text="Ana, your flight to Lisbon lands at 7:40 on Friday.",
        occurred_at=datetime(2023, 5, 12, 9, 0, tzinfo=NEW_YORK),
    ),
    NewItem(
        role="assistant",
        text="I will remind you both on Friday morning.",
        occurred_at=datetime(2023, 5, 12, 9, 1, tzinfo=NEW_YORK),
    ),
]
# The markup each turn's header carries, in position order.
SAID = [
    (
        '<span class="role">user</span><span class="name">Ana</span><span class="pos">#0</span>',
        '<time class="when" datetime="2023-05-08T13:56:00+01:00" title="8 May 2023, 13:56 (UTC+01:00)">'
        "8 May 2023, 13:56</time>",
    ),
    (
        '<span class="role">assistant</span><span class="name">Otto</span><span class="pos">#1</span>',
        '<time class="when" datetime="2023-05-08T13:57:00+01:00" title="8 May 2023, 13:57 (UTC+01:00)">'
        "8 May 2023, 13:57</time>",
    ),
    (
        '<span class="role">user</span><span class="name">Ben</span><span class="pos">#2</span>',
        '<time class="when" datetime="2023-05-12T09:00:00-04:00" title="12 May 2023, 09:00 (UTC-04:00)">'
        "12 May 2023, 09:00</time>",
    ),
    (
        '<span class="role">assistant</span><span class="pos">#3</span>',
        '<time class="when" datetime="2023-05-12T09:01:00-04:00" title="12 May 2023, 09:01 (UTC-04:00)">'
        "12 May 2023, 09:01</time>",
    ),
]


def make_trip(user, sid: str = "trip", turns: list[NewItem] = TURNS):
    """A session whose first turns overflowed a small X into Y (no compaction: Y is large)."""
    session = services.create_session(user=user, sid=sid, title="Trip", x_budget=30, y_budget=5000)
    for turn in turns:
        services.append_items(session=session, items=[turn])
    return session


def cite(session, positions: list[int], *, text: str, role: str = "", extra: list[str] = ()) -> Bullet:
    """A live bullet citing the turns at `positions` (and any `extra` hashes)."""
    rows = Item.objects.filter(session=session, position__in=positions).select_related("chunk")
    return Bullet.objects.create(
        session=session,
        kind="history",
        generation=1,
        text=text,
        hash_refs=[r.chunk.hash for r in rows.order_by("position")] + list(extra),
        tokens=12,
        first_position=min(positions, default=0),
        role=role,
    )


@pytest.fixture
def trip(alice):
    return make_trip(alice)


def test_tier_lists_show_who_said_each_turn_and_when_in_its_own_offset(alice_web, trip):
    tiers = set(Item.objects.filter(session=trip).values_list("tier", flat=True))

    html = alice_web.get("/sessions/trip/?tab=summary").content.decode()

    assert tiers == {"x", "y"}  # both lists are drawn
    for who, when in SAID:
        assert (who in html, when in html) == (True, True), who


def test_bullet_page_shows_who_said_each_cited_turn_and_when(alice_web, trip):
    bullet = cite(trip, [0, 2, 3], text="Ana moved to Lisbon; Ben has her flight time.")

    partial = alice_web.get(f"/sessions/trip/bullets/{bullet.pk}/", HTTP_HX_REQUEST="true").content.decode()

    for who, when in (SAID[0], SAID[2], SAID[3]):
        assert (who in partial, when in partial) == (True, True), who
    assert '<span class="name">Otto</span>' not in partial


def test_recall_hits_show_who_said_them_and_when(alice_web, trip):
    html = alice_web.get(
        "/sessions/trip/",
        {"q": "7:40", "match": "keyword", "kind": "history"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="recall-results",
    ).content.decode()

    assert '<li class="turn role-user hit">' in html
    assert SAID[2][0] in html and SAID[2][1] in html


def test_summary_tab_gives_each_bullet_its_speakers_and_days(alice_web, trip):
    one_day = cite(trip, [0, 1], text="Ana moved to Lisbon.")
    two_days = cite(trip, [3, 2, 0], text="Ben has Ana's flight time.")
    gone = cite(trip, [], text="A bullet whose turns were reset away.", extra=["0" * 64])

    html = alice_web.get("/sessions/trip/?tab=summary").content.decode()

    def said(bullet: Bullet) -> str:
        start = html.index(f'<span class="bullet-text">{escape(bullet.text)}</span>')
        return html[start : html.index("</summary>", start)]

    assert (
        '<span class="said"><span class="names">Ana, Otto</span> · <time datetime="2023-05-08">8 May 2023</time></span>'
        in said(one_day)
    )
    # Speakers in the order they first spoke; days each in the speaker's offset.
    assert (
        '<span class="said"><span class="names">Ana, Ben</span> · <time datetime="2023-05-08">8</time>–'
        '<time datetime="2023-05-12">12 May 2023</time></span>'
    ) in said(two_days)
    assert 'class="said"' not in said(gone)


def test_summary_tab_days_across_months_and_years(alice_web, alice):
    session = make_trip(
        alice,
        sid="years",
        turns=[
            NewItem(
                role="user", text="Happy new year!", occurred_at=datetime(2023, 12, 30, 23, tzinfo=LISBON)
            ),
            NewItem(role="user", text="Back at work.", occurred_at=datetime(2024, 1, 2, 8, tzinfo=LISBON)),
            NewItem(role="user", text="Spring already.", occurred_at=datetime(2024, 3, 1, 8, tzinfo=LISBON)),
        ],
    )
    cite(session, [0, 1], text="Over new year.")
    cite(session, [1, 2], text="Into spring.")

    html = alice_web.get("/sessions/years/?tab=summary").content.decode()

    assert (
        '<span class="said"><time datetime="2023-12-30">30 Dec 2023</time> – '
        '<time datetime="2024-01-02">2 Jan 2024</time></span>'
    ) in html
    assert (
        '<span class="said"><time datetime="2024-01-02">2 Jan</time> – '
        '<time datetime="2024-03-01">1 Mar 2024</time></span>'
    ) in html


def test_summary_tab_keeps_labelling_quote_bullets_as_the_persons_earlier_words(alice_web, trip):
    cite(trip, [0], text="Ana: I moved to Lisbon", role="user")

    html = alice_web.get("/sessions/trip/?tab=summary").content.decode()

    assert '<li class="bullet quote">' in html
    assert (
        "· the person’s earlier words: whole sentences of each, the whole turns kept verbatim in memory"
        in html
    )
    assert '<span class="names">Ana</span> · <time datetime="2023-05-08">8 May 2023</time>' in html


def conversation_with_bullets(user, sid: str, n: int):
    """n named, dated turns and n bullets each citing two of them."""
    start = datetime(2023, 5, 1, 9, tzinfo=LISBON)
    turns = [
        NewItem(
            role="user" if i % 2 == 0 else "assistant",
            name=f"Speaker {i % 3}",
            text=f"Turn {i} about the trip to Lisbon.",
            occurred_at=start + timedelta(hours=7 * i),
        )
        for i in range(2 * n)
    ]
    session = make_trip(user, sid=sid, turns=turns)
    for i in range(n):
        cite(session, [2 * i, 2 * i + 1], text=f"Bullet {i}.")
    return session


def queries(client, url: str) -> tuple[int, str]:
    client.get(url)  # the per-process caches warmed, as on any page after the first
    with CaptureQueriesContext(connection) as captured:
        html = client.get(url).content.decode()
    return len(captured), html


def test_summary_tab_reads_who_and_when_in_the_same_queries_however_many_bullets(alice_web, alice):
    conversation_with_bullets(alice, "small", 2)
    conversation_with_bullets(alice, "large", 12)

    small, _ = queries(alice_web, "/sessions/small/?tab=summary")
    large, html = queries(alice_web, "/sessions/large/?tab=summary")

    assert large == small
    assert html.count('<span class="said">') == 12
    assert html.count('<time class="when"') == 24


def test_bullet_page_reads_its_turns_in_the_same_queries_however_many_it_cites(alice_web, alice):
    session = conversation_with_bullets(alice, "cites", 1)
    few = cite(session, [0], text="One turn.")
    many = cite(session, [0, 1], text="Both turns.")

    one, _ = queries(alice_web, f"/sessions/cites/bullets/{few.pk}/")
    two, html = queries(alice_web, f"/sessions/cites/bullets/{many.pk}/")

    assert two == one
    assert html.count('<time class="when"') == 2 and html.count('<span class="name">') == 2


def test_a_later_turn_repeating_a_cited_text_is_not_taken_for_a_bullets_source(alice):
    from memory.reads import summary_bullets

    session = services.create_session(user=alice, sid="repeat", x_budget=10_000, y_budget=10_000)
    services.append_items(session=session, items=TURNS[:2])
    services.compact_session(session=session, force=True, include_x=True)
    # Bob says Otto's words again, months later; the turn stays raw in X.
    services.append_items(
        session=session,
        items=[
            NewItem(
                role="user", name="Bob", text=TURNS[1].text, occurred_at=datetime(2023, 9, 1, tzinfo=LISBON)
            )
        ],
    )

    sources = {bullet.text: said for bullet, said in summary_bullets(session)}

    # Ana's turn is carried verbatim; Otto's is summarised, and only Otto said it then.
    assert sources[TURNS[0].text].names == ("Ana",)
    otto = sources[f"8 May 2023 · Otto: {TURNS[1].text}"]
    assert (otto.names, otto.first, otto.last) == (("Otto",), TURNS[1].occurred_at, TURNS[1].occurred_at)
