"""How the web process spends its cores: many requests at once, each one's computation on one core.

Recall embeds the question on a second thread while its own thread runs the keyword searches, then
multiplies the question's vector with the session's (numpy, OpenBLAS). Left to themselves,
onnxruntime and OpenBLAS each start a thread per core for every call: on two cores, a recall's
OpenBLAS threads wait on the core the query's embedding holds, and a recall took 16.3 ms at 5,000
turns against 14.6 ms with one BLAS thread (docs/benchmarks.md). The Celery worker, which embeds
turns in batches, keeps every core.
"""

from __future__ import annotations

import os

import numpy  # noqa: F401  (loads OpenBLAS, whose pool the limit applies to)
from threadpoolctl import threadpool_limits


def one_core_per_request() -> None:
    """Before the web app is built (ottoweb/asgi.py, ottoweb/wsgi.py): one onnxruntime thread per
    embedding call, unless OTTO_EMBED_THREADS says otherwise, and as many OpenBLAS threads.

    threadpoolctl sets the limit in the loaded library at run time, so it holds wherever numpy was
    first imported (OPENBLAS_NUM_THREADS is read only then)."""
    os.environ.setdefault("OTTO_EMBED_THREADS", "1")
    threads = int(os.environ["OTTO_EMBED_THREADS"] or 0)
    if threads > 0:
        threadpool_limits(limits=threads, user_api="blas")
