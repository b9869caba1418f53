"""Create the demo project, its two-stage pipeline, items and one user per role.

Safe to run again: existing demo objects are kept. Passwords are printed (demo only)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation import services
from annotation.fixtures.demo_pairs import DEMO_PAIRS
from annotation.fixtures.demo_users import DEMO_ROLES, DEMO_USERS
from annotation.models import Project

DEMO_SLUG = "demo"
GUIDELINES = """Each item is a pair of events, A then B.

**Verify**: keep the pair if both sentences are fluent English and each describes one event;
reject it otherwise.

**Label**: choose *causal* when A brings about B, *temporal* when A merely happens before B, and
*unrelated* when the two events have nothing to do with each other."""


def demo_projects_seed(users: Mapping[str, Any]) -> None:
    """Create every demo project (this command's verify → label pipeline, then each app's
    ``seed_demo`` hook) for ``users``: the demo cast by demo name (``DEMO_USERS``: "admin",
    "annotator1"…), whatever their usernames. Safe to run again."""
    project = Project.objects.filter(slug=DEMO_SLUG).first()
    if project is None:
        project = services.project_create(
            slug=DEMO_SLUG,
            name="Causal pairs (demo)",
            description="A small two-stage pipeline: verify the pairs, then label the relation.",
            guidelines=GUIDELINES,
        )
        services.stage_create(
            project=project,
            slug="verify",
            name="Verify pairs",
            kind="verify",
            overlap=3,
            instructions="Keep fluent pairs of single events; reject anything else.",
        )
        services.stage_create(
            project=project,
            slug="label",
            name="Label the relation",
            kind="label",
            overlap=3,
            config={"choices": ["causal", "temporal", "unrelated"]},
            instructions="Does A cause B, merely precede it, or neither?",
        )
        services.items_create(
            project=project,
            rows=[
                {
                    "external_id": f"demo-{index:03d}",
                    "payload": {"sentence_a": a, "sentence_b": b, "expected": expected},
                    "source": "rungwise-demo",
                }
                for index, (a, b, expected) in enumerate(DEMO_PAIRS, start=1)
            ],
        )
    for name, user in users.items():
        services.membership_add(project=project, user=user, role=DEMO_ROLES[name])
    # Other apps add their own demo projects (ratings, review) through this hook.
    from django.apps import apps

    for config in apps.get_app_configs():
        seed = getattr(config, "seed_demo", None)
        if callable(seed):
            seed(users=dict(users))


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
                defaults={"is_staff": is_superuser, "is_superuser": is_superuser},
            )
            if created:
                user.set_password(password)
                user.save(update_fields=["password"])
            users[username] = (user, role)
        demo_projects_seed({name: user for name, (user, _) in users.items()})
        self.stdout.write(self.style.SUCCESS(f"Demo ready. Sign in at {url}"))
        self.stdout.write(f"  {'user':<12} {'role':<11} password")
        for username, (_, role) in users.items():
            self.stdout.write(f"  {username:<12} {role:<11} {password}")
