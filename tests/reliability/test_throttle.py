"""Failed sign-ins are throttled per account and per client address (ottoweb/throttle.py)."""

from __future__ import annotations

from datetime import timedelta

import time_machine
from django.test import Client
from django.utils import timezone

from memory.models import AuditEntry, AuthFailure

WRONG = {"username": "alice", "password": "not-her-password"}
RIGHT = {"username": "alice", "password": "alice-password-1"}
LOCKED = "Too many failed log-ins. Try again in 60 seconds."


def test_20_wrong_passwords_lock_the_account_and_the_right_one_works_after_the_cool_down(alice):
    client = Client()
    with time_machine.travel(timezone.now(), tick=False) as clock:
        answers = [client.post("/login/", WRONG) for _ in range(20)]
        during = client.post("/login/", RIGHT)
        counted = AuthFailure.objects.get(key="login-account:alice").failures
        clock.shift(timedelta(seconds=61))
        after = client.post("/login/", RIGHT, follow=True)

    assert [a.status_code for a in answers] == [200] * 4 + [429] * 16
    assert "Username and password did not match." in answers[3].content.decode()
    assert (answers[4]["Retry-After"], LOCKED in answers[4].content.decode()) == ("60", True)
    # Locked: the right password is refused too, and refused attempts are not counted.
    assert (during.status_code, during["Retry-After"]) == (429, "60")
    assert counted == 5
    assert (after.status_code, after.redirect_chain, after.context["user"].username) == (
        200,
        [("/", 302)],
        "alice",
    )
    # The account's failures are forgotten; the address's are not (see the next test).
    assert list(AuthFailure.objects.values_list("key", "failures")) == [("login-address:127.0.0.1", 5)]


def test_each_failure_after_a_lock_out_doubles_the_next_one(alice, settings):
    settings.OTTO_AUTH_FAILURES = 1  # each failed login costs a password hash: keep them few
    client = Client()
    with time_machine.travel(timezone.now(), tick=False) as clock:
        client.post("/login/", WRONG)
        waits = []
        for _ in range(3):
            clock.shift(timedelta(seconds=int(waits[-1]) + 1 if waits else 61))
            waits.append(client.post("/login/", WRONG)["Retry-After"])

    assert waits == ["120", "240", "480"]


def test_wrong_passwords_for_many_accounts_from_one_address_lock_the_address(alice, settings):
    # Each failed login costs a password hash (≈ 0.3 s): a lower limit keeps the test short.
    settings.OTTO_AUTH_ADDRESS_FAILURES = 4
    client = Client()
    answers = [client.post("/login/", {"username": f"user{n}", "password": "guess"}) for n in range(4)]
    # Another address may still log in to the same account.
    elsewhere = Client(REMOTE_ADDR="10.0.0.9").post("/login/", RIGHT)

    assert [a.status_code for a in answers] == [200] * 3 + [429]
    assert client.post("/login/", RIGHT).status_code == 429
    assert (elsewhere.status_code, elsewhere["Location"]) == (302, "/")


def test_behind_a_proxy_the_configured_header_names_the_client(alice, settings):
    settings.OTTO_CLIENT_ADDRESS_HEADER = "X-Forwarded-For"
    settings.OTTO_AUTH_ADDRESS_FAILURES = 2
    proxy = Client()
    for n in range(2):
        proxy.post("/login/", {"username": f"user{n}", "password": "guess"}, HTTP_X_FORWARDED_FOR="1.2.3.4")

    # The proxy appends the address it saw: what a client put before it is not believed.
    forged = proxy.post("/login/", RIGHT, HTTP_X_FORWARDED_FOR="1.2.3.4, 5.6.7.8")
    locked = proxy.post("/login/", RIGHT, HTTP_X_FORWARDED_FOR="5.6.7.8, 1.2.3.4")

    assert (forged.status_code, locked.status_code) == (302, 429)


def test_wrong_tokens_from_one_address_answer_429_and_a_right_token_still_works(alice_api):
    with time_machine.travel(timezone.now(), tick=False) as clock:
        answers = [alice_api.get("/api/v1/sessions", token=f"otto_wrong{n}") for n in range(22)]
        right = alice_api.get("/api/v1/sessions")
        clock.shift(timedelta(seconds=61))
        later = alice_api.get("/api/v1/sessions", token="otto_wrong")

    assert [a.status_code for a in answers] == [401] * 19 + [429] * 3
    assert answers[19].json() == {
        "detail": "too many failed sign-ins; try again in 60 s",
        "code": "throttled",
    }
    assert answers[19]["Retry-After"] == "60"
    assert right.status_code == 200
    # After the cool-down the next wrong token locks again, for twice as long.
    assert (later.status_code, later["Retry-After"]) == (429, "120")
    assert AuditEntry.objects.count() == 0


def test_a_successful_request_writes_no_failure_row(alice, alice_api):
    alice_api.get("/api/v1/sessions")
    Client().post("/login/", RIGHT)

    assert AuthFailure.objects.count() == 0
