"""Memory text is data: HTML and script in it are shown as text on every screen."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from lessons.models import ErrorRecord
from memory import services
from memory.models import Bullet

from .conftest import SCRIPT, say

pytestmark = pytest.mark.django_db

ESCAPED = "&lt;script&gt;window.__xss = 1; alert(&#x27;xss&#x27;)&lt;/script&gt;"
IMG = '<img src=x onerror="window.__xss=2">'
IMG_ESCAPED = "&lt;img src=x onerror=&quot;window.__xss=2&quot;&gt;"


@pytest.fixture
def hostile(alice):
    session = services.create_session(
        user=alice, sid="evil", title=SCRIPT, workspace=IMG, x_budget=40, y_budget=120
    )
    say(session, ("user", f"{SCRIPT} remember the quota code"))
    say(session, *[("assistant", f"{IMG} reply {i} about the quota code") for i in range(14)])
    say(session, ("tool", f"{SCRIPT} tool output"), kind="context")
    ErrorRecord.objects.create(
        user=alice,
        tool=SCRIPT,
        error=IMG,
        action=SCRIPT,
        context=SCRIPT,
        expires_at=timezone.now() + timedelta(days=90),
    )
    return session


def pages(alice_web, session) -> dict[str, str]:
    bullet = Bullet.objects.filter(session=session, superseded=False).first()
    lesson = ErrorRecord.objects.get()
    urls = {
        "list": "/",
        "summary": "/sessions/evil/",
        "compact": "/sessions/evil/?tab=compact",
        "reset": "/sessions/evil/?tab=reset&mode=all",
        "recall": "/sessions/evil/?q=quota+code&match=keyword",
        "recall-context": "/sessions/evil/?q=tool+output&match=keyword&kind=context",
        "bullet": f"/sessions/evil/bullets/{bullet.pk}/",
        "delete": "/sessions/evil/delete/",
        "lessons": "/lessons/",
        "lesson-edit": f"/lessons/{lesson.pk}/edit/",
    }
    return {name: alice_web.get(url).content.decode() for name, url in urls.items()}


def test_script_and_html_in_memory_text_are_escaped_on_every_screen(alice_web, hostile):
    for name, html in pages(alice_web, hostile).items():
        assert (name, SCRIPT in html, IMG in html) == (name, False, False)
        assert (name, ESCAPED in html or IMG_ESCAPED in html) == (name, True)


def test_recall_highlighting_escapes_around_the_marks(alice_web, hostile):
    html = alice_web.get("/sessions/evil/", {"q": "quota", "match": "keyword"}).content.decode()

    assert f"{ESCAPED} remember the <mark>quota</mark> code" in html
    assert SCRIPT not in html


def test_a_query_with_html_is_escaped_and_highlights_nothing_unsafe(alice_web, hostile):
    html = alice_web.get("/sessions/evil/", {"q": "<b>quota</b>", "match": "keyword"}).content.decode()

    assert "<b>quota</b>" not in html
    assert "&lt;b&gt;quota&lt;/b&gt;" in html
