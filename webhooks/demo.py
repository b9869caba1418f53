"""The webhooks demo (its plug-in's ``demo``): one hook on the engine's demo project, off, so
``seed_demo`` sends nothing anywhere. A newcomer opens *Causal pairs (demo)* → *Webhooks* as
``admin``, sees the hook, sends a test event, points it at their own receiver and re-enables it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from annotation.events import PROJECT_EVENT_KINDS
from annotation.models import Project
from webhooks.models import Webhook
from webhooks.signing import secret_new

DEMO_PROJECT = "demo"
DEMO_URL = "https://example.com/rungwise-events"


def seed(*, users: Mapping[str, Any]) -> Webhook | None:
    """The demo hook (created without the address check: the demo needs no network, and
    example.com is a public address). Safe to run again."""
    project = Project.objects.filter(slug=DEMO_PROJECT).first()
    if project is None:
        return None
    hook, _ = Webhook.objects.get_or_create(
        project=project,
        name="Lab pipeline (demo)",
        defaults={
            "url": DEMO_URL,
            "secret": secret_new(),
            "events": list(PROJECT_EVENT_KINDS),
            "is_active": False,
            "batch_size": 100,
            "requests_per_minute": 60,
            "disabled_at": timezone.now(),
            "disabled_reason": (
                "Demo: example.com receives nothing. Point the URL at your own receiver, "
                "send a test event, then re-enable it."
            ),
            "created_by": users.get("admin"),
        },
    )
    return hook
