"""What apps built on memory add to it, registered where they are wired: memory imports none of them.

An app that builds on memory (lessons) registers here from its `AppConfig.ready()`, by dotted
path, resolved on first use (as ottoweb/api.py mounts lessons' router by its path), so nothing of
the app is imported before it is needed:

- `related errors`: one function `(*, user, tool, error) -> list of records`, the recorded fixes
  of a failed tool that `/runs/fit` attaches to its answer (each read as `api.schemas.RecordOut`);
- `MCP tools`: functions `(who) -> list[Tool]`, served after the notes tools, before `whoami`;
- `re-embed steps`: `(label, function () -> int)`, the other vectors `manage.py reembed --all`
  brings to the database's model, each reported as "label: N vectors".

Registering the same path twice registers it once (`ready()` may run again in a test).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils.module_loading import import_string

_related_errors: list[str] = []
_mcp_tools: list[str] = []
_reembed_steps: list[tuple[str, str]] = []


def provide_related_errors(path: str) -> None:
    """Name the function that finds a failed tool's recorded fixes (one; the last named wins)."""
    _related_errors[:] = [path]


def add_mcp_tools(path: str) -> None:
    if path not in _mcp_tools:
        _mcp_tools.append(path)


def add_reembed_step(label: str, path: str) -> None:
    if (label, path) not in _reembed_steps:
        _reembed_steps.append((label, path))


def related_errors(*, user: Any, tool: str, error: str) -> list[Any] | None:
    """The recorded fixes of `tool` failing with `error`, best first; None when no app keeps any."""
    if not _related_errors:
        return None
    find: Callable[..., list[Any]] = import_string(_related_errors[0])
    return find(user=user, tool=tool, error=error)


def mcp_tools() -> list[Callable[[Any], list[Any]]]:
    return [import_string(path) for path in _mcp_tools]


def reembed_steps() -> list[tuple[str, Callable[[], int]]]:
    return [(label, import_string(path)) for label, path in _reembed_steps]
