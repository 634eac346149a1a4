"""Failed sign-ins are throttled per (address, account) and per address, never per account alone
(accounts/throttle.py): a stranger can lock out only the addresses they try from."""

from __future__ import annotations

import re
from datetime import timedelta

import time_machine
from django.test import Client
from django.utils import timezone

from accounts.models import AuditEntry, AuthFailure

WRONG = {"username": "alice", "password": "not-her-password"}
RIGHT = {"username": "alice", "password": "alice-password-1"}
HOME = "127.0.0.1"
ATTACKER = "203.0.113.7"
DAY = timedelta(days=1)


def locked(seconds: int) -> str:
    return f"Too many failed log-ins from this address. Try again in {seconds} seconds."


def login(data: dict[str, str], address: str):
    return Client(REMOTE_ADDR=address).post("/login/", data)


def logged_in(response) -> bool:
    return (response.status_code, response.get("Location")) == (302, "/")


def retry_after(response) -> int:
    return int(response["Retry-After"]) if response.status_code == 429 else 0


def test_a_thousand_wrong_passwords_from_one_address_in_a_day_lock_it_but_never_alice(alice):
    waits, alice_in = [], []
    with time_machine.travel(timezone.now(), tick=False) as clock:
        for n in range(1000):
            waits.append(retry_after(login(WRONG, ATTACKER)))
            if n % 100 == 99:
                # Alice, from an address that has never failed, with her password.
                alice_in.append(logged_in(login(RIGHT, f"198.51.100.{n // 100}")))
            clock.shift(DAY / 1000)

    assert alice_in == [True] * 10
    # The attacker's address: 5 guesses, then one after each lock-out, each twice as long as the
    # last (60 s … 1,920 s) up to the hour, then about one an hour: 33 guesses in a day, not 1,000.
    assert waits[:11] == [0, 0, 0, 0, 60, 120, 34, 240, 154, 68, 480]
    assert AuthFailure.objects.get(key=f"login:{ATTACKER}|alice").failures == 33
    assert max(waits) == 3600


def test_a_thousand_wrong_passwords_from_two_hundred_addresses_in_a_day_never_keep_alice_out(alice):
    answers, alice_in = [], []
    with time_machine.travel(timezone.now(), tick=False) as clock:
        for n in range(1000):
            answers.append(login(WRONG, f"10.0.{n % 200 // 100}.{n % 100}"))
            if n % 100 == 99:
                alice_in.append(logged_in(login(RIGHT, HOME)))
            clock.shift(DAY / 1000)

    assert alice_in == [True] * 10
    # Each address's fifth failure in a row locks it (the rounds are 200 × 86.4 s apart, longer
    # than the lock-out, so every attempt is checked and every fifth one locks).
    assert [retry_after(a) for a in answers] == [0] * 800 + [60] * 200


def test_the_attackers_lock_out_doubles_up_to_the_configured_cap(alice, settings):
    settings.OTTO_AUTH_LOCKOUT_MAX_SECONDS = 480
    waits = []
    with time_machine.travel(timezone.now(), tick=False) as clock:
        for _ in range(4):
            login(WRONG, ATTACKER)
        for _ in range(7):
            waits.append(retry_after(login(WRONG, ATTACKER)))
            # Asking again while locked is refused, not counted, and does not lengthen the lock.
            clock.shift(timedelta(seconds=1))
            early = login(WRONG, ATTACKER)
            assert (early.status_code, retry_after(early)) == (429, waits[-1] - 1)
            clock.shift(timedelta(seconds=waits[-1]))

    assert waits == [60, 120, 240, 480, 480, 480, 480]
    assert AuthFailure.objects.get(key=f"login:{ATTACKER}|alice").failures == 11


def test_alice_mistyping_at_home_is_locked_there_for_a_minute_and_not_at_all_from_her_phone(alice):
    with time_machine.travel(timezone.now(), tick=False) as clock:
        typos = [login(WRONG, HOME) for _ in range(5)]
        refused = login(RIGHT, HOME)
        phone = login(RIGHT, "192.0.2.44")
        clock.shift(timedelta(seconds=61))
        home = login(RIGHT, HOME)

    assert (logged_in(phone), logged_in(home)) == (True, True)
    assert [a.status_code for a in typos] == [200] * 4 + [429]
    assert "Username and password did not match." in typos[3].content.decode()
    assert (typos[4]["Retry-After"], locked(60) in typos[4].content.decode()) == ("60", True)
    # Locked: the right password from that address is refused too, without being checked.
    assert (refused.status_code, refused["Retry-After"]) == (429, "60")
    # Her typos are forgiven once she has logged in from there: no row is left.
    assert list(AuthFailure.objects.values_list("key", "failures")) == []


def test_alice_mistyping_again_and_again_waits_twice_as_long_each_time_up_to_an_hour(alice):
    waits = []
    with time_machine.travel(timezone.now(), tick=False) as clock:
        for _ in range(4):
            login(WRONG, HOME)
        for _ in range(9):
            waits.append(retry_after(login(WRONG, HOME)))
            clock.shift(timedelta(seconds=waits[-1]))
        back = login(RIGHT, HOME)

    assert waits == [60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]
    assert logged_in(back)


def test_a_day_without_failures_forgets_them(alice):
    with time_machine.travel(timezone.now(), tick=False) as clock:
        for _ in range(4):
            login(WRONG, HOME)
        clock.shift(DAY + timedelta(seconds=1))
        answers = [login(WRONG, HOME) for _ in range(5)]

    assert [retry_after(a) for a in answers] == [0, 0, 0, 0, 60]


def test_wrong_passwords_for_many_accounts_from_one_address_lock_the_address(alice, settings):
    settings.OTTO_AUTH_ADDRESS_FAILURES = 6
    with time_machine.travel(timezone.now(), tick=False) as clock:
        answers = [login({"username": f"user{n}", "password": "guess"}, ATTACKER) for n in range(6)]
        right_there = login(RIGHT, ATTACKER)
        clock.shift(timedelta(seconds=61))
        again = login({"username": "user6", "password": "guess"}, ATTACKER)
    elsewhere = login(RIGHT, HOME)

    assert [retry_after(a) for a in answers] == [0] * 5 + [60]
    # The whole address is locked, for every account, and the next failure doubles it.
    assert (right_there.status_code, retry_after(again)) == (429, 120)
    assert logged_in(elsewhere)


def test_a_guesser_moving_through_one_ipv6_64_is_one_address(alice):
    answers = [login(WRONG, f"2001:db8:5:7::{n:x}") for n in range(1, 6)]
    neighbour = login(RIGHT, "2001:db8:5:8::1")

    assert [retry_after(a) for a in answers] == [0, 0, 0, 0, 60]
    assert logged_in(neighbour)
    assert AuthFailure.objects.get(key="login:2001:db8:5:7::/64|alice").failures == 5


def test_a_login_forgives_only_that_accounts_failures_from_the_address(alice):
    for data in [WRONG, WRONG, {"username": "bob", "password": "x"}, WRONG]:
        login(data, HOME)
    login(RIGHT, HOME)

    assert dict(AuthFailure.objects.values_list("key", "failures")) == {
        f"login:{HOME}|bob": 1,
        f"login-address:{HOME}": 1,
    }


def page_text(response, username: str) -> str:
    """What the page says, without the CSRF token and the echoed username."""
    text = response.content.decode().replace(f'value="{username}"', 'value=""')
    text = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", text)
    return re.sub(r'"X-CSRFToken": "[^"]*"', "", text)


def test_the_answers_never_tell_an_existing_account_from_an_unknown_one(alice):
    def attempts(username: str, address: str):
        answers = []
        with time_machine.travel(timezone.now(), tick=False) as clock:
            for _ in range(7):
                answer = login({"username": username, "password": "guess"}, address)
                answers.append((answer.status_code, retry_after(answer), page_text(answer, username)))
                clock.shift(timedelta(seconds=retry_after(answer)))
        return answers

    assert attempts("alice", "192.0.2.1") == attempts("nobody", "192.0.2.2")


def test_behind_a_proxy_the_configured_header_names_the_client(alice, settings):
    settings.OTTO_CLIENT_ADDRESS_HEADER = "X-Forwarded-For"
    settings.OTTO_AUTH_ADDRESS_FAILURES = 2
    proxy = Client()
    for n in range(2):
        proxy.post("/login/", {"username": f"user{n}", "password": "guess"}, HTTP_X_FORWARDED_FOR="1.2.3.4")

    # The proxy appends the address it saw: what a client put before it is not believed; a port
    # some proxies append is not part of the address.
    forged = proxy.post("/login/", RIGHT, HTTP_X_FORWARDED_FOR="1.2.3.4, 5.6.7.8")
    locked_out = proxy.post("/login/", RIGHT, HTTP_X_FORWARDED_FOR="5.6.7.8, 1.2.3.4:50123")

    assert (logged_in(forged), locked_out.status_code) == (True, 429)


def test_without_the_setting_a_forwarded_header_is_not_believed(alice, settings):
    settings.OTTO_AUTH_ADDRESS_FAILURES = 2
    for n in range(2):
        Client().post(
            "/login/", {"username": f"user{n}", "password": "guess"}, HTTP_X_FORWARDED_FOR=f"9.9.9.{n}"
        )

    assert Client().post("/login/", RIGHT, HTTP_X_FORWARDED_FOR="9.9.9.9").status_code == 429


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
    login(RIGHT, HOME)

    assert AuthFailure.objects.count() == 0
