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
from django.db.models import F, QuerySet
from django.utils import timezone

from agreement.models import AgreementRefresh
from annotation.models import ItemStage, Stage
from rungwise.debounce import debounce_consume, debounce_request, unqueued_or_overdue

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
# Coalescing protocol (the debounce of rungwise/debounce.py over models.AgreementRefresh, one
# row per stage). Each resolution bumps AgreementRefresh.changes (stage_agreement_changed); the
# figures are stale while it differs from computed_changes. Whoever sets queued_at from NULL
# (one UPDATE … WHERE … IS NULL: exactly one of any number of concurrent callers) enqueues
# refresh_agreement with a countdown, so a burst of thousands of resolutions becomes a handful
# of refreshes. A refresh takes a per-stage lock, clears the queued mark, notes the change
# counter, reads and computes, stores snapshots and the counter it saw; changes that arrive
# meanwhile queue the next refresh. A refresh that finds the lock held returns at once; the
# holder re-checks the counter when it finishes. Lost messages (broker down, worker killed)
# leave the stage stale, and the beat sweep (stages_agreement_stale) refreshes it.

REFRESH_TASK = "agreement.tasks.refresh_agreement"


def _refresh_row(stage_id: int) -> QuerySet[AgreementRefresh]:
    return AgreementRefresh.objects.filter(pk=stage_id)


def _refresh_rows_create(stage_ids: Iterable[int]) -> None:
    """Create the refresh rows of these stages that have none (stages that are gone are left
    out). Concurrent callers are harmless: a row another caller created meanwhile is kept."""
    missing = set(
        Stage.objects.filter(pk__in=list(stage_ids))
        .filter(agreement_refresh__isnull=True)
        .values_list("pk", flat=True)
    )
    AgreementRefresh.objects.bulk_create(
        [AgreementRefresh(stage_id=stage_id) for stage_id in sorted(missing)],
        ignore_conflicts=True,
    )


def stage_agreement_changed(*, stage_id: int) -> bool:
    """Record that a stage's annotations changed (call after the change committed) and make sure
    a refresh is on its way. Returns True when this call enqueued it. Never raises for the
    broker: a failed publish is logged and left to the sweep."""
    bump = {"changes": F("changes") + 1}
    if not _refresh_row(stage_id).update(**bump):
        # The stage's first change: its row is made now (one extra statement, once per stage).
        _refresh_rows_create([stage_id])
        if not _refresh_row(stage_id).update(**bump):
            return False  # the stage is gone
    return _agreement_refresh_request(stage_id)


def _agreement_refresh_request(stage_id: int, *, force: bool = False) -> bool:
    from django.conf import settings

    def countdown() -> float:
        delay = float(settings.AGREEMENT_REFRESH_DELAY)
        computed_at = _refresh_row(stage_id).values_list("computed_at", flat=True).first()
        if computed_at is None:
            return delay
        # At most one refresh per AGREEMENT_REFRESH_INTERVAL: snapshots are a trend, not a log.
        next_allowed = computed_at + timedelta(seconds=float(settings.AGREEMENT_REFRESH_INTERVAL))
        return max(delay, (next_allowed - timezone.now()).total_seconds())

    # A failed publish clears the mark: the next change tries again; until then the sweep
    # covers the stage.
    return debounce_request(
        _refresh_row(stage_id),
        task_name=REFRESH_TASK,
        args=(stage_id,),
        countdown=countdown,
        force=force,
        what=f"the agreement refresh of stage {stage_id}",
    )


def stages_agreement_refresh_hold(*, stage_ids: Iterable[int]) -> None:
    """Hold back the refreshes of these stages during a bulk change (e.g. a simulation that
    computes the figures once at the end): changes are still counted, but no message is sent
    until stage_agreement_refresh runs, which lifts the hold. A hold left behind is taken over
    by the sweep once its grace period has passed, as a lost message would be."""
    ids = list(stage_ids)
    _refresh_rows_create(ids)
    AgreementRefresh.objects.filter(pk__in=ids).update(queued_at=timezone.now())


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
                    "SELECT pg_try_advisory_lock(%(namespace)s, %(key)s)",
                    {"namespace": _LOCK_NAMESPACE, "key": self.stage_id % 2**31},
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
                    "SELECT pg_advisory_unlock(%(namespace)s, %(key)s)",
                    {"namespace": _LOCK_NAMESPACE, "key": self.stage_id % 2**31},
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
        debounce_consume(_refresh_row(stage_id))
        if not acquired:
            return None
        stage = Stage.objects.select_related("project").filter(pk=stage_id).first()
        if stage is None:
            return []
        state = AgreementRefresh.of_stage(stage_id)
        seen = state.changes
        if not state.stale and not force:
            return []
        now = timezone.now()
        snapshots = _agreement_snapshots(stage, as_of=None, computed_at=now, changes=seen)
        with transaction.atomic():
            _store_snapshots(snapshots, computed_at=now)
            if not _refresh_row(stage_id).update(computed_changes=seen, computed_at=now):
                # A forced refresh of a stage that never changed: its row starts here.
                _refresh_rows_create([stage_id])
                _refresh_row(stage_id).update(computed_changes=seen, computed_at=now)
        # Annotator models (agreement/aggregation): refitted with the figures, under the lock,
        # when the stage decides by one and has grown enough since the last fit.
        from agreement.aggregation.services import stage_aggregation_fit

        stage_aggregation_fit(stage_id=stage_id, force=False)
    # A large stage's stored page (agreement.stored; its row exists once a page asked for it)
    # is stored again with the new figures, here in the worker.
    from agreement import stored

    if stored.StoredStagePage.objects.filter(pk=stage_id).exists():
        stored.stage_page_store(stage_id=stage_id, redraw=True)
    if _refresh_row(stage_id).exclude(changes=seen).exists():
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

    return list(
        AgreementRefresh.objects.exclude(changes=F("computed_changes"))
        .filter(unqueued_or_overdue(grace_seconds))
        .order_by("computed_at")
        .values_list("pk", flat=True)[:limit]
    )


def stage_agreement_refresh_soon(*, stage_id: int) -> None:
    """A researcher asked for fresh figures: recompute from every annotation on the next run,
    even if nothing changed (e.g. after a kind's categories were edited)."""
    stage_agreement_changed(stage_id=stage_id)
