"""Celery tasks of the agreement app: ids in, look the rows up, call a service; safe to run twice
(CONTRIBUTING.md, "Celery tasks")."""

from __future__ import annotations

import logging

from celery import shared_task

from agreement import services, stored

logger = logging.getLogger(__name__)


@shared_task(name="agreement.tasks.refresh_agreement")
def refresh_agreement(stage_id: int) -> int | None:
    """Recompute a stage's agreement snapshots (coalesced: see services.stage_agreement_refresh).
    Returns the number of snapshots stored, or None when another refresh held the stage."""
    snapshots = services.stage_agreement_refresh(stage_id=stage_id)
    return None if snapshots is None else len(snapshots)


@shared_task(name="agreement.tasks.sweep_agreement")
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


@shared_task(name="agreement.tasks.store_stage_page")
def store_stage_page(stage_id: int) -> bool:
    """Store a large stage's counts, progress series and figures (agreement.stored)."""
    return stored.stage_page_store(stage_id=stage_id)
