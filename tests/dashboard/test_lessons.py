"""The Lessons screens: list and search live records, edit a fix (TTL kept), delete, expired gone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from lessons import services
from lessons.models import ErrorRecord

pytestmark = pytest.mark.django_db

DAY0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
HX = {"HTTP_HX_REQUEST": "true"}


def lesson(
    user, tool="bash", error="OSError: [Errno 28] No space left on device", action="rm -rf build/", **kw
):
    return ErrorRecord.objects.create(
        user=user,
        tool=tool,
        error=error,
        action=action,
        created_at=DAY0,
        updated_at=DAY0,
        expires_at=DAY0 + timedelta(days=90),
        **kw,
    )


def test_lessons_list_shows_tool_error_fix_expiry_and_hits(alice_web, alice):
    record = lesson(alice, hits=3)

    with time_machine.travel(DAY0 + timedelta(days=10), tick=False):
        html = alice_web.get("/lessons/").content.decode()

    assert f'<article id="lesson-{record.pk}" class="lesson"' in html
    assert "expires in 80 days · 3 hits" in html
    assert '<div class="pre fix">rm -rf build/</div>' in html
    assert "OSError: [Errno 28] No space left on device" in html


def test_lessons_search_by_tool_and_words(alice_web, alice):
    lesson(alice, tool="bash")
    lesson(alice, tool="git", error="fatal: not a git repository", action="git init")

    with time_machine.travel(DAY0, tick=False):
        html = alice_web.get(
            "/lessons/", {"tool": "git", "q": "repository", "match": "keyword"}
        ).content.decode()

    assert ("git init" in html, "rm -rf build/" in html) == (True, False)
    assert "1 live lesson, best match first" in html


def test_lessons_search_for_one_word_finds_the_fix_it_means(alice_web, alice):
    # "disk" shares no word with the error and is 0.27 from it by meaning: "No live lesson matches."
    for tool, error, action in [
        ("bash", "No space left on device", "docker system prune -af"),
        ("git", "CONFLICT (content): Merge conflict in src/app.py", "resolve the markers, git add, commit"),
    ]:
        services.record_error(user=alice, tool=tool, error=error, action=action, outcome="resolved")

    html = alice_web.get("/lessons/", {"q": "disk"}).content.decode()

    assert ("docker system prune -af" in html, "git add" in html) == (True, False)
    assert "1 live lesson, best match first" in html


def test_a_search_longer_than_the_form_takes_says_it_was_not_run(alice_web, alice):
    # It showed every lesson "most recently changed first", as if nothing had been typed.
    lesson(alice, tool="bash")
    lesson(alice, tool="git", error="fatal: not a git repository", action="git init")

    with time_machine.travel(DAY0, tick=False):
        page = alice_web.get("/lessons/", {"q": "x" * 2001}).content.decode()
        region = alice_web.get(
            "/lessons/", {"q": "x" * 2001, "tool": "git"}, HTTP_HX_TARGET="lesson-list", **HX
        )

    assert (
        '<p class="error" role="alert">Not searched: Search for at most 2000 characters (this is 2001).</p>'
        in page
    )
    assert "2 live lessons, most recently changed first" in page
    assert 'value="' + "x" * 2001 + '"' in page  # what was typed stays in the box
    html = region.content.decode()
    assert "Not searched: Search for at most 2000 characters (this is 2001)." in html
    assert "1 live lesson, most recently changed first" in html and "git init" in html


def test_a_search_of_only_invisible_characters_says_it_was_not_run(alice_web, alice):
    # It said "1 live lesson, best match first" though nothing had been searched.
    lesson(alice)

    with time_machine.travel(DAY0, tick=False):
        html = alice_web.get("/lessons/", {"q": "\u200b"}).content.decode()

    assert (
        '<p class="error" role="alert">Not searched: '
        "The search holds only invisible characters: type words to search for.</p>" in html
    )
    assert "1 live lesson, most recently changed first" in html
    assert "best match first" not in html


def test_lessons_empty_states(alice_web, alice):
    empty = alice_web.get("/lessons/").content.decode()
    lesson(alice)
    with time_machine.travel(DAY0, tick=False):
        none = alice_web.get("/lessons/", {"q": "kubernetes", "match": "keyword"}).content.decode()

    assert "No lessons yet." in empty
    assert "No live lesson matches." in none


def test_editing_a_fix_keeps_the_ttl(alice_web, alice):
    record = lesson(alice)

    with time_machine.travel(DAY0 + timedelta(days=30), tick=False):
        form = alice_web.get(f"/lessons/{record.pk}/edit/", **HX).content.decode()
        response = alice_web.post(f"/lessons/{record.pk}/edit/", {"action": "docker system prune -f"}, **HX)

    record.refresh_from_db()
    assert '<textarea id="fix-' in form and ">rm -rf build/</textarea>" in form
    assert (record.action, record.expires_at) == ("docker system prune -f", DAY0 + timedelta(days=90))
    html = response.content.decode()
    assert '<div class="pre fix">docker system prune -f</div>' in html
    assert "Saved. The expiry date is unchanged." in html and "expires in 60 days" in html


def test_editing_a_fix_to_nothing_is_refused(alice_web, alice):
    record = lesson(alice)

    with time_machine.travel(DAY0, tick=False):
        response = alice_web.post(f"/lessons/{record.pk}/edit/", {"action": "   "}, **HX)

    record.refresh_from_db()
    assert response.status_code == 422 and "This field is required." in response.content.decode()
    assert record.action == "rm -rf build/"


def test_editing_without_javascript_redirects_to_the_list(alice_web, alice):
    record = lesson(alice)

    with time_machine.travel(DAY0, tick=False):
        response = alice_web.post(f"/lessons/{record.pk}/edit/", {"action": "make clean"}, follow=True)

    assert response.redirect_chain == [("/lessons/", 302)]
    assert "Saved the fix for “bash”." in response.content.decode()


def test_the_edit_page_of_its_own_saves_and_cancels_to_the_lessons_list(alice_web, alice):
    # Its Save and Cancel swapped the lesson's row in under "Edit the fix", at /lessons/<id>/edit/.
    record = lesson(alice)

    with time_machine.travel(DAY0, tick=False):
        page = alice_web.get(f"/lessons/{record.pk}/edit/").content.decode()
        inline = alice_web.get(f"/lessons/{record.pk}/edit/", **HX).content.decode()
        refused = alice_web.post(f"/lessons/{record.pk}/edit/", {"action": " "}).content.decode()

    for html in (page, refused):
        assert "<h1>Edit the fix</h1>" in html
        assert f'<form method="post" action="/lessons/{record.pk}/edit/" class="stack">' in html
        assert '<a class="button" href="/lessons/">Cancel</a>' in html
        assert "hx-post" not in html.split("<h1>")[1] and "hx-get" not in html.split("<h1>")[1]
    # In the list, the row is edited in place.
    assert f'hx-post="/lessons/{record.pk}/edit/" hx-target="#lesson-{record.pk}"' in inline
    assert f'hx-get="/lessons/{record.pk}/" hx-target="#lesson-{record.pk}"' in inline


def test_an_expired_lesson_is_gone_from_the_list_and_cannot_be_edited(alice_web, alice):
    record = lesson(alice)

    with time_machine.travel(DAY0 + timedelta(days=93), tick=False):
        html = alice_web.get("/lessons/").content.decode()
        edit = alice_web.post(f"/lessons/{record.pk}/edit/", {"action": "too late"}, **HX)

    assert "No lessons yet." in html
    assert "Expired: 1 lesson gone" in html and "expired 3 days ago" in html
    assert edit.status_code == 410
    assert "this lesson expired 3 days ago and is gone" in edit.content.decode()
    record.refresh_from_db()
    assert record.action == "rm -rf build/"


def test_deleting_a_lesson(alice_web, alice):
    record = lesson(alice)

    with time_machine.travel(DAY0, tick=False):
        response = alice_web.post(f"/lessons/{record.pk}/delete/", **HX)

    assert "Deleted the lesson for <code>bash</code>." in response.content.decode()
    assert ErrorRecord.objects.count() == 0


def test_deleting_a_lesson_counts_the_list_it_was_deleted_from_again(alice_web, alice):
    # The line above the list said "3 live lessons" after one of them was deleted.
    lesson(alice, tool="bash")
    lesson(alice, tool="git", error="fatal: not a git repository", action="git init")
    doomed = lesson(
        alice,
        tool="git",
        error="fatal: refusing to merge unrelated histories",
        action="git pull --allow-unrelated-histories",
    )
    make = lesson(alice, tool="make", error="make: *** No rule to make target 'all'", action="make build")
    with time_machine.travel(DAY0, tick=False):
        listed = alice_web.get("/lessons/").content.decode()
        everything = alice_web.post(
            f"/lessons/{make.pk}/delete/",
            HTTP_HX_CURRENT_URL="http://testserver/lessons/",
            **HX,
        ).content.decode()
        searched = alice_web.post(
            f"/lessons/{doomed.pk}/delete/",
            HTTP_HX_CURRENT_URL="http://testserver/lessons/?q=&tool=git&match=keyword",
            **HX,
        ).content.decode()

    assert (
        '<p class="result-line" id="lesson-count">4 live lessons, most recently changed first</p>' in listed
    )
    assert "Deleted the lesson for <code>make</code>." in everything
    assert (
        '<p class="result-line" id="lesson-count" hx-swap-oob="true">3 live lessons, most recently changed first</p>'
        in everything
    )
    assert (
        # A tool alone filters and ranks nothing: the list stays most recently changed first.
        '<p class="result-line" id="lesson-count" hx-swap-oob="true">1 live lesson, most recently changed first</p>'
        in searched
    )


def test_another_users_lesson_is_404_and_not_listed(bob_web, alice):
    record = lesson(alice)

    with time_machine.travel(DAY0, tick=False):
        html = bob_web.get("/lessons/").content.decode()
        edit = bob_web.get(f"/lessons/{record.pk}/edit/")

    assert "No lessons yet." in html and edit.status_code == 404
