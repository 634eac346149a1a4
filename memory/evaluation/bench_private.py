"""`manage.py bench`'s parent side: it never touches the configured database. The command runs
again in a child process whose OTTO_DATA_DIR is a fresh temporary folder (and, on PostgreSQL, whose
database is a fresh one), relays its lines, and deletes both afterwards unless --keep-data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper
from django.db import connection

from memory.evaluation.processes import terminate

# The child's marker: set to its private OTTO_DATA_DIR, so it knows it may write there.
CHILD_FLAG = "OTTO_BENCH_CHILD"
# Cache folders settings.py derives from OTTO_DATA_DIR: the child derives its own.
DERIVED_ENV = ("TIKTOKEN_CACHE_DIR", "OTTO_MODEL_CACHE", "FASTEMBED_CACHE_PATH")


def postgres_admin(statement: str) -> None:
    """Run `statement` on the PostgreSQL server of the configured database, outside any database."""
    import psycopg

    db: dict[str, Any] = settings.DATABASES["default"]
    with psycopg.connect(
        host=db["HOST"],
        port=db["PORT"],
        user=db["USER"],
        password=db["PASSWORD"],
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(statement)


def private_postgres_database() -> str:
    """A new, empty database beside the configured one, for the bench's private store."""
    name = f"otto_bench_{os.getpid()}_{int(time.time())}"
    postgres_admin(f'CREATE DATABASE "{name}"')
    return name


class PrivateRun:
    """The parent: a private data folder, then the child does the work."""

    stdout: OutputWrapper

    def run_child(
        self,
        *,
        sizes: list[int],
        quick: bool,
        json_out: str | None,
        profile: bool,
        keep_data: bool,
        load: float = 0.0,
        contention: float = 0.0,
        memory: bool = False,
        **_: Any,
    ) -> None:
        folder = Path(tempfile.mkdtemp(prefix="ottoweb-bench-")).resolve()
        env = {
            k: v
            for k, v in os.environ.items()
            if not (k in DERIVED_ENV and v.startswith(str(settings.DATA_DIR)))
        }
        env.update({"OTTO_DATA_DIR": str(folder), CHILD_FLAG: str(folder), "PYTHONUNBUFFERED": "1"})
        database = private_postgres_database() if connection.vendor == "postgresql" else None
        if database is not None:
            env["OTTO_PG_NAME"] = database  # on the scale-out path the private store is a database
        argv = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "bench"]
        argv += ["--sizes", ",".join(map(str, sizes))]
        argv += ["--quick"] if quick else []
        argv += ["--profile"] if profile else []
        argv += ["--load", str(load)] if load else []
        argv += ["--contention", str(contention)] if contention else []
        argv += ["--memory"] if memory else []
        argv += ["--json", str(Path(json_out).resolve())] if json_out else []
        self.stdout.write(f"bench: private data folder {folder}")
        child: subprocess.Popen[str] | None = None
        try:
            child = subprocess.Popen(
                argv,
                cwd=settings.BASE_DIR,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert child.stdout is not None
            for line in child.stdout:
                self.stdout.write(line.rstrip("\n"))
            if child.wait() != 0:
                raise CommandError(f"the benchmark process failed (exit {child.returncode})")
        finally:
            if child is not None:
                terminate(child)  # stopped early: the child stops its server and worker on SIGTERM
            if keep_data:
                kept = f" and PostgreSQL database {database}" if database else ""
                self.stdout.write(f"bench: data kept in {folder}{kept}")
            else:
                shutil.rmtree(folder, ignore_errors=True)
                if database is not None:
                    postgres_admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
