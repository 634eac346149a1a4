"""`manage.py export_session USERNAME SESSION_ID [--out FILE]`: the session document, as the API gives it."""

from __future__ import annotations

import json
import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory.services import export_session
from memory.services.sessions import get_user_session
from ottoweb.errors import NotFound


class Command(BaseCommand):
    help = "Write a session's export document (JSON) to stdout or --out."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("session_id")
        parser.add_argument("--out", default=None)

    def handle(self, *args, username: str, session_id: str, out: str | None, **options):
        missing = f"{username} has no session {session_id!r}"
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(missing)
        try:
            session = get_user_session(user, session_id)
        except NotFound:
            raise CommandError(missing) from None
        text = json.dumps(export_session(session), indent=2)
        if out:
            with open(out, "w") as handle:
                handle.write(text)
        else:
            sys.stdout.write(text + "\n")
