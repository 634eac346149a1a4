from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
import time_machine
from django.conf import settings
from django.core.management import call_command

from lessons.models import ErrorRecord
from lessons.tasks import purge_expired
from ottoweb.celery import app as celery_app

from .conftest import DAY0, ERRORS, RELATED, iso, recorded, resolved

pytestmark = pytest.mark.django_db

DISK = "OSError: [Errno 28] No space left on device"
GIT = "fatal: not a git repository (or any of the parent directories): .git"


def day(n: int):
    return time_machine.travel(DAY0 + timedelta(days=n), tick=False)


def test_error_ttl_hit_on_day_89_moves_expiry_to_day_179_and_unhit_record_expires(alice_api):
    with day(0):
        hit = recorded(alice_api.post(ERRORS, resolved(error=DISK)))
        unhit = recorded(alice_api.post(ERRORS, resolved(tool="git", error=GIT)))

    with day(89):
        related = alice_api.post(RELATED, {"tool": "bash", "error": DISK}).json()
        listed_day_89 = alice_api.get(ERRORS).json()

    # Day 89: the record is returned, and the hit restarts its 90 days from now.
    assert related["related_errors"] == [
        {**hit, "expires_at": iso(DAY0 + timedelta(days=89 + 90)), "hits": 1}
    ]
    assert [i["id"] for i in listed_day_89["items"]] == [unhit["id"], hit["id"]]

    with day(91):
        listed_day_91 = alice_api.get(ERRORS).json()
        searched = alice_api.get(f"{ERRORS}?q=git&match=keyword").json()
        related_git = alice_api.post(RELATED, {"tool": "git", "error": GIT}).json()
        patched = alice_api.call("PATCH", f"{ERRORS}/{unhit['id']}", {"action": "git init"})
        deleted = alice_api.delete(f"{ERRORS}/{unhit['id']}")

    # Day 91: the unhit record (expired on day 90) is invisible everywhere, purged or not.
    assert ([i["id"] for i in listed_day_91["items"]], listed_day_91["count"]) == ([hit["id"]], 1)
    assert (searched["items"], searched["count"]) == ([], 0)
    assert related_git["related_errors"] == []
    assert (patched.status_code, patched.json()["code"]) == (404, "not_found")
    assert (deleted.status_code, deleted.json()["code"]) == (404, "not_found")
    assert ErrorRecord.objects.count() == 2  # still in the table until the purge

    out = StringIO()
    with day(91):
        call_command("purge_lessons", stdout=out)

    assert out.getvalue() == "purged 1 expired error record\n"
    assert list(ErrorRecord.objects.values_list("pk", "hits", "expires_at")) == [
        (hit["id"], 1, DAY0 + timedelta(days=179))
    ]

    with day(178):
        assert alice_api.get(ERRORS).json()["count"] == 1
    with day(179):
        assert alice_api.get(ERRORS).json()["count"] == 0


def test_error_ttl_is_kept_by_a_patch_and_the_record_expires_on_day_90(alice_api):
    with day(0):
        created = recorded(alice_api.post(ERRORS, resolved(error=DISK)))
    with day(60):
        alice_api.call("PATCH", f"{ERRORS}/{created['id']}", {"action": "df -h; clean /tmp"})
    with day(89):
        assert alice_api.get(ERRORS).json()["count"] == 1
    with day(90):
        assert alice_api.get(ERRORS).json() == {
            "items": [],
            "count": 0,
            "match": "semantic",
            "degraded": None,
        }


def test_purge_lessons_command_keeps_live_records_and_is_safe_to_run_twice(alice_api, bob_api):
    with day(0):
        alice_api.post(ERRORS, resolved(error=DISK))
    with day(50):
        live = recorded(bob_api.post(ERRORS, resolved(error=GIT)))

    first, second = StringIO(), StringIO()
    with day(100):
        call_command("purge_lessons", stdout=first)
        call_command("purge_lessons", stdout=second)

    assert (first.getvalue(), second.getvalue()) == (
        "purged 1 expired error record\n",
        "purged 0 expired error records\n",
    )
    assert list(ErrorRecord.objects.values_list("pk", flat=True)) == [live["id"]]


def test_purge_expired_task_is_scheduled_daily_and_deletes_expired_records(alice_api):
    with day(0):
        alice_api.post(ERRORS, resolved(error=DISK))
    with day(30):
        live = recorded(alice_api.post(ERRORS, resolved(error=GIT)))

    with day(95):
        # Beat enqueues the task by name; the registered task is the one that purges.
        deleted = celery_app.tasks["lessons.purge_expired"].apply().get()

    assert deleted == 1
    assert list(ErrorRecord.objects.values_list("pk", flat=True)) == [live["id"]]
    assert settings.CELERY_BEAT_SCHEDULE["lessons-purge-expired"] == {
        "task": "lessons.purge_expired",
        "schedule": 86400.0,
    }
    assert purge_expired.name == "lessons.purge_expired"
