"""A read-only database and a full disk, for real, under the real server: a 503 {"detail", "code"}
the client can act on (never a 500 HTML page), reads still answered where the database can be read,
and nothing half-written — the database afterwards holds exactly what it held before.

The read-only database is the data folder bind-mounted read-only; the full disk is a 16 MB tmpfs
filled with a file. Both need root (as `make test` runs here and in CI).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import OperationalError

# pysqlite3 is the SQLite the server runs (ottoweb/db); the test reads the file with it directly.
from pysqlite3 import dbapi2 as sqlite  # type: ignore[import-untyped]

from memory import services
from memory.engine.hashing import content_hash
from memory.models import Item
from tests.live import Instance

TURNS = [
    {"role": "user" if n % 2 == 0 else "assistant", "text": f"Turn {n}: the deploy is green."}
    for n in range(6)
]
BIG_BATCH = {
    "items": [
        {"role": "assistant", "text": f"Log {n}: " + "build output line, all fine. " * 2000}
        for n in range(20)
    ]
}


def mount(*args: str) -> None:
    command = ["mount", *args] if os.geteuid() == 0 else ["sudo", "-n", "mount", *args]
    subprocess.run(command, check=True, capture_output=True)


def umount(target: Path) -> None:
    command = ["umount", str(target)] if os.geteuid() == 0 else ["sudo", "-n", "umount", str(target)]
    subprocess.run(command, check=False, capture_output=True)


def table_rows(db: Path) -> dict[str, list[str]]:
    """Every row of every real table (virtual tables are read through their shadow tables)."""
    connection = sqlite.connect(db)
    try:
        names = [
            name
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'"
            )
        ]
        # The audit trail records refused requests too, by design (its row counter with it).
        return {
            name: sorted(repr(r) for r in connection.execute(f'SELECT * FROM "{name}"') if AUDIT not in r)
            for name in names
            if name != AUDIT
        }
    finally:
        connection.close()


AUDIT = "memory_auditentry"
DETAIL = "{}; the request was not carried out, try again later"


def expect_503(answer: tuple[int, object], code: str, what: str) -> None:
    assert answer == (503, {"detail": DETAIL.format(what), "code": code})


def fill_with_memory(instance: Instance) -> None:
    """A session with turns, a lesson and a note: something that must survive intact."""
    # Budgets so large that nothing is compacted: every turn stays in the context, in order.
    session = {"id": "s", "x_budget": 10_000_000, "y_budget": 10_000_000}
    assert instance.request("POST", "/api/v1/sessions", session)[0] == 201
    assert instance.request("POST", "/api/v1/sessions/s/items/batch", {"items": TURNS})[0] == 201
    lesson = {"tool": "bash", "error": "disk full", "action": "rm -rf build/", "outcome": "resolved"}
    assert instance.request("POST", "/api/v1/lessons/errors", lesson)[0] == 201
    assert (
        instance.request("POST", "/api/v1/memory/remember", {"conversationId": "c", "content": "hi"})[0]
        == 200
    )


def writes(document: dict) -> list[tuple[str, str, object]]:
    """A write of each kind, each larger than the 128 KB a nearly full disk has left."""
    # 99,000 characters (under every field's limit) of 4-byte UTF-8: about 400 KB.
    long = "𝔡" * 99_000
    return [
        ("POST", "/api/v1/sessions/s/items/batch", BIG_BATCH),
        ("POST", "/api/v1/sessions/import?id=copy", document),
        (
            "POST",
            "/api/v1/lessons/errors",
            {"tool": "bash", "error": long, "action": long, "context": long, "outcome": "resolved"},
        ),
        ("POST", "/api/v1/memory/remember", {"conversationId": "c", "content": long}),
        (
            "POST",
            "/api/v1/runs/fit",
            {
                "session": "s",
                "model": "openai:gpt-4o",
                "last_input_tokens": 200_000,
                "messages": [
                    {"role": "system", "content": "You are a coding agent."},
                    {"role": "user", "content": "Fix the build."},
                    *[{"role": "assistant" if n % 2 else "user", "content": f"{n} {long}"} for n in range(4)],
                    {"role": "user", "content": "Go on."},
                ],
            },
        ),
    ]


def big_document(instance: Instance) -> dict:
    """Session s's export, grown by a megabyte of valid pending turns."""
    status, document = instance.request("GET", "/api/v1/sessions/s/export")
    assert status == 200
    start = 1 + max(p["position"] for p in document["pending"])
    for n, item in enumerate(BIG_BATCH["items"]):
        document["pending"].append(
            {
                "kind": "history",
                "tier": "x",
                "position": start + n,
                "role": item["role"],
                "hash": content_hash(item["text"]),
                "text": item["text"],
                "protected": False,
                "meta": {},
            }
        )
    return document


@pytest.fixture
def read_only(tmp_path):
    """An instance with memory in it, then served again from a read-only bind mount of its folder."""
    data, view = tmp_path / "data", tmp_path / "ro"
    view.mkdir()
    instance = Instance(data)
    instance.start_web()
    fill_with_memory(instance)
    document = big_document(instance)
    context = instance.request("GET", "/api/v1/sessions/s/context")
    instance.kill_web()
    db = data / "ottoweb.sqlite3"
    # The token's last use is long ago, so the next call tries to record it (a write).
    connection = sqlite.connect(db)
    connection.execute("UPDATE memory_apitoken SET last_used_at = '2000-01-01 00:00:00'")
    connection.commit()
    connection.close()
    before = table_rows(db)
    # A WAL database opens read-only only with its -wal and -shm files in place: leave them, as a
    # process that dies holding the database does.
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"import os, pysqlite3; c = pysqlite3.connect({str(db)!r});"
            "c.execute('SELECT count(*) FROM memory_session').fetchall(); os._exit(0)",
        ],
        check=True,
    )
    mount("--bind", str(data), str(view))
    mount("-o", "remount,bind,ro", str(view))
    instance.data_dir = tmp_path  # the server's log cannot go into the read-only folder
    instance.env["OTTO_DATA_DIR"] = str(view)
    try:
        yield instance, document, context, before, db
    finally:
        instance.close()
        umount(view)


def test_a_read_only_database_answers_reads_and_refuses_writes_with_503(read_only):
    instance, document, context, before, db = read_only
    instance.start_web()

    read = instance.request("GET", "/api/v1/sessions/s/context")
    refused = [instance.request(method, path, body) for method, path, body in writes(document)]
    small = [
        instance.request("POST", "/api/v1/sessions/s/items", {"role": "user", "text": "one more"}),
        instance.request("POST", "/api/v1/sessions", {"id": "new"}),
        instance.request("DELETE", "/api/v1/sessions/s"),
        instance.request("POST", "/api/v1/sessions/s/memory", {"action": "compact"}),
        instance.request("POST", "/api/v1/sessions/s/reembed", {}),
    ]

    assert read == context
    for answer in refused + small:
        expect_503(answer, "db_read_only", "the database is read-only")
    instance.kill_web()
    assert table_rows(db) == before


@pytest.fixture
def small_disk(tmp_path):
    """An instance whose data folder is a 16 MB tmpfs (model and tokenizer caches kept outside)."""
    disk, side = tmp_path / "disk", tmp_path / "side"
    disk.mkdir()
    mount("-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk))
    instance = None
    try:
        instance = Instance(
            disk / "data",
            OTTO_MODEL_CACHE=str(side / "models"),
            TIKTOKEN_CACHE_DIR=str(side / "tiktoken"),
            FASTEMBED_CACHE_PATH=str(side / "fastembed"),
        )
        yield instance, disk
    finally:
        if instance is not None:
            instance.close()
        umount(disk)


def fill_disk(disk: Path, leave: int) -> Path:
    """Take all of the disk's free space but `leave` bytes, with one file."""
    stats = os.statvfs(disk)
    filler = disk / "filler"
    with open(filler, "wb") as out:
        out.truncate(0)
        out.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - leave))
    return filler


def test_a_full_disk_refuses_writes_with_503_and_half_writes_nothing(small_disk):
    instance, disk = small_disk
    instance.start_web()
    fill_with_memory(instance)
    document = big_document(instance)
    db = instance.data_dir / "ottoweb.sqlite3"
    context = instance.request("GET", "/api/v1/sessions/s/context")
    before = table_rows(db)

    # Nearly full: 128 KB are left, enough for reads and none of these writes.
    filler = fill_disk(disk, leave=128 * 1024)
    refused = [instance.request(method, path, body) for method, path, body in writes(document)]
    read = instance.request("GET", "/api/v1/sessions/s/context")
    # Completely full: even a one-line write is refused. A read is answered, unless SQLite has to
    # create its shared-memory file for it (no connection holds the database open): then it too is
    # a clear 503.
    filler.unlink()
    filler = fill_disk(disk, leave=0)
    small = instance.request("POST", "/api/v1/sessions/s/items", {"role": "user", "text": "one more"})
    full_read = instance.request("GET", "/api/v1/sessions/s/context")
    filler.unlink()
    after = table_rows(db)
    retried = instance.request("POST", "/api/v1/sessions/s/items/batch", BIG_BATCH)

    for answer in refused:
        expect_503(answer, "db_full", "the database's disk is full")
    assert read == context
    assert small in [
        (503, {"detail": DETAIL.format("the database's disk is full"), "code": "db_full"}),
        (503, {"detail": DETAIL.format("the database cannot be used"), "code": "db_unavailable"}),
    ]
    assert full_read in [
        context,
        (503, {"detail": DETAIL.format("the database cannot be used"), "code": "db_unavailable"}),
    ]
    assert after == before
    # The same write, once there is room: accepted whole, positions right after the last good one.
    assert retried[0] == 201
    assert [item["position"] for item in retried[1]["items"]] == list(range(len(TURNS), len(TURNS) + 20))
    status, final = instance.request("GET", "/api/v1/sessions/s/context")
    texts = [t["text"] for t in final["y_raw"] + final["x"]]  # type: ignore[index]
    assert (status, texts) == (200, [t["text"] for t in TURNS] + [i["text"] for i in BIG_BATCH["items"]])


@pytest.fixture
def full_broker(tmp_path):
    """Jobs go to the worker (OTTO_COMPACTION=job) through a message folder on a full 64 KB tmpfs."""
    instance = Instance(tmp_path / "data", OTTO_COMPACTION="job")
    messages = instance.data_dir / "broker" / "out"
    mount("-t", "tmpfs", "-o", "size=64k", "tmpfs", str(messages))
    try:
        fill_disk(messages, leave=0)
        yield instance
    finally:
        instance.close()
        umount(messages)


def test_a_full_broker_disk_still_acknowledges_the_committed_append(full_broker):
    instance = full_broker
    instance.start_web()
    instance.request("POST", "/api/v1/sessions", {"id": "s", "x_budget": 20, "y_budget": 40})

    answers = [
        instance.request("POST", "/api/v1/sessions/s/items", {"role": "assistant", "text": f"turn {n} " * 6})
        for n in range(8)
    ]
    jobs = {a[1]["compaction"]["job_id"] for a in answers if a[1]["compaction"]}  # type: ignore[index]
    (job_id,) = jobs
    job = instance.request("GET", f"/api/v1/jobs/{job_id}")
    status, context = instance.request("GET", "/api/v1/sessions/s/context")

    # The turns were committed, so they are acknowledged (never a 500 for a stored turn); the job's
    # message could not be sent, and its row waits, queued, for a starting worker to resend it.
    assert [status for status, _ in answers] == [201] * 8
    assert [a[1]["position"] for a in answers] == list(range(8))  # type: ignore[index]
    assert (job[0], job[1]["status"]) == (200, "queued")  # type: ignore[index]
    texts = [t["text"] for t in context["y_raw"] + context["x"]]  # type: ignore[index]
    assert (status, texts) == (200, [f"turn {n} " * 6 for n in range(8)])


@pytest.mark.django_db(transaction=True)
def test_vectors_that_cannot_be_written_after_commit_do_not_fail_the_append(alice_api, monkeypatch):
    """Inline compaction writes vectors after its commit; a database fault there is logged only.

    The fault is raised where the vectors are written (the real full disk is the test above): the
    turns are committed by then, so an error answer would make the client send them twice.
    """

    def disk_full(**kwargs):
        raise OperationalError("database or disk is full")

    monkeypatch.setattr(services, "embed_items", disk_full)
    alice_api.post("/api/v1/sessions", {"id": "s", "x_budget": 20, "y_budget": 40})

    answers = [
        alice_api.post("/api/v1/sessions/s/items", {"role": "assistant", "text": f"turn {n} " * 6})
        for n in range(8)
    ]
    context = alice_api.get("/api/v1/sessions/s/context").json()

    assert [a.status_code for a in answers] == [201] * 8
    assert context["bullets"] != []
    assert Item.objects.filter(session__sid="s").count() == 8
