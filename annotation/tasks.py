"""Celery tasks: ids in, look the rows up, call a service; safe to run twice (CONVENTIONS 4)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from annotation import events, services

logger = logging.getLogger(__name__)


@shared_task(name="annotation.tasks.resolve_item_stage")
def resolve_item_stage(item_stage_id: int) -> str | None:
    """Resolve a completed item stage, then tell the listeners (annotation.events). Runs
    again harmlessly (a redelivered message after a worker was killed finds the item resolved and
    only re-marks the stage, which costs at most one extra no-op refresh)."""
    resolution = services.item_stage_resolve(item_stage_id=item_stage_id)
    events.item_stages_resolved([item_stage_id])
    return resolution.status if resolution else None


@shared_task(name="annotation.tasks.reclaim_expired_leases")
def reclaim_expired_leases() -> int:
    return services.leases_reclaim_expired()


@shared_task(name="annotation.tasks.sweep_unresolved")
def sweep_unresolved(older_than_seconds: float | None = None) -> int:
    """Resolve item stages whose resolve message was lost (broker outage, worker killed).
    Runs the service directly, so it works while the broker is still unreliable."""
    if older_than_seconds is None:
        older_than_seconds = settings.SWEEP_GRACE_SECONDS
    ids = services.item_stages_unresolved(older_than_seconds=older_than_seconds)
    for item_stage_id in ids:
        services.item_stage_resolve(item_stage_id=item_stage_id)
    if ids:
        events.item_stages_resolved(ids)
        logger.warning("sweep resolved %d item stages whose message was lost", len(ids))
    return len(ids)
