"""The memory app's REST API (docs/api.md), one module per audience; ottoweb/api.py mounts the routers.

- `sessions`: sessions, items, context, recall, jobs, the audit trail (mounted at /);
- `runs`: in-run compaction, POST /runs/fit and the model windows (mounted at /);
- `notes`: scoped memory, remember/recall and notes as objects (mounted at /memory);
- `schemas`: the request and response shapes of the sessions API.
"""

from __future__ import annotations

from .notes import router as notes_router
from .runs import router as runs_router
from .sessions import router as sessions_router

__all__ = ("notes_router", "runs_router", "sessions_router")
