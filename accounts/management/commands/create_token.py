"""`manage.py create_token USERNAME [--name NAME]`: print a new API token (creating the user)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts.services import issue_token


class Command(BaseCommand):
    help = "Print a new API token for USERNAME, creating the user if needed."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="cli", help="a label for the token")

    def handle(self, *args, username: str, name: str, **options):
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.save()
        _, plain = issue_token(user=user, name=name)
        self.stdout.write(plain)
