"""A typed Python client for ottoweb's HTTP API v1 (README "Python client"); standard library only."""

from __future__ import annotations

from .client import OPERATIONS, Operation, Ottoweb, OttowebError, __version__

__all__ = ["OPERATIONS", "Operation", "Ottoweb", "OttowebError", "__version__"]
