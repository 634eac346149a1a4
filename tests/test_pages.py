from __future__ import annotations

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db


def test_home_needs_login(client):
    response = client.get("/")
    assert (response.status_code, response["Location"]) == (302, "/login/?next=/")


def test_login_page_has_a_labelled_form(client):
    html = client.get("/login/").content.decode()
    assert '<label for="id_username">Username</label>' in html
    assert "vendor/htmx.min.js" in html


def test_home_lists_the_users_sessions(client, alice, bob):
    from memory.services import create_session

    create_session(user=alice, sid="mine", title="Alice's plan")
    create_session(user=bob, sid="theirs", title="Bob's secret")
    client.force_login(alice)

    html = client.get("/").content.decode()

    assert "Alice&#x27;s plan" in html
    assert "Bob" not in html.split('<main id="main"')[1]


def test_api_docs_and_schema_are_served(client):
    docs = client.get("/api/v1/docs")
    schema = client.get("/api/v1/openapi.json").json()

    assert docs.status_code == 200 and b"openapi.json" in docs.content
    assert "/api/v1/sessions/{sid}/items" in schema["paths"]


def test_api_docs_name_every_operation_in_words_not_by_its_python_function(client):
    # The docs listed "Recall View", "Get Session View", "Update Error View" …
    schema = client.get("/api/v1/openapi.json").json()
    summaries = {
        (method.upper(), path): operation["summary"]
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
    }

    assert [s for s in summaries.values() if s.endswith(" View")] == []
    assert summaries[("POST", "/api/v1/sessions/{sid}/recall")] == "Recall"
    assert summaries[("PATCH", "/api/v1/lessons/errors/{record_id}")] == "Update Fix"


def test_vendored_htmx_is_served(client):
    response = client.get("/static/vendor/htmx.min.js")
    assert b"htmx" in b"".join(response.streaming_content)[:200]


def test_api_docs_load_swagger_from_this_server(client):
    html = client.get("/api/v1/docs").content.decode()
    assert "cdn." not in html
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert client.get("/static/ninja/swagger-ui-bundle.js").status_code == 200


def test_no_template_comment_or_tag_spans_two_lines():
    """Django reads `{# #}`, `{% %}` and `{{ }}` on one line only: one left open prints as page text
    (a long comment is `{% comment %}…{% endcomment %}`)."""
    open_ended = [
        (str(path.relative_to(settings.BASE_DIR)), n, opening)
        for path in sorted((settings.BASE_DIR / "templates").rglob("*.html"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for opening, closing in (("{#", "#}"), ("{%", "%}"), ("{{", "}}"))
        if line.count(opening) != line.count(closing)
    ]

    assert open_ended == []
