"""Celery tasks: ids in, look the rows up, call a service; safe to run twice (CONVENTIONS 4)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from . import services
from .models import ItemStage

logger = logging.getLogger(__name__)


@shared_task(name="annotation.tasks.resolve_item_stage")
def resolve_item_stage(item_stage_id: int) -> str | None:
    """Resolve a completed item stage, then tell its stage's agreement that it changed. Runs
    again harmlessly (a redelivered message after a worker was killed finds the item resolved and
    only re-marks the stage, which costs at most one extra no-op refresh)."""
    resolution = services.item_stage_resolve(item_stage_id=item_stage_id)
    _agreement_changed([item_stage_id])
    return resolution.status if resolution else None


def _agreement_changed(item_stage_ids: list[int]) -> None:
    stage_ids = set(
        ItemStage.objects.filter(pk__in=item_stage_ids).values_list("stage_id", flat=True)
    )
    for stage_id in sorted(stage_ids):
        services.stage_agreement_changed(stage_id=stage_id)


@shared_task(name="annotation.tasks.refresh_agreement")
def refresh_agreement(stage_id: int) -> int | None:
    """Recompute a stage's agreement snapshots (coalesced: see services.stage_agreement_refresh).
    Returns the number of snapshots stored, or None when another refresh held the stage."""
    snapshots = services.stage_agreement_refresh(stage_id=stage_id)
    return None if snapshots is None else len(snapshots)


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
        _agreement_changed(ids)
        logger.warning("sweep resolved %d item stages whose message was lost", len(ids))
    return len(ids)


@shared_task(name="annotation.tasks.run_import")
def run_import(batch_id: int) -> str:
    """Validate and write one import batch; a batch already finished is left alone."""
    from .imports import import_batch_run

    return import_batch_run(batch_id=batch_id).status


@shared_task(name="annotation.tasks.build_release")
def build_release(release_id: int) -> str:
    """Build the files of a release; a release already published or failed is left alone."""
    from .releases.services import release_build

    return release_build(release_id=release_id).status


@shared_task(name="annotation.tasks.sweep_agreement")
def sweep_agreement(grace_seconds: float = 60) -> int:
    """Refresh, directly, the stages whose figures are stale and whose refresh message is
    missing or overdue (lost with the broker, or with a killed worker)."""
    ids = services.stages_agreement_stale(grace_seconds=grace_seconds)
    refreshed = 0
    for stage_id in ids:
        if services.stage_agreement_refresh(stage_id=stage_id) is not None:
            refreshed += 1
    if refreshed:
        logger.warning("sweep refreshed the agreement of %d stages", refreshed)
    return refreshed
