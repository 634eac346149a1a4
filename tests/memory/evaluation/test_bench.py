from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

# Each figure's label, and the first number printed after it.
FIGURES = {
    "append engine": r"p50 [\d.]+ ms, p95 [\d.]+ ms",
    "append service": r"p50 [\d.]+ ms, p95 [\d.]+ ms",
    "append api": r"p50 [\d.]+ ms, p95 [\d.]+ ms",
    "append http": r"p50 [\d.]+ ms, p95 [\d.]+ ms",
    "append http keep-alive": r"p50 [\d.]+ ms, p95 [\d.]+ ms",
    "compaction engine": r"p50 \d+ ms",
    "compaction service": r"p50 \d+ ms",
    "compaction 100 turns": r"p50 [\d.]+ ms, p95 [\d.]+ ms",
    "recall http": r"p50 [\d.]+ ms, p95 [\d.]+ ms",
    "worker embedding": r"[\d,]+ turns in [\d.]+ s",
    "worker embedding sessions": r"p50 [\d.]+ s, max [\d.]+ s",
    "rss web": r"\d+ MB",
    "rss worker": r"\d+ MB",
    "query embedding": r"p50 [\d.]+ ms, p95 [\d.]+ ms",
    "recall 300 chunks": r"p50 [\d.]+ ms, p95 [\d.]+ ms",
    "embedding": r"[\d.]+ documents/s",
    "rss bench peak": r"\d+ MB",
    "load average before": r"[\d.]+",
    "load average after": r"[\d.]+",
}


@pytest.mark.slow
def test_bench_quick_prints_every_figure_with_a_number_and_leaves_no_data_behind(tmp_path):
    out = io.StringIO()
    target = tmp_path / "bench.json"

    call_command("bench", "--quick", "--json", str(target), stdout=out)

    lines = out.getvalue().splitlines()
    for label, number in FIGURES.items():
        assert [line for line in lines if re.match(rf"^{re.escape(label)}: {number}", line)], label
    figures = json.loads(target.read_text())
    assert sorted(figures["recall"]) == ["300"]
    assert figures["recall"]["300"]["first_recall_ms"] > 0
    # The embedding rate is read from a whole session's worth of documents, never from none.
    assert figures["recall"]["300"]["reembedded"] >= 300 and figures["embedding_docs_per_s"] > 0
    # The ratio is read against the question embedded alone between the recalls, both printed.
    at_300 = figures["recall"]["300"]
    assert at_300["query_embedding_beside_ms"] > 0
    assert at_300["per_query_embedding"] == round(at_300["p50_ms"] / at_300["query_embedding_beside_ms"], 2)
    assert [
        line
        for line in lines
        if re.match(r"^recall p50 / query embedding p50 .*: [\d.]+× at 300 chunks", line)
    ]
    for key in (
        "append_engine",
        "append_service",
        "append_api",
        "append_http",
        "append_http_keepalive",
        "compaction_100",
    ):
        assert figures[key]["p50_ms"] > 0 and figures[key]["p95_ms"] >= figures[key]["p50_ms"]
    assert figures["rss_web_mb"]["after_recalls"] > 0
    # The HTTP section ran a real worker beside the server, and it did embed the session's turns.
    assert "worker_stuck" not in figures and "server_hung" not in figures
    assert figures["rss_worker_mb"]["after_embedding"] > 0 and figures["rss_worker_mb"]["peak"] > 0
    assert figures["worker_embedding_http"]["turns"] > 0
    # The run used its own data folder, outside the configured one, and removed it.
    folder = Path(lines[0].removeprefix("bench: private data folder "))
    assert not folder.exists()
    assert not folder.is_relative_to(settings.DATA_DIR)
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        # On the scale-out path the private store was a database of its own, dropped afterwards.
        import psycopg

        with psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres") as conn:
            left = conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'otto_bench_%'"
            ).fetchall()
        assert left == []


def test_bench_refuses_sizes_that_are_not_chunk_counts():
    with pytest.raises(CommandError, match="comma-separated chunk counts"):
        call_command("bench", "--sizes", "1k,5k", stdout=io.StringIO())


@pytest.mark.slow
@pytest.mark.sqlite_pass  # the processes' memory, not the database, is what it reads
def test_bench_memory_quick_reads_both_processes_after_every_probe(tmp_path):
    out = io.StringIO()
    target = tmp_path / "memory.json"

    call_command("bench", "--memory", "--quick", "--json", str(target), stdout=out)

    lines = out.getvalue().splitlines()
    for label in (
        "memory started",
        "memory warm",
        "memory fit idle",
        "memory mcp idle",
        "memory recall idle",
    ):
        assert [line for line in lines if re.match(rf"^{label}: web \d+ MB, worker \d+ MB", line)], label
    assert [line for line in lines if re.match(r"^memory ceiling: web peak \d+ MB, worker peak \d+ MB", line)]
    figures = json.loads(target.read_text())["memory"]
    # Every probe was answered as the limits say (the MCP body within the limit is taken whole).
    assert figures["fit"]["statuses"] == {"200": 1}
    assert figures["mcp"]["answers"] == ["200 ok"]
    assert figures["recall"]["statuses"] == {"200": 2}
    for kind in ("fit", "mcp", "recall"):
        sample = figures[kind]["after"][0]
        assert sample["web_peak"] >= sample["web"] > 0 and sample["worker_peak"] >= sample["worker"] > 0
