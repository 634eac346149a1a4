"""ottoweb_client's in-run compaction against a live production server: the model windows."""

from __future__ import annotations

import pytest
from ottoweb_client import Ottoweb, OttowebError

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the client, not the database, is tested


@pytest.fixture(scope="module")
def client(server) -> Ottoweb:
    return Ottoweb(server.url, server.token)


def test_model_windows_lists_the_table_and_answers_one_model(client):
    listed = {i["model"]: (i["window"], i["source"]) for i in client.model_windows()["items"]}
    one = client.model_windows(model="Acme:Thing-1")

    assert listed["openai:gpt-4"] == (8192, "table")
    assert listed["anthropic:claude-sonnet-4"] == (200000, "table")
    assert one == {"items": [{"model": "acme:thing-1", "window": 128000, "source": "default"}]}


def test_model_windows_of_a_model_without_a_vendor_is_refused_with_the_server_s_reason(client):
    with pytest.raises(OttowebError) as raised:
        client.model_windows(model="gpt-4o")

    refused = raised.value
    assert (refused.code, refused.status, refused.field) == ("invalid", 422, "model")
    assert refused.detail == (
        "model: model must be 'vendor:model' (for example 'openai:gpt-4o'), at most 200 characters; "
        "got 'gpt-4o'"
    )
