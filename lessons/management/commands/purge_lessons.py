"""manage.py purge_lessons: delete expired error records now (the same service Celery beat runs)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from lessons.services import purge_expired_errors


class Command(BaseCommand):
    help = "Delete error records (lessons) whose 90-day TTL has run out."

    def handle(self, *args, **options) -> None:
        deleted = purge_expired_errors()
        self.stdout.write(f"purged {deleted} expired error record{'' if deleted == 1 else 's'}")
