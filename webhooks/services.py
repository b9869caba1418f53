"""Writes of the Webhooks tab (CONTRIBUTING.md, "Thin views"): add a hook, change it, enable or
disable it, delete it, ask for a test event. Deliveries are webhooks/delivery.py's; recording
events, webhooks/outbox.py's."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.errors import ApplicationError
from annotation.events import PROJECT_EVENT_KINDS
from annotation.models import Project
from rungwise.debounce import enqueue_on_commit
from webhooks.addresses import url_check
from webhooks.models import Webhook
from webhooks.outbox import wake
from webhooks.signing import secret_new


def _events_clean(events: Sequence[str]) -> list[str]:
    unknown = sorted(set(events) - set(PROJECT_EVENT_KINDS))
    if unknown:
        raise ApplicationError(
            f"Unknown events: {', '.join(unknown)}.", {"events": "unknown", "unknown": unknown}
        )
    if not events:
        raise ApplicationError("Choose at least one event to send.", {"events": "required"})
    return [kind for kind in PROJECT_EVENT_KINDS if kind in set(events)]


@transaction.atomic
def webhook_create(
    *,
    project: Project,
    name: str,
    url: str,
    events: Sequence[str],
    batch_size: int = 100,
    requests_per_minute: int = 60,
    by: User | None = None,
) -> Webhook:
    """A new active hook of ``project`` with a new secret (shown to its creator once: the
    returned object carries it). The URL is checked now (webhooks/addresses.py) and again at
    every connection."""
    hook = Webhook.objects.create(
        project=project,
        name=name.strip()[:100] or "Webhook",
        url=url_check(url),
        secret=secret_new(),
        events=_events_clean(events),
        batch_size=batch_size,
        requests_per_minute=requests_per_minute,
        created_by=by,
    )
    return hook


@transaction.atomic
def webhook_update(
    *,
    hook: Webhook,
    name: str,
    url: str,
    events: Sequence[str],
    batch_size: int,
    requests_per_minute: int,
) -> Webhook:
    """Change a hook's name, URL, events and pace (its secret and outbox stay)."""
    hook.name = name.strip()[:100] or hook.name
    hook.url = url_check(url)
    hook.events = _events_clean(events)
    hook.batch_size = batch_size
    hook.requests_per_minute = requests_per_minute
    hook.save(update_fields=["name", "url", "events", "batch_size", "requests_per_minute"])
    return hook


@transaction.atomic
def webhook_enable(*, hook: Webhook) -> Webhook:
    """Switch a hook on again: failures forgotten, the next request due now, delivery woken."""
    hook.is_active = True
    hook.consecutive_failures = 0
    hook.next_attempt_at = None
    hook.disabled_at = None
    hook.disabled_reason = ""
    hook.save(
        update_fields=[
            "is_active",
            "consecutive_failures",
            "next_attempt_at",
            "disabled_at",
            "disabled_reason",
        ]
    )
    hook_id = hook.pk
    transaction.on_commit(lambda: wake([hook_id]))
    return hook


@transaction.atomic
def webhook_disable(*, hook: Webhook, reason: str) -> Webhook:
    """Switch a hook off by hand; events keep being recorded only while it is active."""
    hook.is_active = False
    hook.disabled_at = timezone.now()
    hook.disabled_reason = reason[:500]
    hook.save(update_fields=["is_active", "disabled_at", "disabled_reason"])
    return hook


@transaction.atomic
def webhook_delete(*, hook: Webhook) -> None:
    """Remove a hook with its outbox and delivery log."""
    hook.delete()


def webhook_test_request(*, hook: Webhook) -> None:
    """Ask for a test event to the hook (sent by a task, after the response)."""
    enqueue_on_commit("webhooks.tasks.send_test", (hook.pk,), what=f"webhook {hook.pk}'s test")
