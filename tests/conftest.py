from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max
from django.test import Client, override_settings

from accounts.models import AuditEntry
from accounts.services import issue_token
from memory import services
from memory.models import Session, Setting
from memory.services import NewItem

T = TypeVar("T")


@dataclass
class ApiClient:
    """A Django test client that speaks JSON with one user's bearer token."""

    client: Client
    token: str

    def _headers(self, token: str | None) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {token if token is not None else self.token}"}

    def call(
        self, method: str, path: str, body=None, *, raw: str | bytes | None = None, token: str | None = None
    ):
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs = {"content_type": "application/json"} if data is not None else {}
        handler = getattr(self.client, method.lower())
        if data is not None:
            return handler(path, data, **kwargs, **self._headers(token))
        return handler(path, **self._headers(token))

    def get(self, path, **kw):
        return self.call("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.call("POST", path, body, **kw)

    def delete(self, path, **kw):
        return self.call("DELETE", path, **kw)


def pytest_xdist_make_scheduler(config, log):
    """`make test` runs the suite in processes of its own (pytest-xdist, `-n`), a file at a time
    each: a module's costly fixtures (a session of hundreds of embedded turns) are built once. The
    browser tests go as one unit, in their order, to one process: they share one live server and
    Chromium (tests/browser/conftest.py), which stop when the process leaves them."""
    from xdist.scheduler import LoadFileScheduling

    class FilesAndTheBrowserTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/browser/"):
                return "tests/browser"
            return super()._split_scope(nodeid)

    return FilesAndTheBrowserTogether(config, log)


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing():
    """Hundreds of tests make a user with a password, and every log-in or failed log-in hashes one:
    the production hasher (PBKDF2) spends ≈ 0.25 s each here, ≈ 10 minutes of a suite. What the
    tests check is who may log in and when, not PBKDF2 (Django's own advice: a fast hasher in tests).
    A live server (tests/live.py, a subprocess) keeps the production hasher: a user it must log in
    with a password is made through it, not here (the browser tests log in with one-time links)."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _fresh_process_caches():
    """A rolled-back test hands its row ids to the next (SQLite's AUTOINCREMENT counter rolls back
    too), which a real database never does; the process caches keyed by ids must not carry one
    test's rows into another's."""
    yield
    from memory import storage

    storage.vector_cache.clear()
    storage.keyword_cache.clear()
    storage.item_cache.clear()
    storage.turn_cache.clear()
    storage.clear_recall_indexes()


@pytest.fixture
def word_vectors(settings):
    """Sessions embed with wordllama (shipped in its wheel, ≈ 100× MiniLM's speed): for tests that
    check what is stored, bounded or round-tripped, not what is found by meaning."""
    settings.OTTO_EMBEDDING_MODEL = "wordllama"


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password="bob-password-1")


@pytest.fixture
def alice_api(alice) -> ApiClient:
    return ApiClient(Client(), issue_token(user=alice, name="test")[1])


@pytest.fixture
def bob_api(bob) -> ApiClient:
    return ApiClient(Client(), issue_token(user=bob, name="test")[1])


@dataclass
class ModuleOwner:
    user: object
    api: ApiClient


def built_once(django_db_blocker, build: Callable[[], T]) -> T:
    """`build()`, committed for the module's tests (in one transaction, as a test's own would have
    built it: one commit); what a test then changes rolls back with the test."""
    with django_db_blocker.unblock(), transaction.atomic():
        return build()


def embedded_turns_once(django_db_blocker, user, sid: str, turns, **budgets: int) -> int:
    """The pk of a session of `turns` ((role, text) pairs), appended one at a time and embedded,
    built once for the module (`built_once`)."""

    def build() -> int:
        session = services.create_session(user=user, sid=sid, **budgets)
        for role, text in turns:
            services.append_items(session=session, items=[NewItem(role=role, text=text)])
        services.embed_items(session=session, kind="history")
        return session.pk

    return built_once(django_db_blocker, build)


@pytest.fixture(scope="module")
def module_owner(request, django_db_setup, django_db_blocker):
    """A user (and an API client with their token) whose sessions outlive one test: for a module
    whose tests read one costly session (hundreds of turns embedded) instead of building it each.

    Made, and removed with everything of theirs, outside the tests' transactions: what a test
    changes rolls back with it as usual. No `transaction=True` test may share the module (its
    flush would take the session from the tests after it).
    """
    name = "owner-" + request.module.__name__.rsplit(".", 1)[-1]
    with django_db_blocker.unblock():
        # What is not the user's but their sessions may write: the embedding model recorded on
        # first use, audit entries (kept, unowned, when a user goes).
        settings_before = set(Setting.objects.values_list("key", flat=True))
        audit_before = AuditEntry.objects.aggregate(last=Max("pk"))["last"] or 0
        user = get_user_model().objects.create_user(name, password="owner-password-1")
        owner = ModuleOwner(user=user, api=ApiClient(Client(), issue_token(user=user, name="test")[1]))
    yield owner
    with django_db_blocker.unblock():
        for session in Session.objects.filter(user=user):
            services.delete_session(session=session)
        user.delete()
        Setting.objects.exclude(key__in=settings_before).delete()
        AuditEntry.objects.filter(pk__gt=audit_before).delete()
