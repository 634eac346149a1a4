"""The shapes every API operation shares: request bases that refuse unstorable values and unknown
fields, a time as the REST API and the MCP tools take one (`Moment`), and the error answer
(docs/api.md, "Errors")."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from ninja import Schema
from pydantic import BaseModel, BeforeValidator, ConfigDict, field_validator
from pydantic_core import PydanticCustomError

from memory.engine.types import Path, json_problem, parse_moment


def check_storable(value: Any, path: Path = ()) -> None:
    """Raise a validation error naming the first value inside `value` that cannot be stored: a
    string (or key) that is not storable text, or a number outside the JSON number policy
    (`memory.engine.types.json_problem`). Its context's `path` lists where below the field it
    lies (["meta", "a"], [0, "content"]); the error answers add it to the field's name."""
    if isinstance(value, BaseModel):
        if isinstance(value, CleanIn):
            return  # it checked its own fields
        # A plain model (memory/api/runs.py's pass-through messages) is walked, its extra fields included.
        for name, item in {**value.__dict__, **(value.model_extra or {})}.items():
            check_storable(item, (*path, name))
    elif isinstance(value, list | tuple) and any(isinstance(item, BaseModel) for item in value):
        for n, item in enumerate(value):
            check_storable(item, (*path, n))
    else:
        found = json_problem(value)
        if found:
            where, problem = found
            raise PydanticCustomError(
                "unstorable", "{problem}", {"problem": problem, "path": [*path, *where]}
            )


class CleanIn(Schema):
    """Every request shape: each string in it storable text, each number within the JSON number
    policy (see `check_storable`); a float field refuses NaN and Infinity in the same words."""

    model_config = ConfigDict(allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        check_storable(value)
        return value


class StrictIn(CleanIn):
    """A JSON body's shape. An unknown field is more likely a typo ("protect") than something to
    ignore silently; and no value is coerced, as in an MCP tool's arguments (memory/mcp/arguments.py):
    "no" or "off" is not false, `true` not 1, " 100 " not 100. An integer is still a float's value.
    A query string's shapes stay CleanIn: every value there arrives as a string."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _moment(value: Any) -> datetime | None:
    """An ISO 8601 string with an offset, parsed (engine.types.parse_moment). Only a string: a
    bare number could be seconds or milliseconds."""
    if value is None or isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise PydanticCustomError("iso_time", "must be an ISO 8601 time string with an offset")
    try:
        return parse_moment(value)
    except ValueError as exc:
        raise PydanticCustomError("iso_time", "{problem}", {"problem": str(exc)}) from None


# A time as the REST API and the MCP tools take it alike: an ISO 8601 string with an offset, or null.
Moment = Annotated[datetime | None, BeforeValidator(_moment)]


class ErrorOut(Schema):
    detail: str
    code: str


# What any operation may answer besides its own codes. 400: a body ninja cannot read for a reason
# none of ours names (a body that is not JSON is a 422 saying so: ottoweb/api.py); 413: a body
# too large; 429: a wrong token from a locked address (accounts/throttle.py); 503: the database
# cannot be written (ottoweb/api.py).
ERRORS = {code: ErrorOut for code in (400, 401, 404, 413, 422, 429, 503)}
