"""Issue 15, point 6: the Notes page lists a user's scopes and notes and deletes them."""

from __future__ import annotations

import pytest

from memory.models import ScopedMemory

pytestmark = pytest.mark.django_db


def note(user, key: str, content: str) -> ScopedMemory:
    return ScopedMemory.objects.create(user=user, mode="app", project_key=key, content=content)


def test_notes_page_lists_scopes_and_a_scopes_notes_escaped(client, alice, bob):
    note(alice, "app:crm@acme.com", "tenant is acme.com")
    note(alice, "app:crm@acme.com", "<script>alert(1)</script>")
    note(bob, "app:crm@acme.com", "bob's secret")
    client.force_login(alice)

    page = client.get("/notes/", {"scope": "app:crm@acme.com"}).content.decode()

    assert "<code>app:crm@acme.com</code>" in page
    assert "tenant is acme.com" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    assert "bob&#x27;s secret" not in page and "bob's secret" not in page


def test_a_long_note_is_folded_and_a_short_one_is_not(client, alice):
    # A 1,500-character note was shown whole, filling a phone's screen.
    long = "step " * 300
    note(alice, "app:crm@acme.com", long)
    note(alice, "app:crm@acme.com", "tenant is acme.com")
    client.force_login(alice)

    page = client.get("/notes/").content.decode()

    folded = page.split('<details class="fold"><summary><span class="preview pre">')
    assert len(folded) == 2
    preview, rest = folded[1].split("</span>", 1)
    assert len(preview) <= 200 and preview.endswith("…")
    assert '<span class="more">Show all 1500 characters</span><span class="less">Show less</span>' in rest
    assert f'<div class="pre">{long}</div></details>' in rest
    assert '<div class="pre">tenant is acme.com</div>' in page


def test_notes_page_deletes_one_note_and_a_scope_of_the_user_only(client, alice, bob):
    keep = note(alice, "conversation:c-1", "keep me")
    gone = note(alice, "app:crm@acme.com", "delete me")
    note(alice, "app:crm@acme.com", "delete me too")
    theirs = note(bob, "app:crm@acme.com", "bob's")
    client.force_login(alice)

    refused = client.post(f"/notes/{theirs.pk}/delete/")
    one = client.post(f"/notes/{gone.pk}/delete/", follow=True)
    scope = client.post("/notes/scope/delete/", {"scope": "app:crm@acme.com"}, follow=True)
    bad = client.post("/notes/scope/delete/", {"scope": "crm"})

    assert refused.status_code == 404
    assert "Deleted a note of app:crm@acme.com." in one.content.decode()
    assert "Deleted 1 note of app:crm@acme.com." in scope.content.decode()
    assert bad.status_code == 404
    assert sorted(ScopedMemory.objects.values_list("pk", flat=True)) == sorted([keep.pk, theirs.pk])


def test_notes_page_needs_a_login(client):
    response = client.get("/notes/")

    assert (response.status_code, response["Location"].startswith("/login/")) == (302, True)
