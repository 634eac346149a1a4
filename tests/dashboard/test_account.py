"""Logging in (password, one-time link), API tokens, password."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from accounts.models import ApiToken

pytestmark = pytest.mark.django_db


def login_link(username: str) -> str:
    out = StringIO()
    call_command("login_link", username, "--quiet", stdout=out)
    return out.getvalue().strip().removeprefix("http://127.0.0.1:8000")


def test_login_with_a_password_opens_the_sessions_list(client, alice):
    response = client.post("/login/", {"username": "alice", "password": "alice-password-1"}, follow=True)

    assert response.redirect_chain == [("/", 302)]
    assert "<h1>Sessions</h1>" in response.content.decode()


def test_login_with_a_wrong_password_says_so(client, alice):
    response = client.post("/login/", {"username": "alice", "password": "nope"})

    assert "Username and password did not match." in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_login_link_creates_the_user_and_logs_in_once(client):
    path = login_link("carol")

    shown = client.get(path).content.decode()
    response = client.post(path, follow=True)
    client.logout()
    again = client.post(path)

    assert "This one-time link logs you in as <strong>carol</strong>." in shown
    assert response.redirect_chain == [("/account/", 302)]
    assert "Welcome! Set a password below to log in again without a link." in response.content.decode()
    assert (again.status_code, "This login link no longer works" in again.content.decode()) == (410, True)
    assert get_user_model().objects.get(username="carol").has_usable_password() is False


def test_login_link_get_does_not_log_in(client, alice):
    client.get(login_link("alice"))

    assert "_auth_user_id" not in client.session


def test_login_link_with_a_forged_token_is_refused(client, alice):
    path = login_link("alice")
    forged = path.rstrip("/").rsplit("/", 1)[0] + "/abc-0123456789abcdef/"

    response = client.post(forged)

    assert response.status_code == 410 and "_auth_user_id" not in client.session


def test_make_run_prints_a_login_link():
    makefile = open("Makefile").read()

    assert "manage.py login_link $(LOGIN_USER) --base-url http://$(HOST):$(PORT)" in makefile


def test_issuing_a_token_shows_it_once_and_stores_only_its_digest(alice_web, alice):
    response = alice_web.post("/account/", {"name": "ci runner"}, follow=True)

    html = response.content.decode()
    row = ApiToken.objects.get(user=alice, name="ci runner")
    plain = html.split('id="new-token" class="token-value" value="')[1].split('"')[0]
    assert response.redirect_chain == [("/account/", 302)]
    assert (plain.startswith("otto_"), ApiToken.digest_of(plain) == row.digest) == (True, True)
    assert "Copy it now: it will not be shown again." in html
    assert "no-store" in response["Cache-Control"]
    assert plain not in alice_web.get("/account/").content.decode()
    assert "ottoweb_issued_token" not in alice_web.session


def test_reloading_the_page_after_issuing_a_token_issues_no_other(alice_web, alice):
    # The page was the POST's answer: a reload sent the form again and issued a second token.
    issued = alice_web.post("/account/", {"name": "ci runner"})
    shown = alice_web.get(issued["Location"]).content.decode()
    reloaded = alice_web.get(issued["Location"]).content.decode()

    assert issued.status_code == 302
    assert ApiToken.objects.filter(user=alice).count() == 1
    assert 'id="new-token"' in shown and 'id="new-token"' not in reloaded
    assert "ci runner" in reloaded  # listed by its name and prefix only


def test_issued_token_works_against_the_api_until_revoked(alice_web, alice, client):
    html = alice_web.post("/account/", {"name": "agent"}, follow=True).content.decode()
    plain = html.split('id="new-token" class="token-value" value="')[1].split('"')[0]
    row = ApiToken.objects.get(name="agent")

    before = client.get("/api/v1/sessions", HTTP_AUTHORIZATION=f"Bearer {plain}")
    revoked = alice_web.post(f"/account/tokens/{row.pk}/revoke/", follow=True)
    after = client.get("/api/v1/sessions", HTTP_AUTHORIZATION=f"Bearer {plain}")

    assert before.json() == {"items": [], "count": 0}
    assert "Revoked token “agent”: it no longer works." in revoked.content.decode()
    assert "revoked " in revoked.content.decode()
    assert after.status_code == 401


def test_token_without_a_name_is_refused(alice_web):
    response = alice_web.post("/account/", {"name": "  "})

    assert response.status_code == 422
    assert "This field is required." in response.content.decode()
    assert ApiToken.objects.count() == 0


def test_account_page_lists_tokens_or_says_there_are_none(alice_web):
    html = alice_web.get("/account/").content.decode()

    assert "No tokens yet." in html


def test_a_link_user_sets_a_password_and_can_log_in_with_it(client):
    client.post(login_link("dave"))

    response = client.post(
        "/account/password/",
        {"new_password1": "correct-horse-9", "new_password2": "correct-horse-9"},
        follow=True,
    )
    client.logout()

    assert "Password saved. You can log in with it from now on." in response.content.decode()
    assert client.login(username="dave", password="correct-horse-9") is True


@pytest.mark.parametrize(
    "weak, reason",
    [
        ("password", "This password is too common."),
        ("38291746", "This password is entirely numeric."),
        ("aaaaaaaaaaaa", "This password uses fewer than 5 different characters."),
        ("abababababab", "This password uses fewer than 5 different characters."),
    ],
)
def test_a_common_or_numeric_password_is_refused(alice, weak, reason):
    client = Client()
    client.force_login(alice)

    response = client.post("/account/password/", {"new_password1": weak, "new_password2": weak})

    assert response.status_code == 422
    assert reason in response.content.decode()
    alice.refresh_from_db()
    assert alice.check_password("alice-password-1") is True


def test_account_page_lists_and_clears_only_the_users_learned_limits(client, alice, bob):
    from memory.models import LearnedWindow

    mine = LearnedWindow.objects.create(user=alice, model="openai:gpt-4o", window=8192)
    theirs = LearnedWindow.objects.create(user=bob, model="acme:secret-model", window=4096)
    client.force_login(alice)

    page = client.get("/account/").content.decode()
    refused = client.post(f"/account/learned/{theirs.pk}/clear/")
    cleared = client.post(f"/account/learned/{mine.pk}/clear/", follow=True)

    assert "<code>openai:gpt-4o</code>" in page and "8192" in page
    assert "acme:secret-model" not in page
    assert refused.status_code == 404
    assert "Cleared the learned limit of openai:gpt-4o" in cleared.content.decode()
    assert list(LearnedWindow.objects.values_list("model", flat=True)) == ["acme:secret-model"]
