"""A note's scope, from the arguments that select it, as the caller spells them.

A scope is (app + domain) or (conversation), under the token's user, which is never an argument.
`resolve_scope` turns the remember/recall arguments into the one scope they select, with the
`projectKey` every answer hands back, or refuses them with Invalid naming the argument in the
caller's words (`ScopeNames`: the REST contract's camelCase, or an MCP tool's snake_case);
`scope_arguments` is its inverse, from a projectKey back to the arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

from ottoweb.errors import Invalid

from ..engine.types import is_blank, label_problem
from ..models import ScopedMemory

MAX_APP_CHARS = 200
MAX_CONVERSATION_CHARS = 200

# A domain is a host name (with an optional port): no '@', so "app:<appName>@<domain>" parses one way.
_DOMAIN = re.compile(r"^[a-z0-9](?:[a-z0-9._:-]*[a-z0-9])?$")


class ScopeArguments(TypedDict, total=False):
    """The remember/recall arguments that select one scope (`scope_arguments`)."""

    app_name: str
    domain: str
    conversation_id: str


@dataclass(frozen=True, slots=True)
class ScopeNames:
    """How a caller spells a scope's arguments, so a refusal names them in its words: the REST
    contract's camelCase (`CONTRACT_NAMES`) unless the caller says otherwise (an MCP tool's
    `app_name`, `conversation_id`)."""

    app_name: str = "appName"
    conversation_id: str = "conversationId"

    @property
    def rule(self) -> str:
        return (
            f"{self.app_name} and domain select app scope; {self.conversation_id} selects conversation "
            "scope; give exactly one of the two"
        )


CONTRACT_NAMES = ScopeNames()


@dataclass(frozen=True, slots=True)
class Scope:
    mode: str
    project_key: str


def _part(value: str, name: str, limit: int, names: ScopeNames) -> str:
    value = value.strip()
    if is_blank(value):
        raise Invalid(f"{name} must not be empty ({names.rule})", field=name)
    if len(value) > limit:
        raise Invalid(f"{name} is {len(value):,} characters; the limit is {limit:,}", field=name)
    problem = label_problem(value)
    if problem:
        raise Invalid(f"{name} {problem}", field=name)
    return value


def resolve_scope(
    *,
    app_name: str | None,
    domain: str | None,
    conversation_id: str | None,
    names: ScopeNames = CONTRACT_NAMES,
) -> Scope:
    """The one scope the arguments select, or Invalid naming which arguments select which scope
    (as `names` spells them).

    App scope: appName and domain, projectKey "app:<appName>@<domain>" (domain lower-cased, as host
    names are). Conversation scope: conversationId, projectKey "conversation:<conversationId>".
    """
    wants_app = app_name is not None or domain is not None
    wants_conversation = conversation_id is not None
    if wants_app and wants_conversation:
        raise Invalid(f"both scopes were given: {names.rule}", field=names.conversation_id)
    if not wants_app and not wants_conversation:
        raise Invalid(f"no scope was given: {names.rule}", field=names.app_name)
    if wants_conversation:
        assert conversation_id is not None
        conversation = _part(conversation_id, names.conversation_id, MAX_CONVERSATION_CHARS, names)
        return Scope(ScopedMemory.CONVERSATION, f"conversation:{conversation}")
    if app_name is None or domain is None:
        missing = names.app_name if app_name is None else "domain"
        raise Invalid(
            f"app scope needs both {names.app_name} and domain; {missing} is missing", field=missing
        )
    app = _part(app_name, names.app_name, MAX_APP_CHARS, names)
    if "@" in app:
        raise Invalid(
            f"{names.app_name} must not contain '@' (it separates {names.app_name} from domain)",
            field=names.app_name,
        )
    host = _part(domain, "domain", 253, names).lower()
    if not _DOMAIN.match(host):
        raise Invalid("domain must be a host name: letters, digits, '.', '-', '_' and ':'", field="domain")
    return Scope(ScopedMemory.APP, f"app:{app}@{host}")


def scope_arguments(project_key: str) -> ScopeArguments:
    """The remember/recall arguments that select the scope `project_key` names (its inverse), or
    Invalid naming `scope` when it is not a projectKey."""
    mode, _, rest = project_key.partition(":")
    if mode == ScopedMemory.CONVERSATION and rest:
        return {"conversation_id": rest}
    app, sep, host = rest.rpartition("@")
    if mode == ScopedMemory.APP and sep and app and host:
        return {"app_name": app, "domain": host}
    raise Invalid("scope must be a projectKey: app:<appName>@<domain> or conversation:<id>", field="scope")
