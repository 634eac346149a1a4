"""`manage.py reembed (--all | --session USER:ID …) [--model SPEC]`: re-embed now, in this process."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from memory.models import Session, Setting
from memory.services import reembed_session
from memory.services.embedding import SETTING_KEY


class Command(BaseCommand):
    help = (
        "Re-embed sessions with a model (default: the database's); --all also re-embeds every lesson and "
        "note not stamped with it. With --all and --model, the database switches to that model."
    )

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true")
        parser.add_argument("--session", action="append", default=[], help="USERNAME:SESSION_ID")
        parser.add_argument("--model", default=None)

    def handle(self, *args, **options):
        if options["all"]:
            sessions = list(Session.objects.all())
            if options["model"]:
                # Switching the whole database is the one explicit way the recorded model changes.
                with transaction.atomic():
                    Setting.objects.update_or_create(key=SETTING_KEY, defaults={"value": options["model"]})
        else:
            sessions = []
            for ref in options["session"]:
                username, _, sid = ref.partition(":")
                found = Session.objects.filter(user__username=username, sid=sid).first()
                if found is None:
                    raise CommandError(f"no session {ref!r}")
                sessions.append(found)
        if not sessions and not options["all"]:
            raise CommandError("name --all or --session USER:ID")
        for session in sessions:
            written = reembed_session(session=session, model=options["model"])
            self.stdout.write(f"{session.user.username}:{session.sid}: {written} vectors")
        if options["all"]:
            # Lessons and notes rank by the database's model too: after a switch, theirs are stale.
            # Lessons' step is registered by lessons (memory/hooks.py).
            from memory import hooks
            from memory.services.notes import reembed_notes

            for label, reembed in hooks.reembed_steps():
                self.stdout.write(f"{label}: {reembed()} vectors")
            self.stdout.write(f"notes: {reembed_notes()} vectors")
