"""`manage.py import_session USERNAME FILE [--id NEW_ID]`: create a session from an export document."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory.services import import_session
from ottoweb.errors import ServiceError


class Command(BaseCommand):
    help = "Import a session document (validated whole first); a re-embedding job is queued."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("file")
        parser.add_argument("--id", dest="sid", default=None)

    def handle(self, *args, username: str, file: str, sid: str | None, **options):
        user, _ = get_user_model().objects.get_or_create(username=username)
        try:
            with open(file) as handle:
                document = json.load(handle)
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {file}: {exc}") from None
        try:
            session = import_session(user=user, document=document, sid=sid)
        except ServiceError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(session.sid)
