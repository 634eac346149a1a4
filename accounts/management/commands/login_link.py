"""`manage.py login_link USERNAME`: print a one-time dashboard login link (creating the user)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.management.base import BaseCommand
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode


class Command(BaseCommand):
    help = (
        "Print a one-time link that logs USERNAME in to the dashboard, creating the user if needed. "
        "The link dies with its first use, a password change, or after PASSWORD_RESET_TIMEOUT."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--base-url", default="http://127.0.0.1:8000", help="where the dashboard is served"
        )
        parser.add_argument("--quiet", action="store_true", help="print the link only")

    def handle(self, *args, username: str, base_url: str, quiet: bool, **options):
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            # No password: the link is the way in, and the Account page lets the user set one.
            user.set_unusable_password()
            user.save()
        path = reverse(
            "login-link",
            args=[urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)],
        )
        link = base_url.rstrip("/") + path
        if quiet:
            self.stdout.write(link)
            return
        what = "created user" if created else "user"
        self.stdout.write(f"One-time login link for {what} {username!r} (works once):\n  {link}")
