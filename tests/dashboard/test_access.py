"""Every dashboard page needs a login, another user's things answer 404, and no POST works without
its CSRF token."""

from __future__ import annotations

import re
from io import StringIO
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from accounts.models import ApiToken
from accounts.services import issue_token
from lessons.models import ErrorRecord
from memory import services
from memory.models import Bullet, Item, Job, Session

from .conftest import say

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(alice, bob):
    """Alice's session with a bullet, a job, a token and a lesson."""
    session = services.create_session(
        user=alice, sid="plans", title="Alice's plans", x_budget=30, y_budget=60
    )
    say(session, *[("assistant", f"Step {i} of the migration plan is done.") for i in range(12)])
    job = Job.objects.create(id="job1alice", user=alice, session=session, kind="reembed")
    token, _ = issue_token(user=alice, name="laptop")
    lesson = ErrorRecord.objects.create(user=alice, tool="bash", error="disk full", action="rm -rf build/")
    bullet = Bullet.objects.filter(session=session, superseded=False).first()
    return {"session": session, "job": job, "token": token, "lesson": lesson, "bullet": bullet}


def get_urls(world) -> list[str]:
    b = world["bullet"].pk
    return [
        "/",
        "/?q=plans",
        "/sessions/plans/",
        "/sessions/plans/?tab=compact",
        "/sessions/plans/?tab=reset&mode=all",
        "/sessions/plans/?q=migration&match=keyword",
        f"/sessions/plans/bullets/{b}/",
        "/sessions/plans/export/",
        "/sessions/plans/delete/",
        "/jobs/job1alice/",
        "/account/",
        "/lessons/",
        f"/lessons/{world['lesson'].pk}/edit/",
    ]


def post_urls(world) -> list[tuple[str, dict]]:
    return [
        ("/import/", {}),
        ("/sessions/plans/compact/", {}),
        ("/sessions/plans/compact/", {"background": "1"}),
        ("/sessions/plans/reset/", {"mode": "all"}),
        ("/sessions/plans/reembed/", {}),
        ("/sessions/plans/turns/11/pin/", {"pinned": "1"}),
        ("/sessions/plans/delete/", {}),
        ("/account/", {"name": "new"}),
        (f"/account/tokens/{world['token'].pk}/revoke/", {}),
        ("/account/password/", {"new_password1": "a-long-password-1", "new_password2": "a-long-password-1"}),
        (f"/lessons/{world['lesson'].pk}/edit/", {"action": "changed"}),
        (f"/lessons/{world['lesson'].pk}/delete/", {}),
    ]


def state(world) -> dict:
    """What any of the POSTs above would change."""
    lesson = ErrorRecord.objects.filter(pk=world["lesson"].pk).values_list("action", flat=True).first()
    return {
        "sessions": list(Session.objects.values_list("sid", "turns")),
        "bullets": Bullet.objects.count(),
        "pins": Item.objects.filter(pinned=True).count(),
        "jobs": Job.objects.count(),
        "tokens": list(ApiToken.objects.values_list("name", "revoked_at")),
        "lesson": lesson,
        "passwords": sorted(get_user_model().objects.values_list("password", flat=True)),
    }


def test_every_page_redirects_to_login_without_a_login(client, world):
    for url in get_urls(world):
        response = client.get(url)
        assert (url, response.status_code, response["Location"]) == (url, 302, f"/login/?next={_quoted(url)}")


def test_every_post_redirects_to_login_without_a_login(client, world):
    before = state(world)
    for url, data in post_urls(world):
        response = client.post(url, data)
        assert (url, response.status_code, response["Location"]) == (url, 302, f"/login/?next={_quoted(url)}")
    assert state(world) == before


def _quoted(url: str) -> str:
    return quote(url, safe="/")


def test_another_users_session_job_token_and_lesson_answer_404(bob_web, world):
    before = state(world)
    for url in get_urls(world)[2:10] + [f"/lessons/{world['lesson'].pk}/edit/"]:
        response = bob_web.get(url)
        assert (url, response.status_code) == (url, 404)
        assert b"Alice" not in response.content
    for url, data in post_urls(world)[1:]:
        if url in ("/account/", "/account/password/"):
            continue  # Bob's own account: not Alice's
        response = bob_web.post(url, data)
        assert (url, response.status_code) == (url, 404)
    assert state(world) == before


def test_another_users_session_is_not_listed_or_found_by_search(bob_web, world):
    html = bob_web.get("/?q=plans").content.decode()

    assert "No session matches “plans”." in html
    assert "Alice&#x27;s plans" not in html


def test_every_dashboard_post_without_a_csrf_token_is_refused(alice, world):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    before = state(world)

    for url, data in post_urls(world):
        response = strict.post(url, data)
        assert (url, response.status_code, b"CSRF verification failed" in response.content) == (
            url,
            403,
            True,
        )
        # The same request through htmx (no X-CSRFToken header) is refused too.
        response = strict.post(url, data, HTTP_HX_REQUEST="true")
        assert (url, response.status_code) == (url, 403)

    assert state(world) == before


def test_login_link_post_without_a_csrf_token_is_refused(alice):
    out = StringIO()
    call_command("login_link", "alice", "--quiet", stdout=out)
    path = out.getvalue().strip().removeprefix("http://127.0.0.1:8000")
    strict = Client(enforce_csrf_checks=True)

    response = strict.post(path)

    assert response.status_code == 403
    assert "_auth_user_id" not in strict.session


def test_the_token_in_hx_headers_lets_an_htmx_post_through(alice, world):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    html = strict.get("/sessions/plans/?tab=compact").content.decode()
    token = re.search(r"<body hx-headers='\{\"X-CSRFToken\": \"([^\"]+)\"\}'>", html).group(1)

    response = strict.post(
        "/sessions/plans/compact/",
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="compact-preview",
        HTTP_X_CSRFTOKEN=token,
    )

    assert response.status_code == 200
    assert "Compacted: " in response.content.decode()


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("DELETE", "/", "GET, HEAD"),
        ("PUT", "/lessons/", "GET, HEAD"),
        ("DELETE", "/account/", "GET, HEAD, POST"),
        ("PUT", "/sessions/plans/compact/", "POST"),
        ("HEAD", "/sessions/plans/compact/", "POST"),
    ],
)
def test_a_405_on_a_page_that_takes_get_lists_head_too(alice_web, world, method, path, allowed):
    response = getattr(alice_web, method.lower())(path)

    assert (response.status_code, response["Allow"]) == (405, allowed)


def test_head_on_a_page_answers_as_get_does_with_no_body(alice_web, world):
    got = alice_web.get("/sessions/plans/")

    head = alice_web.head("/sessions/plans/")

    assert (head.status_code, head.content) == (200, b"")
    assert head["Content-Type"] == got["Content-Type"]
    assert int(head["Content-Length"]) == len(got.content)


def test_a_missing_page_is_the_dashboards_own_with_its_navigation(alice_web, world):
    # It was Django's bare "Not Found" page: no navigation, no way back.
    response = alice_web.get("/sessions/deleted-long-ago/")

    assert response.status_code == 404
    html = response.content.decode()
    assert "<title>Not found · ottoweb</title>" in html
    assert '<nav aria-label="Main">' in html
    assert "Nothing is at <code>/sessions/deleted-long-ago/</code> for alice" in html
    assert '<a href="/">Back to the sessions</a>' in html


@pytest.mark.parametrize("path, goes_to", [("/import/", "/"), ("/account/password/", "/account/")])
def test_the_address_a_refused_form_stays_at_leads_back_to_its_page(alice_web, world, path, goes_to):
    # A refused import (or password) is shown at the address it was posted to; reloading it later
    # or opening it again was a blank 405 page.
    response = alice_web.get(path)

    assert (response.status_code, response["Location"]) == (302, goes_to)
