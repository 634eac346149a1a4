"""What keeps a process near its idle size after large requests (ottoweb/heap.py): glibc's
malloc handing freed buffers back, and the middleware that asks for it after a large request."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

from ottoweb import heap

# A process frees 300 MB of half-MB buffers, after one earlier 4 MB buffer was freed (which, left to
# itself, raises glibc's mmap threshold, so the 600 come from the heap), while small buffers
# allocated between them stay (so the heap cannot simply shrink from its top).
PROBE = textwrap.dedent(
    """
    import sys
    from ottoweb import heap

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024

    heap.tune_malloc()
    first = bytearray(4 << 20)
    del first
    base = rss_mb()
    buffers, kept = [], []
    for _ in range(600):
        buffers.append(bytearray(b"x" * (1 << 19)))
        kept.append(bytearray(b"k" * 2000))
    held = rss_mb()
    del buffers
    print(base, held, rss_mb())
    """
)


def run_probe(tuning: str) -> tuple[int, int, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={"OTTO_MALLOC_TUNING": tuning, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    base, held, freed = map(int, out.split())
    return base, held, freed


def test_with_tuning_freed_buffers_go_back_to_the_system_and_without_it_they_stay():
    base, held, freed = run_probe("1")
    assert held - base >= 250
    assert freed - base < 50

    base, held, freed = run_probe("0")
    assert held - base >= 250
    assert freed - base >= 100  # what the tuning is for: glibc alone keeps much of it


def call(app, body: bytes, answer: bytes) -> None:
    async def inner(scope, receive, send):
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": answer})

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        pass

    wrapped = heap.ReleaseAfterLargeRequests(inner, threshold=1000, release=app)
    # A thread of its own: the browser tests' Playwright keeps an event loop running on this one.
    with ThreadPoolExecutor(1) as runner:
        runner.submit(asyncio.run, wrapped({"type": "http"}, receive, send)).result()


def test_a_large_request_or_answer_is_followed_by_a_release_and_a_small_one_is_not():
    released: list[bool] = []

    def release() -> bool:
        released.append(True)
        return True

    call(release, b"x" * 10, b"y" * 10)
    assert released == []
    call(release, b"x" * 600, b"y" * 600)  # together over the threshold
    assert released == [True]
    call(release, b"", b"y" * 2000)
    assert released == [True, True]
