from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from lessons.models import ErrorRecord

from .conftest import DAY0, ERRORS, RELATED, iso, recorded, resolved

pytestmark = pytest.mark.django_db

# Three fixes for one tool. The new failure below shares words ("build", "write", "output") with the
# permissions fix but means the disk one: keyword ranking gets it wrong, meaning gets it right.
NO_SPACE = "OSError: [Errno 28] No space left on device"
BUILD_PERMISSION = "build failed: cannot write output file dist/app.js: permission denied"
PORT_TAKEN = "OSError: [Errno 98] Address already in use"
REWORDED_DISK_FULL = "disk is full, the build could not write its output"


@pytest.fixture
def clock():
    """The whole test runs on a stopped clock that starts on DAY0 (move it with clock.shift)."""
    with time_machine.travel(DAY0, tick=False) as traveller:
        yield traveller


@pytest.fixture
def three_fixes(alice_api, clock):
    return {
        "disk": recorded(alice_api.post(ERRORS, resolved(error=NO_SPACE, action="clear build caches"))),
        "permission": recorded(
            alice_api.post(ERRORS, resolved(error=BUILD_PERMISSION, action="chown -R $USER dist"))
        ),
        "port": recorded(
            alice_api.post(ERRORS, resolved(error=PORT_TAKEN, action="kill the stale dev server"))
        ),
    }


def ids(body) -> list[int]:
    return [r["id"] for r in body["related_errors"]]


def test_related_errors_put_the_right_fix_first_for_a_reworded_failure(alice_api, three_fixes, clock):
    clock.shift(timedelta(days=5))

    body = alice_api.post(RELATED, {"tool": "bash", "error": REWORDED_DISK_FULL}).json()

    assert ids(body)[0] == three_fixes["disk"]["id"]
    assert body["related_errors"][0] == {
        **three_fixes["disk"],
        "hits": 1,
        "expires_at": iso(DAY0 + timedelta(days=95)),
    }
    assert (body["match"], body["degraded"]) == ("semantic", None)
    # The port fix means something else entirely; it is not offered, so its TTL does not restart.
    assert three_fixes["port"]["id"] not in ids(body)
    port = ErrorRecord.objects.get(pk=three_fixes["port"]["id"])
    assert (port.hits, port.expires_at) == (0, DAY0 + timedelta(days=90))


def test_related_errors_keyword_match_ranks_by_shared_words(alice_api, three_fixes):
    body = alice_api.post(RELATED, {"tool": "bash", "error": REWORDED_DISK_FULL, "match": "keyword"}).json()

    assert (ids(body), body["match"]) == ([three_fixes["permission"]["id"]], "keyword")


def test_related_errors_return_at_most_limit_records(alice_api, three_fixes):
    one = alice_api.post(
        RELATED, {"tool": "bash", "error": "OSError: [Errno 28] disk quota", "limit": 1}
    ).json()

    assert ids(one) == [three_fixes["disk"]["id"]]
    assert sorted(ErrorRecord.objects.values_list("hits", flat=True)) == [0, 0, 1]


def test_related_errors_default_to_three_and_only_search_the_failing_tool(alice_api, three_fixes):
    alice_api.post(ERRORS, resolved(tool="python", error=NO_SPACE))
    for n in range(3):
        alice_api.post(ERRORS, resolved(error=f"{NO_SPACE} while writing chunk {n}"))

    body = alice_api.post(RELATED, {"tool": "bash", "error": NO_SPACE}).json()

    assert len(body["related_errors"]) == 3
    assert {r["tool"] for r in body["related_errors"]} == {"bash"}
    assert ids(body)[0] == three_fixes["disk"]["id"]  # the identical message scores 1.0


def test_related_errors_miss_returns_nothing_and_touches_nothing(alice_api, three_fixes):
    body = alice_api.post(RELATED, {"tool": "bash", "error": "the weather in Paris is sunny today"}).json()

    assert body == {"related_errors": [], "match": "semantic", "degraded": None}
    assert list(ErrorRecord.objects.values_list("hits", flat=True)) == [0, 0, 0]


def test_related_errors_fall_back_to_keyword_when_embedding_is_unavailable(
    alice_api, three_fixes, no_embeddings
):
    failure = f"cp: error writing 'dist/big.iso': {NO_SPACE}"

    body = alice_api.post(RELATED, {"tool": "bash", "error": failure}).json()

    assert ids(body) == [three_fixes["disk"]["id"]]
    assert body["match"] == "keyword"
    assert body["degraded"] == (
        "semantic matching unavailable (model files missing (test)); ranked by keyword"
    )
    assert body["related_errors"][0]["hits"] == 1


def test_record_error_without_a_model_is_stored_and_found_by_keyword(alice_api, no_embeddings, monkeypatch):
    created = alice_api.post(ERRORS, resolved(error=NO_SPACE))
    row = ErrorRecord.objects.get()
    assert (created.status_code, row.embedding, row.embedding_model) == (201, None, "")
    monkeypatch.undo()  # the model is back

    reworded = alice_api.post(RELATED, {"tool": "bash", "error": REWORDED_DISK_FULL}).json()
    quoted = alice_api.post(RELATED, {"tool": "bash", "error": f"write failed: {NO_SPACE}"}).json()

    # Without a vector it cannot match by meaning; a failure quoting its message still finds it.
    assert (reworded["related_errors"], reworded["match"]) == ([], "semantic")
    assert ids(quoted) == [created.json()["id"]]


def test_related_errors_compare_vectors_only_of_the_current_model(alice_api, three_fixes):
    ErrorRecord.objects.filter(pk=three_fixes["disk"]["id"]).update(
        embedding_model="wordllama:l2_supercat_256"
    )

    reworded = alice_api.post(RELATED, {"tool": "bash", "error": REWORDED_DISK_FULL}).json()
    quoted = alice_api.post(RELATED, {"tool": "bash", "error": f"tar: {NO_SPACE}"}).json()

    assert three_fixes["disk"]["id"] not in ids(reworded)
    assert ids(quoted)[0] == three_fixes["disk"]["id"]
