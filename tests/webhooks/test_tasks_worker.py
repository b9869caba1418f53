"""The real Celery worker delivering webhooks: a worker killed while a batch's request is in
flight loses nothing — its transaction dies with it, the events stay pending, and the sweep
sends them through the next worker (at least once: the interrupted batch may arrive twice)."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from tests.conftest import Workers, wait_for
from tests.factories import make_project
from webhooks.models import Webhook, WebhookEvent
from webhooks.outbox import events_record
from webhooks.signing import secret_new
from webhooks.tasks import sweep

pytestmark = [pytest.mark.celery_worker, pytest.mark.postgres]

WORKER_ENV = {
    "WEBHOOKS_ALLOWED_NETWORKS": "127.0.0.0/8",
    "WEBHOOKS_TIMEOUT_SECONDS": "30",
    "WEBHOOKS_BACKOFF_SECONDS": "0",
    "CELERY_VISIBILITY_TIMEOUT": "3",
}


@pytest.fixture
def workers(transactional_db, postgres):
    if not os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs Redis: run through `make test` (scripts/with-services.sh)")
    from django.core.cache import cache

    from rungwise.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    app.control.purge()
    cache.clear()
    pool = Workers(prefix="webhooks", **WORKER_ENV)
    yield pool
    pool.stop_all()
    app.conf.task_always_eager = previous
    app.control.purge()


def pending(hook: Webhook) -> int:
    return WebhookEvent.objects.filter(hook=hook, delivered_at__isnull=True).count()


def test_a_worker_killed_mid_delivery_loses_no_event(workers, receiver):
    first = workers.start()
    hook = Webhook.objects.create(
        project=make_project(),
        name="Lab",
        url=receiver.url,
        secret=secret_new(),
        events=["import.finished"],
        batch_size=50,
        requests_per_minute=6000,
    )
    receiver.answer(("hold", None))  # the first request waits until the worker is dead
    for index in range(120):
        events_record("import.finished", hook.project_id, {"import": {"id": index}})
    # Recorded outside a transaction: the wake went out at once, to the worker.
    assert receiver.held.wait(60), "the worker never sent the first batch"
    workers.kill(first)
    receiver.release.set()
    connection.close()
    assert pending(hook) == 120  # the killed step's transaction rolled back
    workers.start()
    sweep()  # what the beat does every minute: wake hooks with events due
    wait_for(lambda: pending(hook) == 0, timeout=60)
    ids = set(WebhookEvent.objects.filter(hook=hook).values_list("event_id", flat=True))
    received = receiver.event_ids()
    assert {str(event_id) for event_id in ids} == set(received)
    assert len(received) >= 120  # at least once: the interrupted batch may come again
    assert all(len(request.event_ids) <= 50 for request in receiver.requests)
