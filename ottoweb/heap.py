"""What keeps the web process and the worker near their idle size after the largest requests
(docs/benchmarks.md, "Memory ceiling").

glibc's malloc serves a block above its mmap threshold with a mapping of its own, unmapped when
freed; below it, from a heap that keeps what is freed. The threshold starts at 128 KiB and rises to
the size of every mapped block freed, up to 32 MiB: after one request that parsed a 30 MB body,
every buffer up to that size came from the heap, and the process stayed at its peak. Two remedies:

- `tune_malloc()`, once at start before any thread (ottoweb/asgi.py; the worker's `worker_init`):
  a fixed threshold, so large buffers are always mapped and handed back when freed, and at most
  two heaps (glibc makes up to eight per core for threads, each keeping what its thread freed);
- `release_memory()` after a request whose body or answer was large (`ReleaseAfterLargeRequests`
  around the ASGI app) and after each worker task: the heaps' free pages go back to the system
  (`malloc_trim`).

OTTO_MALLOC_TUNING=0 turns both off (to compare; `manage.py bench --memory` prints either way).
Where the C library is not glibc (musl, macOS) both do nothing.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# mallopt's parameters (malloc.h).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
# Blocks from this size up are mapped: glibc's own starting value, kept fixed.
MMAP_THRESHOLD = 128 * 1024
# Heaps for all threads together: the web process's request threads and the worker's two task
# threads share them (a thread waits on a heap's lock for nanoseconds; each extra heap holds
# tens of MB that only its own thread's frees can reuse).
ARENA_MAX = 2
# A request whose body and answer together reach this many bytes is followed by a release; a
# batch at the limits (2 MB of text) is one, an append is not.
LARGE_REQUEST_BYTES = 1024 * 1024


def tuning_enabled() -> bool:
    return os.environ.get("OTTO_MALLOC_TUNING", "1") != "0"


@functools.cache
def glibc() -> Any:
    """The C library when it is glibc and tuning is on, else None."""
    if not tuning_enabled():
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        # musl and others have no gnu_get_libc_version; attribute access raises there.
        libc.gnu_get_libc_version  # noqa: B018
        libc.malloc_trim  # noqa: B018
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def tune_malloc() -> bool:
    """Fix glibc's mmap threshold at MMAP_THRESHOLD (no rise after a large block is freed) and its
    heaps at ARENA_MAX; False where there is no glibc or it refused. Call before threads start."""
    libc = glibc()
    if libc is None:
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(libc.mallopt(M_ARENA_MAX, ARENA_MAX))


def release_memory() -> bool:
    """Hand the heap's free pages back to the system; False where there is no glibc."""
    libc = glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


class ReleaseAfterLargeRequests:
    """ASGI middleware: after an HTTP request whose body and answer came to `threshold` bytes or
    more, `release` runs on a worker thread once the answer is sent (it takes the heap's locks for
    a few milliseconds, so never on the event loop)."""

    def __init__(
        self, app: ASGIApp, *, threshold: int = LARGE_REQUEST_BYTES, release: Any = release_memory
    ) -> None:
        self.app = app
        self.threshold = threshold
        self.release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        moved = 0

        async def counted_receive() -> Message:
            nonlocal moved
            message = await receive()
            moved += len(message.get("body", b""))
            return message

        async def counted_send(message: Message) -> None:
            nonlocal moved
            moved += len(message.get("body", b""))
            await send(message)

        await self.app(scope, counted_receive, counted_send)
        if moved >= self.threshold:
            await anyio.to_thread.run_sync(self.release)
