"""The model-window table a deployment fetches (OTTO_MODEL_WINDOWS_URL), kept fresh in the background.

The engine's WindowRegistry answers from whatever table it is given and does no I/O; this module
does the fetching: at most once an hour, in a background thread a lookup never waits for (the
bundled table answers meanwhile), a failed fetch retried after five minutes, the last good table
kept. Time is `time.time()`, so tests move it with time-machine.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.request

from .engine import inrun
from .engine.inrun.windows import MAX_TABLE_BYTES

log = logging.getLogger(__name__)

REFRESH_SECONDS = 3600
RETRY_SECONDS = 300
FETCH_TIMEOUT = 10.0


def fetch_table(url: str, *, timeout: float = FETCH_TIMEOUT) -> dict[str, int]:
    """GET a window table over http(s); ValueError when it cannot be used."""
    if not url.lower().startswith(("http://", "https://")):
        raise ValueError(f"OTTO_MODEL_WINDOWS_URL must be http(s): {url!r}")
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "ottoweb"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (scheme checked above)
        body = response.read(MAX_TABLE_BYTES + 1)
    return inrun.table_from_body(body)


class RefreshingWindows(inrun.WindowRegistry):
    """A WindowRegistry whose table is fetched from `url` in the background (none without a URL)."""

    def __init__(
        self,
        *,
        url: str = "",
        learned: inrun.LearnedStore | None = None,
        bundled: inrun.BundledTable | None = None,
        timeout: float = FETCH_TIMEOUT,
    ) -> None:
        super().__init__(learned=learned, bundled=bundled)
        self.url = url
        self.timeout = timeout
        self.fetched_at: float | None = None
        self.last_error: str | None = None
        self.fetches = 0
        self._due = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def warm(self) -> threading.Thread | None:
        """Start a background refresh when one is due; return its thread. Never blocks."""
        if not self.url:
            return None
        with self._lock:
            if (self._thread is not None and self._thread.is_alive()) or time.time() < self._due:
                return None
            thread = threading.Thread(target=self._refresh, name="ottoweb-model-windows", daemon=True)
            self._thread = thread
        thread.start()
        return thread

    def _refresh(self) -> None:
        try:
            table = fetch_table(self.url, timeout=self.timeout)
        except Exception as exc:  # a table outage must never reach a request; log and retry later
            log.warning("model window table %s: %s; retrying in %ss", self.url, exc, RETRY_SECONDS)
            with self._lock:
                self.fetches += 1
                self.last_error = str(exc) or exc.__class__.__name__
                self._due = time.time() + RETRY_SECONDS
            return
        with self._lock:
            self.fetches += 1
            self.use_table(table)
            self.fetched_at = time.time()
            self.last_error = None
            self._due = self.fetched_at + REFRESH_SECONDS

    def wait(self, timeout: float = 30.0) -> None:
        """Wait for a refresh in flight (tests and the warm-up command; requests never call this)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def lookup(self, model: str, *, learned: inrun.LearnedStore | None = None) -> inrun.WindowInfo:
        self.warm()
        return super().lookup(model, learned=learned)

    def listing(self, *, learned: inrun.LearnedStore | None = None) -> list[inrun.WindowInfo]:
        self.warm()
        return super().listing(learned=learned)
