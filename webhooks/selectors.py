"""Reads of the Webhooks tab: hooks with their backlog, a hook's delivery log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Q, QuerySet

from annotation.events import PROJECT_EVENT_KINDS
from annotation.models import Project
from webhooks.models import Webhook, WebhookDelivery


@dataclass(frozen=True)
class HookRow:
    """One hook as the tab lists it."""

    hook: Webhook
    pending: int
    delivered: int
    last_delivery: WebhookDelivery | None
    event_labels: list[str]

    @property
    def next_attempt_at(self) -> datetime | None:
        return self.hook.next_attempt_at


def project_hooks(project: Project) -> list[HookRow]:
    """The project's hooks, oldest first, each with its pending and delivered counts and its
    latest delivery."""
    hooks = list(
        Webhook.objects.filter(project=project).annotate(
            pending_count=Count("outbox", filter=Q(outbox__delivered_at__isnull=True)),
            delivered_count=Count("outbox", filter=Q(outbox__delivered_at__isnull=False)),
        )
    )
    latest: dict[int, WebhookDelivery] = {}
    for delivery in WebhookDelivery.objects.filter(hook__project=project).order_by(
        "hook_id", "-pk"
    ):
        latest.setdefault(delivery.hook_id, delivery)
    return [
        HookRow(
            hook=hook,
            pending=hook.pending_count,
            delivered=hook.delivered_count,
            last_delivery=latest.get(hook.pk),
            event_labels=list(hook.events or ()),
        )
        for hook in hooks
    ]


def hook_row(hook: Webhook) -> HookRow:
    """One hook with its counts (the hook's own page)."""
    counts = hook.outbox.aggregate(
        pending=Count("pk", filter=Q(delivered_at__isnull=True)),
        delivered=Count("pk", filter=Q(delivered_at__isnull=False)),
    )
    return HookRow(
        hook=hook,
        pending=counts["pending"],
        delivered=counts["delivered"],
        last_delivery=hook.deliveries.order_by("-pk").first(),
        event_labels=list(hook.events or ()),
    )


def hook_deliveries(hook: Webhook) -> QuerySet[WebhookDelivery]:
    """The hook's delivery log, newest first (the page pages it)."""
    return hook.deliveries.order_by("-pk")


def event_choices() -> list[tuple[str, str]]:
    """Every event a hook may subscribe to, with what it means."""
    return list(PROJECT_EVENT_KINDS.items())
