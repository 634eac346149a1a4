"""Progressive enhancement: every htmx link and form also works as plain HTML."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from lessons.models import ErrorRecord
from memory.models import Job

pytestmark = pytest.mark.django_db


@pytest.fixture
def screens(alice_web, alice, compacted) -> dict[str, str]:
    ErrorRecord.objects.create(
        user=alice,
        tool="bash",
        error="disk full",
        action="rm -rf build/",
        expires_at=timezone.now() + timedelta(days=9),
    )
    Job.objects.create(id="jx", user=alice, session=compacted, kind="compact", status="running")
    urls = {
        "home": "/",
        "summary": "/sessions/deploys/",
        "compact": "/sessions/deploys/?tab=compact",
        "reset": "/sessions/deploys/?tab=reset&mode=summary",
        "recall": "/sessions/deploys/?q=deploy&match=keyword",
        "lessons": "/lessons/",
        "lesson-edit": f"/lessons/{ErrorRecord.objects.get().pk}/edit/",
        "account": "/account/",
    }
    return {name: alice_web.get(url).content.decode() for name, url in urls.items()}


def test_every_hx_get_link_also_has_an_href(screens):
    for name, html in screens.items():
        for link in re.findall(r"<a\b[^>]*\bhx-get=[^>]*>", html):
            assert (name, link, 'href="' in link) == (name, link, True)


def test_every_htmx_form_also_posts_without_javascript(screens):
    for name, html in screens.items():
        for form in re.findall(r"<form\b[^>]*\bhx-post=[^>]*>.*?</form>", html, flags=re.S):
            tag = form.split(">", 1)[0]
            hx = re.search(r'hx-post="([^"]+)"', tag).group(1)
            assert (name, 'method="post"' in tag, f'action="{hx}"' in tag) == (name, True, True)
            assert (name, 'name="csrfmiddlewaretoken"' in form) == (name, True)


def test_every_text_input_has_a_visible_label(screens):
    for name, html in screens.items():
        for field in re.findall(r"<(?:input|textarea|select)\b[^>]*>", html):
            if re.search(r'type="(hidden|radio|submit)"', field):
                continue
            found = re.search(r'\bid="([^"]+)"', field)
            assert found, (name, field)
            assert (name, f'<label for="{found.group(1)}"' in html) == (name, True)
