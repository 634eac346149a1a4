"""The sessions list (search, pages, fill bars), import, export and delete."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memory import services
from memory.models import Job, Session

from .conftest import say

pytestmark = pytest.mark.django_db


def upload(document: object, name: str = "session.json") -> SimpleUploadedFile:
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    return SimpleUploadedFile(name, raw, content_type="application/json")


def test_sessions_list_shows_newest_first_with_x_and_y_fill(alice_web, alice):
    older = services.create_session(user=alice, sid="older", title="Older one", x_budget=100, y_budget=400)
    say(older, ("assistant", "A short reply of a few tokens."))
    services.create_session(user=alice, sid="newer", title="Newer one", workspace="~/src/app")
    row = Session.objects.with_totals().get(sid="older")

    html = alice_web.get("/").content.decode()

    assert html.index("Newer one") < html.index("Older one")
    x = round(100 * row.x_tokens / 100)
    assert f'aria-label="X {x}% full ({row.x_tokens} of 100 tokens), Y 0% full (0 of 400 tokens)"' in html
    assert f'<span class="seg x pct-{x}"></span>' in html
    assert "~/src/app" in html


def test_a_search_longer_than_200_characters_says_it_was_not_run(alice_web, alice):
    # It showed the whole list, as if nothing had been typed.
    services.create_session(user=alice, sid="alpha", title="Billing bug")

    for headers in ({}, {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "session-list"}):
        html = alice_web.get("/", {"q": "b" * 201}, **headers).content.decode()

        assert (
            '<p class="error" role="alert">Not searched: Search for at most 200 characters (this is 201).'
            " Showing every session, newest first.</p>" in html
        )
        assert "Billing bug" in html
    assert 'value="' + "b" * 201 + '"' in alice_web.get("/", {"q": "b" * 201}).content.decode()
    assert "Not searched" not in alice_web.get("/", {"q": "b" * 200}).content.decode()


@pytest.mark.parametrize("q", ["\u200b", "\ufeff\u2060", "\u200b\u00a0\u200d"])
def test_a_search_of_only_invisible_characters_says_it_was_not_run(alice_web, alice, q):
    # It searched for the invisible characters and said no session matched, as the lessons list did.
    services.create_session(user=alice, sid="alpha", title="Billing bug")

    for headers in ({}, {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "session-list"}):
        html = alice_web.get("/", {"q": q}, **headers).content.decode()

        assert (
            '<p class="error" role="alert">Not searched: '
            "The search holds only invisible characters: type words to search for."
            " Showing every session, newest first.</p>" in html
        )
        assert "Billing bug" in html and "No session matches" not in html
    for blank in ("", "  "):  # an empty search (spaces are stripped) is no search: every session
        html = alice_web.get("/", {"q": blank}).content.decode()
        assert "Billing bug" in html and "Not searched" not in html


def test_sessions_list_search_matches_title_id_and_workspace(alice_web, alice):
    services.create_session(user=alice, sid="alpha", title="Billing bug")
    services.create_session(user=alice, sid="beta", title="Other", workspace="billing-service")
    services.create_session(user=alice, sid="gamma", title="Unrelated")

    html = alice_web.get("/", {"q": "billing"}).content.decode()

    assert ("Billing bug" in html, "billing-service" in html, "Unrelated" in html) == (True, True, False)


def test_sessions_list_htmx_search_renders_only_the_list(alice_web, alice):
    services.create_session(user=alice, sid="alpha", title="Billing bug")

    html = alice_web.get(
        "/", {"q": "bill"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="session-list"
    ).content.decode()

    assert html.lstrip().startswith('<div id="session-list" class="region">')
    assert "Billing bug" in html and "<html" not in html


def test_sessions_list_pages_twenty_at_a_time(alice_web, alice):
    for n in range(23):
        services.create_session(user=alice, sid=f"s{n:02d}", title=f"Session number {n:02d}")

    first = alice_web.get("/").content.decode()
    second = alice_web.get("/", {"page": 2}).content.decode()

    assert "Page 1 of 2" in first and "Session number 22" in first and "Session number 02" not in first
    assert "Session number 02" in second and "Session number 03" not in second


def test_sessions_list_empty_states_say_what_to_do(alice_web):
    empty = alice_web.get("/").content.decode()
    no_match = alice_web.get("/", {"q": "zebra"}).content.decode()

    assert "No sessions yet." in empty and "Import a session…" in empty
    assert "No session matches “zebra”." in no_match


def test_export_downloads_the_session_document(alice_web, compacted):
    response = alice_web.get("/sessions/deploys/export/")

    assert response["Content-Disposition"] == 'attachment; filename="ottoweb-deploys.json"'
    assert response["Content-Type"] == "application/json; charset=utf-8"
    compacted.refresh_from_db()
    expected = json.loads(json.dumps(services.export_session(compacted), default=str))
    assert json.loads(response.content) == expected


def test_import_creates_the_session_and_opens_it(alice_web, alice, compacted):
    document = json.loads(alice_web.get("/sessions/deploys/export/").content)

    response = alice_web.post("/import/", {"file": upload(document), "sid": "copy"}, follow=True)

    assert response.redirect_chain == [("/sessions/copy/", 302)]
    html = response.content.decode()
    assert "Imported session copy. Its vectors are being written." in html
    source, copy = (Session.objects.with_totals().get(user=alice, sid=s) for s in ("deploys", "copy"))
    assert (
        copy.title,
        copy.turns,
        copy.generation,
        copy.x_tokens,
        copy.y_raw_tokens,
        copy.bullet_tokens,
    ) == (
        source.title,
        source.turns,
        source.generation,
        source.x_tokens,
        source.y_raw_tokens,
        source.bullet_tokens,
    )
    assert Job.objects.filter(session=copy, kind="reembed").count() == 1
    assert 'id="job-' in html and "Re-embedding vectors" in html


def test_import_reads_a_file_saved_with_a_byte_order_mark_as_the_api_does(alice_web, compacted):
    document = json.loads(alice_web.get("/sessions/deploys/export/").content)
    document["session"]["id"] = "with-bom"
    raw = b"\xef\xbb\xbf" + json.dumps(document).encode()

    response = alice_web.post("/import/", {"file": upload(raw)})

    assert (response.status_code, response["Location"]) == (302, "/sessions/with-bom/")


def test_import_keeps_the_files_id_when_none_is_given(alice_web, compacted):
    document = json.loads(alice_web.get("/sessions/deploys/export/").content)
    document["session"]["id"] = "from-file"

    response = alice_web.post("/import/", {"file": upload(document)})

    assert (response.status_code, response["Location"]) == (302, "/sessions/from-file/")


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            b"{not json",
            "The file is not JSON: Expecting property name enclosed in double quotes at line 1, column 2.",
        ),
        (b"\xc3\x28", "The file is not UTF-8 text (byte 1 cannot be read)."),
        (b"[1, 2]", "The file must hold one JSON object (a session document)."),
        (
            b'{"a": ' * 5000 + b"1" + b"}" * 5000,
            "The file is refused: the JSON nests deeper than 64 levels of arrays and objects (the limit).",
        ),
        (
            b'{"a": ' + b"1" * 5000 + b"}",
            "The file is refused: a number in the JSON has 5,000 digits, past the 4,300",
        ),
    ],
)
def test_import_of_a_file_that_is_no_document_says_why(alice_web, raw, message):
    response = alice_web.post("/import/", {"file": upload(raw)})

    assert response.status_code == 422
    assert message in response.content.decode()
    assert Session.objects.count() == 0


def test_import_of_a_bad_document_names_the_path(alice_web, compacted):
    document = json.loads(alice_web.get("/sessions/deploys/export/").content)
    document["pending"][0]["hash"] = "0" * 64

    response = alice_web.post("/import/", {"file": upload(document), "sid": "bad"})

    assert response.status_code == 422
    assert "pending[0].hash" in response.content.decode()
    assert list(Session.objects.values_list("sid", flat=True)) == ["deploys"]


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: d["session"].update(turns=10_000), "session.turns: is 10,000, but the document holds"),
        (lambda d: d["session"].update(title="Deploy \u202erules"), "session.title: must not contain"),
        (lambda d: d["session"].update(created_at="nope"), "session.created_at: is not an ISO 8601 time"),
    ],
)
def test_the_import_form_refuses_what_the_api_refuses(alice_web, compacted, change, words):
    document = json.loads(alice_web.get("/sessions/deploys/export/").content)
    change(document)

    response = alice_web.post("/import/", {"file": upload(document), "sid": "bad"})

    assert response.status_code == 422
    assert words in response.content.decode()
    assert list(Session.objects.values_list("sid", flat=True)) == ["deploys"]


def test_import_under_a_taken_id_says_so(alice_web, compacted):
    document = json.loads(alice_web.get("/sessions/deploys/export/").content)

    response = alice_web.post("/import/", {"file": upload(document)})

    assert response.status_code == 422
    assert "session id &#x27;deploys&#x27; is taken" in response.content.decode()


def test_delete_asks_first_then_removes_everything(alice_web, compacted):
    confirm = alice_web.get("/sessions/deploys/delete/").content.decode()
    response = alice_web.post("/sessions/deploys/delete/", follow=True)

    assert "Delete “Deploy rules”?" in confirm
    assert "<strong>41</strong> turns: " in confirm
    assert response.redirect_chain == [("/", 302)]
    assert "Deleted session deploys and everything in it." in response.content.decode()
    assert Session.objects.count() == 0
