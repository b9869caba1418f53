"""Agreement refresh: the coalesced recomputation of a stage's figures after resolutions, the
per-stage lock, snapshots over time, backfill, and the staleness sweep's query.

The engine tells this app that item stages were resolved through annotation.events (registered
in agreement/apps.py); nothing in the engine imports this module.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.models import ItemStage, Stage

logger = logging.getLogger(__name__)


def stages_agreement_changed(item_stage_ids: Iterable[int]) -> None:
    """The engine resolved these item stages: mark their stages' figures stale (listener of
    annotation.events.on_item_stages_resolved)."""
    stage_ids = set(
        ItemStage.objects.filter(pk__in=list(item_stage_ids)).values_list("stage_id", flat=True)
    )
    for stage_id in sorted(stage_ids):
        stage_agreement_changed(stage_id=stage_id)


# --- Agreement refresh ------------------------------------------------------------------------
#
# Coalescing protocol. Each resolution bumps Stage.agreement_changes (stage_agreement_changed);
# the figures are stale while it differs from agreement_computed_changes. Whoever sets
# agreement_refresh_queued_at from NULL (one UPDATE … WHERE … IS NULL: exactly one of any number
# of concurrent callers) enqueues refresh_agreement with a countdown, so a burst of thousands of
# resolutions becomes a handful of refreshes. A refresh takes a per-stage lock, clears the queued
# mark, notes the change counter, reads and computes, stores snapshots and the counter it saw;
# changes that arrive meanwhile queue the next refresh. A refresh that finds the lock held returns
# at once; the holder re-checks the counter when it finishes. Lost messages (broker down, worker
# killed) leave the stage stale, and the beat sweep (stages_agreement_stale) refreshes it.


def stage_agreement_changed(*, stage_id: int) -> bool:
    """Record that a stage's annotations changed (call after the change committed) and make sure
    a refresh is on its way. Returns True when this call enqueued it. Never raises for the
    broker: a failed publish is logged and left to the sweep."""
    Stage.objects.filter(pk=stage_id).update(agreement_changes=F("agreement_changes") + 1)
    return _agreement_refresh_request(stage_id)


def _agreement_refresh_request(stage_id: int, *, force: bool = False) -> bool:
    from django.conf import settings

    from agreement.tasks import refresh_agreement

    now = timezone.now()
    stages = Stage.objects.filter(pk=stage_id)
    if not force:
        stages = stages.filter(agreement_refresh_queued_at__isnull=True)
    if not stages.update(agreement_refresh_queued_at=now):
        return False
    computed_at = (
        Stage.objects.filter(pk=stage_id).values_list("agreement_computed_at", flat=True).first()
    )
    countdown = float(settings.AGREEMENT_REFRESH_DELAY)
    if computed_at is not None:
        # At most one refresh per AGREEMENT_REFRESH_INTERVAL: snapshots are a trend, not a log.
        next_allowed = computed_at + timedelta(seconds=float(settings.AGREEMENT_REFRESH_INTERVAL))
        countdown = max(countdown, (next_allowed - now).total_seconds())

    def send() -> None:
        try:
            refresh_agreement.apply_async((stage_id,), countdown=countdown)
        except Exception:
            logger.exception("could not enqueue the agreement refresh of stage %s", stage_id)
            # Let the next change try again; until then the sweep covers the stage.
            Stage.objects.filter(pk=stage_id, agreement_refresh_queued_at=now).update(
                agreement_refresh_queued_at=None
            )

    transaction.on_commit(send)
    return True


_LOCK_NAMESPACE = 0x52574147  # "RWAG": Rungwise agreement
_local_locks: dict[int, Any] = {}


class _StageLock:
    """A per-stage mutual exclusion for agreement refreshes: a PostgreSQL session advisory lock
    (released by the server if the worker dies), a process-local lock elsewhere."""

    def __init__(self, stage_id: int) -> None:
        self.stage_id = stage_id
        self.acquired = False

    def __enter__(self) -> bool:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_NAMESPACE, self.stage_id % 2**31]
                )
                self.acquired = bool(cursor.fetchone()[0])
        else:
            import threading

            lock = _local_locks.setdefault(self.stage_id, threading.Lock())
            self.acquired = lock.acquire(blocking=False)
        return self.acquired

    def __exit__(self, *exc: Any) -> None:
        if not self.acquired:
            return
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_unlock(%s, %s)", [_LOCK_NAMESPACE, self.stage_id % 2**31]
                )
        else:
            _local_locks[self.stage_id].release()


def stage_agreement_refresh(*, stage_id: int, force: bool = False) -> list[Any] | None:
    """Recompute a stage's agreement figures from all its annotations and store them as
    AgreementSnapshots (one per metric, plus the per-annotator table).

    Returns the new snapshots; [] when nothing changed since the last refresh (or the stage is
    gone); None when another refresh of the stage holds the lock (it re-checks when done). Safe
    to run twice or concurrently: the lock serialises refreshes of one stage, and a refresh that
    finds nothing new stores nothing. ``force`` recomputes even when nothing changed.
    """
    with _StageLock(stage_id) as acquired:
        # Whatever happens next, the message that brought us here is consumed.
        Stage.objects.filter(pk=stage_id).update(agreement_refresh_queued_at=None)
        if not acquired:
            return None
        stage = Stage.objects.select_related("project").filter(pk=stage_id).first()
        if stage is None:
            return []
        seen = stage.agreement_changes
        if seen == stage.agreement_computed_changes and not force:
            return []
        now = timezone.now()
        snapshots = _agreement_snapshots(stage, as_of=None, computed_at=now, changes=seen)
        with transaction.atomic():
            _store_snapshots(snapshots, computed_at=now)
            Stage.objects.filter(pk=stage_id).update(
                agreement_computed_changes=seen, agreement_computed_at=now
            )
    if Stage.objects.filter(pk=stage_id).exclude(agreement_changes=seen).exists():
        _agreement_refresh_request(stage_id, force=True)
    return snapshots


def _agreement_snapshots(stage: Stage, *, as_of: Any, computed_at: Any, changes: int) -> list[Any]:
    """Unsaved AgreementSnapshots of a stage's annotations (up to ``as_of``)."""
    import time

    import numpy as np

    from agreement import selectors as research_selectors
    from agreement import stage_statistics
    from agreement.models import AgreementSnapshot

    started = time.perf_counter()
    votes = research_selectors.stage_votes(stage, as_of=as_of)
    read_seconds = time.perf_counter() - started
    if not len(votes):
        return []
    results = stage_statistics.stage_agreement(votes)
    quality = stage_statistics.annotator_quality(
        votes,
        gold=research_selectors.stage_gold(stage),
        skips=research_selectors.stage_skips(stage) if as_of is None else None,
    )
    compute_seconds = time.perf_counter() - started - read_seconds
    timing = {"read_seconds": round(read_seconds, 4), "compute_seconds": round(compute_seconds, 4)}
    snapshots = []
    for index, result in enumerate(results):
        data = result.to_dict()
        details = dict(data["details"])
        details.update(
            se=data["se"],
            se_null=data["se_null"],
            ci_method=data["ci_method"],
            confidence=data["confidence"],
            note=data["note"],
            changes=changes,
            **timing,
        )
        if index == 0:
            details["vote_distribution"] = stage_statistics.vote_distribution(votes)
        snapshots.append(
            AgreementSnapshot(
                stage=stage,
                metric=data["metric"],
                value=data["value"],
                ci_low=data["ci_low"],
                ci_high=data["ci_high"],
                n_items=data["n_items"],
                n_annotators=data["n_raters"] or 0,
                n_annotations=data["n_annotations"],
                details=details,
                computed_at=computed_at,
            )
        )
    rates = [row.majority_agreement for row in quality if row.majority_agreement is not None]
    snapshots.append(
        AgreementSnapshot(
            stage=stage,
            metric=research_selectors.ANNOTATOR_METRIC,
            value=float(np.median(rates)) if rates else None,
            n_items=len(set(votes.items.tolist())),
            n_annotators=sum(1 for row in quality if row.n_annotations),
            n_annotations=len(votes),
            details={
                "annotators": [row.to_dict() for row in quality],
                "changes": changes,
                **timing,
            },
            computed_at=computed_at,
        )
    )
    return snapshots


def _store_snapshots(snapshots: list[Any], *, computed_at: Any) -> list[Any]:
    """Insert the snapshots of one computation with one shared computed_at (the field is
    auto_now_add, which would give each row its own microsecond)."""
    from agreement.models import AgreementSnapshot

    created = AgreementSnapshot.objects.bulk_create(snapshots)
    AgreementSnapshot.objects.filter(pk__in=[row.pk for row in created]).update(
        computed_at=computed_at
    )
    for row in created:
        row.computed_at = computed_at
    return created


def stage_agreement_backfill(*, stage_id: int, moments: Sequence[Any]) -> int:
    """Store agreement snapshots as they would have been computed at past ``moments`` (from the
    items completed by then), e.g. for a project whose annotations were imported. Returns
    the number of snapshots stored. Skip rates are not known for past moments and are left out."""
    stage = Stage.objects.select_related("project").get(pk=stage_id)
    stored = 0
    for moment in sorted(moments):
        snapshots = _agreement_snapshots(stage, as_of=moment, computed_at=moment, changes=-1)
        stored += len(_store_snapshots(snapshots, computed_at=moment))
    return stored


def stages_agreement_stale(*, grace_seconds: float = 60, limit: int = 100) -> list[int]:
    """Ids of stages whose figures are stale and whose refresh message is missing or overdue
    (queued more than ``grace_seconds`` ago): what the sweep refreshes directly."""

    overdue = timezone.now() - timedelta(seconds=grace_seconds)
    return list(
        Stage.objects.exclude(agreement_changes=F("agreement_computed_changes"))
        .filter(
            Q(agreement_refresh_queued_at__isnull=True) | Q(agreement_refresh_queued_at__lt=overdue)
        )
        .order_by("agreement_computed_at")
        .values_list("pk", flat=True)[:limit]
    )


def stage_agreement_refresh_soon(*, stage_id: int) -> None:
    """A researcher asked for fresh figures: recompute from every annotation on the next run,
    even if nothing changed (e.g. after a kind's categories were edited)."""
    stage_agreement_changed(stage_id=stage_id)
