"""Webhook tasks (CONTRIBUTING.md, "Celery tasks"): deliver a hook's events a batch at a time,
send a test event, and the beat sweep that wakes hooks whose message was lost."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.core.cache import cache

from webhooks import delivery
from webhooks.outbox import DELIVER_TASK, wake, wake_key


@shared_task(name=DELIVER_TASK)
def deliver_hook(hook_id: int) -> str:
    """One delivery step for the hook (webhooks.delivery.webhook_deliver), then the next
    message, with the pace's or back-off's countdown, while events are pending. Safe to run
    twice and concurrently: the hook's row lock lets one step run at a time, and the pace is
    read under it. A step that found the hook busy leaves the next message to its holder."""
    outcome = delivery.webhook_deliver(hook_id=hook_id)
    if outcome == delivery.BUSY:
        return outcome
    # Clear the mark before looking for more, so an event written from now on sends its own
    # message if this one sends none (outbox.wake).
    key = wake_key(hook_id)
    cache.delete(key)
    wait = delivery.next_wait(hook_id)
    if wait is None:
        return outcome
    if settings.CELERY_TASK_ALWAYS_EAGER and (wait > 0 or outcome != delivery.SENT):
        # Tasks in-process ignore countdowns: rescheduling would retry at once, in a loop. The
        # next event (or a page's "Send now") picks the hook up; deploy with a broker for
        # paced retries.
        return outcome
    grace = float(getattr(settings, "WEBHOOKS_WAKE_GRACE_SECONDS", 60))
    cache.set(key, 1, timeout=wait + grace)
    deliver_hook.apply_async((hook_id,), countdown=wait)
    return outcome


@shared_task(name="webhooks.tasks.send_test")
def send_test(hook_id: int) -> str:
    """The "Send test event" button's ping (webhooks.delivery.webhook_test_deliver)."""
    logged = delivery.webhook_test_deliver(hook_id=hook_id)
    return logged.outcome if logged is not None else "gone"


@shared_task(name="webhooks.tasks.sweep")
def sweep() -> int:
    """Wake every active hook with events due (a message lost with the broker or a killed
    worker); how many hooks were due."""
    due = delivery.hooks_due()
    wake(due, force=True)
    return len(due)
