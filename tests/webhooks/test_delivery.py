"""Delivery against a local receiver: signed batches in order, retries after a 500 and after a
time-out with the same events, the pace, automatic disabling with the admins told, the test
event, and an address refused at connection time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from annotation.models import Role
from tests.factories import make_member, make_project
from webhooks import delivery
from webhooks.models import Webhook, WebhookDelivery, WebhookEvent
from webhooks.outbox import events_record
from webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify

pytestmark = pytest.mark.django_db

LATER = timedelta(days=1)


def make_hook(url: str, **extra) -> Webhook:
    from webhooks.signing import secret_new

    extra.setdefault("project", make_project())
    extra.setdefault("events", ["item_stage.decided", "import.finished"])
    return Webhook.objects.create(name="Lab", url=url, secret=secret_new(), **extra)


def record(hook: Webhook, count: int, kind: str = "item_stage.decided") -> list[WebhookEvent]:
    for index in range(count):
        events_record(kind, hook.project_id, {"item": {"id": index, "external_id": f"i-{index}"}})
    return list(WebhookEvent.objects.filter(hook=hook).order_by("pk"))


def step(hook: Webhook) -> str:
    """One delivery step, past any pace or back-off wait."""
    return delivery.webhook_deliver(hook_id=hook.pk, now=timezone.now() + LATER)


def test_batches_arrive_signed_in_order_and_every_event_once(receiver):
    hook = make_hook(receiver.url, batch_size=100)
    events = record(hook, 250)
    assert [step(hook) for _ in range(4)] == [delivery.SENT] * 3 + [delivery.IDLE]
    assert [len(request.event_ids) for request in receiver.requests] == [100, 100, 50]
    assert receiver.event_ids() == [str(event.event_id) for event in events]
    for request in receiver.requests:
        assert verify(
            hook.secret,
            request.body,
            request.headers[TIMESTAMP_HEADER],
            request.headers[SIGNATURE_HEADER],
        )
        assert request.document["webhook"]["id"] == hook.pk
        assert request.document["project"]["slug"] == hook.project.slug
    assert not WebhookEvent.objects.filter(hook=hook, delivered_at__isnull=True).exists()
    log = list(WebhookDelivery.objects.filter(hook=hook).order_by("pk"))
    assert [(d.outcome, d.status_code, d.event_count) for d in log] == [
        ("delivered", 200, 100),
        ("delivered", 200, 100),
        ("delivered", 200, 50),
    ]
    assert all(d.response_ms is not None for d in log)


def test_the_pace_holds_the_next_request(receiver):
    hook = make_hook(receiver.url, batch_size=10, requests_per_minute=2)
    record(hook, 20)
    assert delivery.webhook_deliver(hook_id=hook.pk) == delivery.SENT
    assert delivery.webhook_deliver(hook_id=hook.pk) == delivery.WAITING
    assert len(receiver.requests) == 1
    assert 0 < delivery.next_wait(hook.pk) <= 30


def test_a_500_is_retried_with_the_same_events_and_a_growing_wait(receiver, settings):
    settings.WEBHOOKS_BACKOFF_SECONDS = 10
    hook = make_hook(receiver.url, batch_size=5)
    record(hook, 5)
    receiver.answer(500, 503)
    for failures, wait in ((1, 10), (2, 20)):
        before = timezone.now()
        assert step(hook) == delivery.FAILED
        after = timezone.now()
        hook.refresh_from_db()
        assert hook.consecutive_failures == failures
        # Bracketed by the clock read around the step: the wait doubles.
        assert before + timedelta(seconds=wait) <= hook.next_attempt_at
        assert hook.next_attempt_at <= after + timedelta(seconds=wait)
    assert step(hook) == delivery.SENT
    ids = [request.event_ids for request in receiver.requests]
    assert ids[0] == ids[1] == ids[2]
    assert [request.document["attempt"] for request in receiver.requests] == [1, 2, 3]
    log = WebhookDelivery.objects.filter(hook=hook).order_by("pk")
    assert [(d.status_code, d.attempt) for d in log] == [(500, 1), (503, 2), (200, 3)]
    hook.refresh_from_db()
    assert hook.consecutive_failures == 0 and hook.is_active


def test_a_timeout_is_a_failure_and_the_events_go_again(receiver, settings):
    settings.WEBHOOKS_TIMEOUT_SECONDS = 0.3
    hook = make_hook(receiver.url)
    record(hook, 3)
    receiver.answer(("sleep", 1.0))
    assert step(hook) == delivery.FAILED
    failed = WebhookDelivery.objects.get(hook=hook)
    assert failed.outcome == "failed" and "timed out" in failed.error and failed.status_code is None
    assert WebhookEvent.objects.filter(hook=hook, delivered_at__isnull=True).count() == 3
    assert step(hook) == delivery.SENT
    assert receiver.requests[0].event_ids == receiver.requests[1].event_ids


def test_the_hook_is_disabled_after_repeated_failures_and_the_admins_are_told(
    receiver, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOKS_DISABLE_AFTER_FAILURES = 3
    hook = make_hook(receiver.url)
    admin = make_member(hook.project, Role.ADMIN, "hook-admin")
    admin.email = "admin@example.org"
    admin.save()
    make_member(hook.project, Role.RESEARCHER, "not-told").__class__.objects.filter(
        username="not-told"
    ).update(email="researcher@example.org")
    record(hook, 2)
    receiver.answer(500, 500, 500, 500)
    with django_capture_on_commit_callbacks(execute=True):
        outcomes = [step(hook) for _ in range(3)]
    assert outcomes == [delivery.FAILED] * 3
    hook.refresh_from_db()
    assert not hook.is_active and hook.disabled_at is not None
    assert "3 failed attempts" in hook.disabled_reason and "500" in hook.disabled_reason
    assert step(hook) == delivery.IDLE
    assert len(receiver.requests) == 3
    assert [message.to for message in mail.outbox] == [["admin@example.org"]]
    assert hook.name in mail.outbox[0].subject


def test_an_inactive_hook_records_nothing_new():
    hook = make_hook("https://93.184.215.14/hook", is_active=False)
    assert events_record("item_stage.decided", hook.project_id, {"item": {"id": 1}}) == []
    assert not WebhookEvent.objects.filter(hook=hook).exists()


def test_the_test_event_is_logged_apart_from_the_outbox(receiver):
    hook = make_hook(receiver.url, is_active=False, consecutive_failures=4)
    record_before = WebhookEvent.objects.filter(hook=hook).count()
    logged = delivery.webhook_test_deliver(hook_id=hook.pk)
    assert logged.is_test and logged.outcome == "delivered" and logged.status_code == 200
    (request,) = receiver.requests
    assert [event["type"] for event in request.document["events"]] == ["ping"]
    assert verify(
        hook.secret,
        request.body,
        request.headers[TIMESTAMP_HEADER],
        request.headers[SIGNATURE_HEADER],
    )
    hook.refresh_from_db()
    assert hook.consecutive_failures == 4 and not hook.is_active
    assert WebhookEvent.objects.filter(hook=hook).count() == record_before


def test_an_address_refused_at_delivery_is_logged_and_counted(receiver, settings):
    hook = make_hook(receiver.url)
    record(hook, 1)
    settings.WEBHOOKS_ALLOWED_NETWORKS = ()  # the operator withdrew loopback since
    assert step(hook) == delivery.FAILED
    refused = WebhookDelivery.objects.get(hook=hook)
    assert refused.outcome == "refused" and "loopback" in refused.error
    assert receiver.requests == []


def test_hooks_due_lists_active_hooks_with_pending_events_whose_time_has_come(receiver):
    due = make_hook(receiver.url)
    record(due, 1)
    waiting = make_hook(receiver.url, next_attempt_at=timezone.now() + LATER)
    record(waiting, 1)
    empty = make_hook(receiver.url)
    off = make_hook(receiver.url, is_active=False)
    WebhookEvent.objects.create(hook=off, kind="import.finished", occurred_at=timezone.now())
    assert delivery.hooks_due() == [due.pk]
    assert empty.pk not in delivery.hooks_due()


def test_backoff_doubles_up_to_its_ceiling(settings):
    settings.WEBHOOKS_BACKOFF_SECONDS = 10
    settings.WEBHOOKS_BACKOFF_MAX_SECONDS = 60
    assert [delivery.backoff_seconds(n) for n in range(1, 6)] == [10, 20, 40, 60, 60]
