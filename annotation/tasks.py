"""Celery tasks: ids in, look the rows up, call a service; safe to run twice (CONTRIBUTING.md, "Celery tasks")."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from annotation import events, search, services

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
    resolved = _resolve_each(ids, failed="sweep: could not resolve item stage %s")
    if resolved:
        logger.warning("sweep resolved %d item stages whose message was lost", len(resolved))
    return len(resolved)


@shared_task(name="annotation.tasks.repair_counters")
def repair_counters() -> int:
    """Recount slot counters that drifted from the rows (annotation.services.
    item_stage_counters_repair)."""
    return services.item_stage_counters_repair()


@shared_task(name="annotation.tasks.item_search_index")
def item_search_index() -> int:
    """Index the items queued for the data manager's search (annotation/search.py), a chunk
    per transaction, until the queue is empty. Sent when an import commits and every minute
    by beat; safe to run twice or twice at once (queue rows are taken with SKIP LOCKED)."""
    return search.item_search_index()


@shared_task(name="annotation.tasks.store_pipeline_counts")
def store_pipeline_counts(project_id: int) -> bool:
    """Store a large project's pipeline counts (annotation/pipeline_counts.py)."""
    from annotation.pipeline_counts import pipeline_counts_store

    return pipeline_counts_store(project_id=project_id)


@shared_task(name="annotation.tasks.resolve_item_stages")
def resolve_item_stages(item_stage_ids: list[int]) -> int:
    """Resolve a batch of completed item stages (annotation.services.resolution_publish sends
    one message for many), then tell the listeners once. Safe to run twice, as
    resolve_item_stage is; one item stage that fails is logged and left RESOLVING for the sweep,
    and the rest of the batch is resolved. Returns how many were resolved."""
    return len(
        _resolve_each(item_stage_ids, failed="could not resolve item stage %s; the sweep will")
    )


def _resolve_each(item_stage_ids: list[int], *, failed: str) -> list[int]:
    """Resolve each item stage, then tell the listeners once about those resolved. One bad
    row (a stage saved with a setting its plug-in no longer knows, say) must not stop the rest:
    it is logged with ``failed`` (% its id) and stays RESOLVING for the next sweep."""
    resolved = []
    for item_stage_id in item_stage_ids:
        try:
            services.item_stage_resolve(item_stage_id=item_stage_id)
        except Exception:
            logger.exception(failed, item_stage_id)
        else:
            resolved.append(item_stage_id)
    if resolved:
        events.item_stages_resolved(resolved)
    return resolved
