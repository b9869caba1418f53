"""Webhooks: a project's subscriptions, the outbox of events waiting for them, the delivery log.

A ``Webhook`` is a URL of a project subscribed to kinds of project event
(``annotation.events.PROJECT_EVENT_KINDS``). A ``WebhookEvent`` is one event for one hook,
written in the transaction of the work it reports (the outbox): the delivery task sends a hook's
pending events oldest first, a batch per request, and marks them delivered in the transaction
that logged the attempt (a ``WebhookDelivery``). See webhooks/README.md.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Webhook(models.Model):
    """A URL of a project that receives the events it subscribed to, signed with ``secret``."""

    project = models.ForeignKey("annotation.Project", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)
    url = models.URLField(max_length=2000)
    #: The HMAC-SHA256 key of the signatures; shown once, when the hook is created.
    secret = models.CharField(max_length=100)
    #: The kinds of project event it receives (keys of annotation.events.PROJECT_EVENT_KINDS).
    events = models.JSONField(default=list)
    is_active = models.BooleanField(default=True)
    #: At most this many events in one request.
    batch_size = models.PositiveIntegerField(default=100)
    #: At most this many requests a minute (the receiver's pace).
    requests_per_minute = models.PositiveIntegerField(default=60)
    #: Failed attempts since the last success; the hook is disabled when it reaches
    #: settings.WEBHOOKS_DISABLE_AFTER_FAILURES.
    consecutive_failures = models.PositiveIntegerField(default=0)
    #: No request before this moment (the pace, or the back-off after a failure).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(batch_size__gte=1) & Q(batch_size__lte=1000),
                name="webhook_batch_size_range",
            ),
            models.CheckConstraint(
                condition=Q(requests_per_minute__gte=1) & Q(requests_per_minute__lte=6000),
                name="webhook_requests_per_minute_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} → {self.url}"


class WebhookDelivery(models.Model):
    """One request to a hook (an attempt at a batch, or a test event) and how it went."""

    class Outcome(models.TextChoices):
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"
        REFUSED = "refused", "Refused (address not allowed)"

    hook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    delivery_id = models.UUIDField(default=uuid.uuid4, editable=False)
    started_at = models.DateTimeField()
    #: 1 for the first attempt at these events, n for the n-th.
    attempt = models.PositiveIntegerField(default=1)
    event_count = models.PositiveIntegerField(default=0)
    is_test = models.BooleanField(default=False)
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    response_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [models.Index(fields=["hook", "-id"], name="webhook_delivery_log")]

    def __str__(self) -> str:
        return f"{self.hook_id} #{self.pk}: {self.outcome} {self.status_code or ''}"


class WebhookEvent(models.Model):
    """One event waiting for (or sent to) one hook: the outbox."""

    hook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="outbox")
    #: The event's id in the body: a receiver drops an id it has seen (deliveries may repeat).
    event_id = models.UUIDField(default=uuid.uuid4, editable=False, unique=True)
    kind = models.CharField(max_length=64)
    data = models.JSONField(default=dict)
    occurred_at = models.DateTimeField()
    #: Events of the same fact share a key and are kept once per hook ("stage.completed").
    dedupe_key = models.CharField(max_length=200, blank=True, default="")
    delivered_at = models.DateTimeField(null=True, blank=True)
    delivery = models.ForeignKey(
        WebhookDelivery, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["pk"]
        indexes = [
            models.Index(
                fields=["hook", "id"],
                condition=Q(delivered_at__isnull=True),
                name="webhook_event_pending",
            )
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["hook", "dedupe_key"],
                condition=~Q(dedupe_key=""),
                name="webhook_event_dedupe",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} for hook {self.hook_id}"
