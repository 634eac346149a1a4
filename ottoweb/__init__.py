from __future__ import annotations

from .celery import app as celery_app

# The project's version: the MCP server's in its initialize answer, and the client package's
# (clients/python/pyproject.toml), shipped from the same checkout.
__version__ = "0.1.0"

__all__ = ("__version__", "celery_app")
