"""Create the demo project, its two-stage pipeline, items and one user per role.

Safe to run again: existing demo objects are kept. Passwords are printed (demo only)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.demo import DEMO_SLUG
from annotation.fixtures.demo_users import DEMO_USERS

__all__ = ["DEMO_SLUG", "Command", "demo_projects_seed"]


def demo_projects_seed(users: Mapping[str, Any]) -> None:
    """Create every demo project: each registered plug-in's ``demo`` (annotation/plugins.py),
    the engine's verify → label pipeline first, for ``users``: the demo cast by demo name
    (``DEMO_USERS``: "admin", "annotator1"…), whatever their usernames. Safe to run again."""
    from annotation.plugins import demos_seed

    demos_seed(users)


class Command(BaseCommand):
    help = "Seed the demo project with a verify → label pipeline, items and demo users."

    def add_arguments(self, parser):
        parser.add_argument(
            "--password", default="rungwise-demo", help="password of every demo user"
        )
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000/",
            help="where the site will be served (printed at the end; make run passes its own)",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="seed even on a site other machines can reach (demo users have known passwords)",
        )

    @transaction.atomic
    def handle(
        self,
        *args,
        password: str,
        force: bool = False,
        url: str = "http://127.0.0.1:8000/",
        **options,
    ):
        from django.conf import settings

        if settings.SERVES_BEYOND_LOOPBACK and not settings.DEBUG and not force:
            raise CommandError(
                "Refusing to create the demo users (a superuser 'admin' among them, with a known "
                "password) on a site other machines reach (RUNGWISE_BIND "
                f"{settings.BIND_ADDRESS}, ALLOWED_HOSTS {', '.join(settings.ALLOWED_HOSTS)}). "
                "Use --force with --password if you really want them there."
            )
        users = {}
        User = get_user_model()
        for username, role, is_superuser in DEMO_USERS:
            user, created = User.objects.get_or_create(
                username=username,
                defaults={
                    "is_staff": is_superuser,
                    "is_superuser": is_superuser,
                    # an address, so *Forgot your password?* mails (to the console) at once
                    "email": f"{username}@example.org",
                },
            )
            if created:
                user.set_password(password)
                user.save(update_fields=["password"])
            users[username] = (user, role)
        demo_projects_seed({name: user for name, (user, _) in users.items()})
        # The demo items in the data manager's search index now (annotation/search.py), as
        # the worker would index them a moment later.
        from annotation.search import item_search_index

        item_search_index()
        self.stdout.write(self.style.SUCCESS(f"Demo ready. Sign in at {url}"))
        self.stdout.write(f"  {'user':<12} {'role':<11} password")
        for username, (_, role) in users.items():
            self.stdout.write(f"  {username:<12} {role:<11} {password}")
