"""A read-only database and a full disk, for real, under the real server: a 503 {"detail", "code"}
the client can act on (never a 500 HTML page), reads still answered where the database can be read,
and nothing half-written — the database afterwards holds exactly what it held before.

Each fault is made on the backend the run uses (`make test`: SQLite and the filesystem broker;
`make test-postgres`: PostgreSQL and Redis), so both runs prove the same answers:

- read-only: SQLite's data folder bind-mounted read-only; PostgreSQL's database set to
  default_transaction_read_only (every write then fails as on a hot standby);
- full disk: a 16 MB tmpfs filled with a file, holding SQLite's data folder or the PostgreSQL
  tablespace the instance's database lives in (the server runs on this machine);
- full broker: the filesystem broker's message folder on a full tmpfs, or a Redis of the test's own
  at its memory limit.

Mounting needs root (as `make test` runs here and in CI).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from django.db import OperationalError

# pysqlite3 is the SQLite the server runs (ottoweb/db); the test opens the file with it directly.
from pysqlite3 import dbapi2 as sqlite  # type: ignore[import-untyped]

from memory import services
from memory.engine.hashing import content_hash
from memory.models import Item
from tests.live import Instance, free_port, postgres, postgres_connection

POSTGRES = os.environ.get("DB") == "postgres"
REDIS = os.environ.get("CELERY_BROKER_URL", "").startswith("redis://")

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


def table_rows(instance: Instance) -> dict[str, list[str]]:
    """Every row of every real table of the instance's database (SQLite's virtual tables are read
    through their shadow tables)."""
    if instance.database is not None:
        return rows_of(instance.read, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    # A connection as the server opens them, not a read-only one: the last to close checkpoints and
    # removes the WAL, so the server's next write has to create it again, as when no test looks (a
    # read-only reader would leave the WAL, and the room in it, behind on the full disk).
    connection = sqlite.connect(Path(instance.env["OTTO_DATA_DIR"]) / "ottoweb.sqlite3")
    try:
        return rows_of(
            connection.execute,
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'",
        )
    finally:
        connection.close()


def rows_of(query: Callable[[str], Iterable[tuple[Any, ...]]], tables: str) -> dict[str, list[str]]:
    names = [name for (name,) in query(tables)]
    # The audit trail records refused requests too, by design (SQLite's row counter for it with it).
    return {
        name: sorted(repr(r) for r in query(f'SELECT * FROM "{name}"') if AUDIT not in r)
        for name in names
        if name != AUDIT
    }


def write(instance: Instance, statement: str) -> None:
    """One statement on the instance's database while its server is stopped."""
    if instance.database is None:
        connection = sqlite.connect(Path(instance.env["OTTO_DATA_DIR"]) / "ottoweb.sqlite3")
        connection.execute(statement)
        connection.commit()
        connection.close()
    else:
        with postgres_connection(instance.database) as connection:
            connection.execute(statement)


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


def sqlite_read_only(instance: Instance, view: Path) -> None:
    """Serve the instance from a read-only bind mount (at `view`) of its data folder."""
    data = instance.data_dir
    db = data / "ottoweb.sqlite3"
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
    view.mkdir()
    mount("--bind", str(data), str(view))
    mount("-o", "remount,bind,ro", str(view))
    instance.data_dir = view.parent  # the server's log cannot go into the read-only folder
    instance.env["OTTO_DATA_DIR"] = str(view)


def postgres_read_only(database: str) -> None:
    """Make every transaction of `database` read-only: each write then fails with "cannot execute
    INSERT in a read-only transaction", the error a hot standby gives."""
    postgres(f'ALTER DATABASE "{database}" SET default_transaction_read_only = on')
    # The setting reaches new sessions only: end any still open (none, with the server stopped).
    postgres(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{database}' AND pid <> pg_backend_pid()"
    )


@pytest.fixture
def read_only(tmp_path):
    """An instance with memory in it, then served again from a database it can only read."""
    instance = Instance(tmp_path / "data")
    view = tmp_path / "ro"
    try:
        instance.start_web()
        fill_with_memory(instance)
        document = big_document(instance)
        context = instance.request("GET", "/api/v1/sessions/s/context")
        instance.kill_web()
        # The token's last use is long ago, so the next call tries to record it (a write).
        write(instance, "UPDATE memory_apitoken SET last_used_at = '2000-01-01 00:00:00'")
        before = table_rows(instance)
        if instance.database is None:
            sqlite_read_only(instance, view)
        else:
            postgres_read_only(instance.database)
        yield instance, document, context, before
    finally:
        instance.close()
        if view.exists():
            umount(view)


def test_a_read_only_database_answers_reads_and_refuses_writes_with_503(read_only):
    instance, document, context, before = read_only
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
    assert table_rows(instance) == before


@contextmanager
def sqlite_on_small_disk(tmp_path: Path) -> Iterator[tuple[Instance, Path]]:
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


@contextmanager
def postgres_on_small_disk(tmp_path: Path) -> Iterator[tuple[Instance, Path]]:
    """An instance whose PostgreSQL database lives in a tablespace on a 16 MB tmpfs.

    The server writes its WAL on its own disk, so only the database's tables and indexes run out
    of room, as when the volume of a tablespace fills up.
    """
    with postgres_connection() as connection:
        (server_data,) = connection.execute("SHOW data_directory").fetchone()
    # The tablespace folder must belong to the server's OS user: the owner of its data directory.
    assert Path(server_data).is_dir(), "the disk-full test needs the PostgreSQL server on this machine"
    owner = os.stat(server_data)
    # Somewhere the server's user can reach (pytest's tmp_path is private to root).
    disk = Path(tempfile.mkdtemp(prefix="otto-pg-disk-"))
    disk.chmod(0o755)
    mount("-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", str(disk))
    tablespace = f"otto_disk_{secrets.token_hex(4)}"
    instance = None
    try:
        folder = disk / "tablespace"
        folder.mkdir(mode=0o700)
        os.chown(folder, owner.st_uid, owner.st_gid)
        postgres(f"CREATE TABLESPACE \"{tablespace}\" LOCATION '{folder}'")
        instance = Instance(tmp_path / "data", tablespace=tablespace)
        yield instance, disk
    finally:
        if instance is not None:
            instance.close()
        postgres(f'DROP TABLESPACE IF EXISTS "{tablespace}"')
        umount(disk)
        disk.rmdir()


@pytest.fixture
def small_disk(tmp_path):
    on_small_disk = postgres_on_small_disk if POSTGRES else sqlite_on_small_disk
    with on_small_disk(tmp_path) as (instance, disk):
        yield instance, disk


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
    context = instance.request("GET", "/api/v1/sessions/s/context")
    before = table_rows(instance)

    # Nearly full: 128 KB are left, enough for reads and none of these writes.
    filler = fill_disk(disk, leave=128 * 1024)
    refused = [instance.request(method, path, body) for method, path, body in writes(document)]
    read = instance.request("GET", "/api/v1/sessions/s/context")
    filler.unlink()
    after_refused = table_rows(instance)
    # Completely full: a one-line append. A read is answered, unless SQLite has to create its
    # shared-memory file for it (no connection holds the database open): then it too is a clear 503.
    filler = fill_disk(disk, leave=0)
    small = instance.request("POST", "/api/v1/sessions/s/items", {"role": "user", "text": "one more"})
    full_read = instance.request("GET", "/api/v1/sessions/s/context")
    filler.unlink()
    after = table_rows(instance)
    settled = instance.request("GET", "/api/v1/sessions/s/context")
    retried = instance.request("POST", "/api/v1/sessions/s/items/batch", BIG_BATCH)

    for answer in refused:
        expect_503(answer, "db_full", "the database's disk is full")
    assert read == context
    assert after_refused == before
    # SQLite refuses even the one-line append (its WAL has to grow on the full disk). PostgreSQL
    # writes its WAL on the server's own disk and puts a small row in a page the table already
    # has, so there the append may be accepted: then whole, right after the last good turn.
    one_more: list[str] = []
    if small[0] == 201:
        assert (instance.database is not None, small[1]["position"]) == (True, len(TURNS))  # type: ignore[index]
        one_more = ["one more"]
    else:
        assert small in [
            (503, {"detail": DETAIL.format("the database's disk is full"), "code": "db_full"}),
            (503, {"detail": DETAIL.format("the database cannot be used"), "code": "db_unavailable"}),
        ]
        assert (after, settled) == (before, context)
    assert full_read in [
        settled,
        (503, {"detail": DETAIL.format("the database cannot be used"), "code": "db_unavailable"}),
    ]
    # The same write, once there is room: accepted whole, positions right after the last good one.
    start = len(TURNS) + len(one_more)
    assert retried[0] == 201
    assert [item["position"] for item in retried[1]["items"]] == list(range(start, start + 20))  # type: ignore[index]
    status, final = instance.request("GET", "/api/v1/sessions/s/context")
    texts = [t["text"] for t in final["y_raw"] + final["x"]]  # type: ignore[index]
    assert (status, texts) == (
        200,
        [t["text"] for t in TURNS] + one_more + [i["text"] for i in BIG_BATCH["items"]],
    )


@contextmanager
def full_message_folder(tmp_path: Path) -> Iterator[Instance]:
    """The filesystem broker's message folder on a full 64 KB tmpfs."""
    instance = Instance(tmp_path / "data", OTTO_COMPACTION="job")
    messages = instance.data_dir / "broker" / "out"
    mount("-t", "tmpfs", "-o", "size=64k", "tmpfs", str(messages))
    try:
        fill_disk(messages, leave=0)
        yield instance
    finally:
        instance.close()
        umount(messages)


@contextmanager
def full_redis(tmp_path: Path) -> Iterator[Instance]:
    """A Redis of the test's own (the shared one stays untouched) that is over its memory limit:
    every write, a message sent included, fails with "OOM command not allowed"."""
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        + ["--dir", str(tmp_path), "--maxmemory", "1", "--maxmemory-policy", "noeviction"],
        stdout=subprocess.DEVNULL,
    )
    instance = None
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.1)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            client.set("probe", "x")
        instance = Instance(
            tmp_path / "data", OTTO_COMPACTION="job", CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/0"
        )
        yield instance
    finally:
        if instance is not None:
            instance.close()
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def full_broker(tmp_path):
    """Jobs go to the worker (OTTO_COMPACTION=job) through a broker that can take no message: the
    broker of the run (filesystem, or Redis in the scale-out run)."""
    with (full_redis if REDIS else full_message_folder)(tmp_path) as instance:
        yield instance


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
    # The export, not the context: with the compaction not run, the context holds back Y's oldest
    # turns to stay within its budget (they are stored all the same).
    status, document = instance.request("GET", "/api/v1/sessions/s/export")

    # The turns were committed, so they are acknowledged (never a 500 for a stored turn); the job's
    # message could not be sent, and its row waits, queued, for a starting worker to resend it.
    assert [status for status, _ in answers] == [201] * 8
    assert [a[1]["position"] for a in answers] == list(range(8))  # type: ignore[index]
    assert (job[0], job[1]["status"]) == (200, "queued")  # type: ignore[index]
    texts = [t["text"] for t in sorted(document["pending"], key=lambda t: t["position"])]  # type: ignore[index]
    assert (status, texts) == (200, [f"turn {n} " * 6 for n in range(8)])


# Real commits, so on_commit callbacks run.
@pytest.mark.django_db(transaction=True)
def test_vectors_that_cannot_be_written_after_commit_do_not_fail_the_append(alice_api, monkeypatch):
    """Inline compaction writes vectors after its commit; a database fault there is logged only.

    The fault is raised where the vectors are written (the real full disk is the test above): the
    turns are committed by then, so an error answer would make the client send them twice.
    """

    def disk_full(**kwargs):
        raise OperationalError("database or disk is full")

    monkeypatch.setattr(services.embedding, "embed_items", disk_full)
    alice_api.post("/api/v1/sessions", {"id": "s", "x_budget": 20, "y_budget": 40})

    answers = [
        alice_api.post("/api/v1/sessions/s/items", {"role": "assistant", "text": f"turn {n} " * 6})
        for n in range(8)
    ]
    context = alice_api.get("/api/v1/sessions/s/context").json()

    assert [a.status_code for a in answers] == [201] * 8
    assert context["bullets"] != []
    assert Item.objects.filter(session__sid="s").count() == 8
