"""The shapes every API operation shares: request bases that refuse unstorable text and unknown
fields, and the error answer (docs/api.md, "Errors")."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import BaseModel, ConfigDict, field_validator
from pydantic_core import PydanticCustomError

from memory.engine.types import text_problem


def check_storable(value: Any, path: str = "") -> None:
    """Raise a validation error naming the first string (or key) inside `value` that is not storable."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            where = f"{path}: " if path else ""
            raise PydanticCustomError("unstorable_text", "{problem}", {"problem": where + problem})
    elif isinstance(value, BaseModel) and not isinstance(value, CleanIn):
        # A CleanIn model checked its own fields; a plain model (memory/api/runs.py's pass-through messages)
        # is walked here, its extra fields included.
        for name, item in {**value.__dict__, **(value.model_extra or {})}.items():
            check_storable(item, f"{path}.{name}" if path else name)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_storable(key, path)
            check_storable(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            check_storable(item, f"{path}[{n}]")


class CleanIn(Schema):
    """Every request shape: each string in it must be storable text (see `text_problem`)."""

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        check_storable(value)
        return value


class StrictIn(CleanIn):
    # An unknown field is more likely a typo ("protect") than something to ignore silently.
    model_config = ConfigDict(extra="forbid")


class ErrorOut(Schema):
    detail: str
    code: str


# What any operation may answer besides its own codes. 400: a body that is not JSON; 413: a body
# too large; 429: a wrong token from a locked address (ottoweb/throttle.py); 503: the database
# cannot be written (ottoweb/api.py).
ERRORS = {code: ErrorOut for code in (400, 401, 404, 413, 422, 429, 503)}
