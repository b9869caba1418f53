"""Leases once handed out: their expiry and release, their deletion, and the one read of an
assignment that a submit or a skip starts from (with its item stage and stage, the annotator's
standing and the gates' flag: LockedAssignment), row locks included.

Why hand-written SQL for that read (CONTRIBUTING.md, "SQL you can change safely"): it is on the
hot path (every submit), one statement built once per process instead of a queryset compiled on
every request (annotation/sql.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from functools import cache
from typing import Any, NamedTuple, cast

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import (
    Case,
    CharField,
    DateTimeField,
    F,
    PositiveIntegerField,
    Q,
    Value,
    When,
)
from django.utils import timezone

from annotation import gates, sql
from annotation.access import NO_SUCH_ASSIGNMENT
from annotation.errors import NotFound
from annotation.models import Assignment, ItemStage, Membership, Project, Role, Stage


def _release_assignments(assignment_ids: list[int], *, status: str, reason: str = "") -> int:
    """Mark active assignments `status` and give their slots back. Caller holds a transaction."""
    if not assignment_ids:
        return 0
    locked = list(
        Assignment.objects.select_for_update(skip_locked=True)
        .filter(pk__in=assignment_ids, status=Assignment.Status.ACTIVE)
        .values_list("pk", "item_stage_id")
    )
    if not locked:
        return 0
    Assignment.objects.filter(pk__in=[pk for pk, _ in locked]).update(
        status=status, finished_at=timezone.now(), skip_reason=reason
    )
    per_item_stage: dict[int, int] = defaultdict(int)
    for _, item_stage_id in locked:
        per_item_stage[item_stage_id] += 1
    now = timezone.now()
    for item_stage_id, count in per_item_stage.items():
        _slots_give_back(item_stage_id, count, now=now)
    _resolve_closed_by_release(list(per_item_stage), now)
    return len(locked)


def _slots_give_back(item_stage_id: int, count: int, *, now: Any) -> None:
    """``count`` leases of the item stage ended without an answer: their slots go back
    (``leased_count`` − count). On an item stage stopped early (``ItemStage.stopped_at``,
    annotation/services/stages.py ``item_stage_stop``) the slots go with the leases instead
    (``target_count`` − count as well, so nobody is offered the item again), and the last of
    its leases ending closes it for resolution, as the last answer would (state RESOLVING,
    ``completed_at`` = ``now``; the caller enqueues the resolution: _resolve_closed_by_release).
    One UPDATE whose conditions read the row as it was. Caller holds a transaction."""
    stopped = Q(stopped_at__isnull=False)
    last = stopped & Q(state=ItemStage.State.OPEN, leased_count=count, submitted_count__gt=0)
    ItemStage.objects.filter(pk=item_stage_id).update(
        leased_count=F("leased_count") - count,
        target_count=Case(
            When(stopped, then=F("target_count") - count),
            default=F("target_count"),
            output_field=PositiveIntegerField(),
        ),
        state=Case(
            When(last, then=Value(ItemStage.State.RESOLVING)),
            default=F("state"),
            output_field=CharField(),
        ),
        completed_at=Case(
            When(last, then=Value(now)), default=F("completed_at"), output_field=DateTimeField()
        ),
    )


def _resolve_closed_by_release(item_stage_ids: list[int], now: Any) -> None:
    """Enqueue, after commit, the resolution of the stopped item stages among
    ``item_stage_ids`` that a released lease just closed (_slots_give_back with this ``now``)."""
    if not item_stage_ids:
        return
    closed = ItemStage.objects.filter(
        pk__in=item_stage_ids,
        stopped_at__isnull=False,
        state=ItemStage.State.RESOLVING,
        completed_at=now,
    ).values_list("pk", flat=True)
    from annotation.services.common import enqueue_on_commit
    from annotation.tasks import resolve_item_stage

    for item_stage_id in closed:
        enqueue_on_commit(resolve_item_stage, item_stage_id)


@transaction.atomic
def assignments_delete(*, assignment_ids: Sequence[int]) -> int:
    """Delete assignments (the admin's delete, one or many), giving the slot of every active
    one back in the same transaction, as a revoked lease would: ``leased_count`` never counts
    a lease that no longer exists, so the slot is free at once instead of after the repair
    sweep. Locks the assignments first, waiting for a submit or a renewal that holds one, so
    no lease is released twice or deleted under a submit. Returns the number deleted.
    Raises ``django.db.models.ProtectedError`` (and changes nothing) when an assignment has
    annotations: work is never deleted with the lease behind it."""
    ids = list(
        Assignment.objects.select_for_update()
        .filter(pk__in=list(assignment_ids))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    _release_assignments(ids, status=Assignment.Status.REVOKED, reason="deleted")
    deleted, _ = Assignment.objects.filter(pk__in=ids).delete()
    return deleted


@transaction.atomic
def leases_reclaim_expired(
    *, stage_id: int | None = None, now: Any = None, limit: int = 5000
) -> int:
    """Expire leases past their time and free their slots. Safe to run concurrently: rows
    another transaction holds are skipped and picked up by the next run."""
    now = now or timezone.now()
    expired = Assignment.objects.filter(status=Assignment.Status.ACTIVE, expires_at__lt=now)
    if stage_id is not None:
        expired = expired.filter(stage_id=stage_id)
    ids = list(expired.order_by("expires_at").values_list("pk", flat=True)[:limit])
    return _release_assignments(ids, status=Assignment.Status.EXPIRED)


def may_annotate_sql(annotator: str) -> str:
    """SQL: whether ``annotator`` (a column or a parameter) may annotate in the stage ``st`` of
    the project ``p`` (the statement's aliases): an active, unpaused annotator of an active
    stage of an active project. One rule for a submit's read and a wave of ready answers
    (annotation.services.batch)."""
    m, st, p = sql.quoted(Membership, "m"), sql.quoted(Stage, "st"), sql.quoted(Project, "p")
    return (
        f"EXISTS (SELECT 1 FROM {sql.table(Membership)} m WHERE {m.project_id} = {st.project_id}"
        f" AND {m.user_id} = {annotator} AND {m.role} = '{Role.ANNOTATOR.value}'"
        f" AND NOT {m.is_paused}) AND {st.is_active} AND {p.is_active}"
    )


@cache
def assignment_read_select(vendor: str) -> tuple[str, str]:
    """SQL of the read a submit or a skip starts from (_locked_assignment): its columns — the
    assignment's, its item stage's and stage's, whether its annotator may still annotate there
    (an active, unpaused annotator of an active stage of an active project) and whether an
    annotator gate governs them (annotation.gates) — and the joins they come from (the aliases
    ``a``, ``s``, ``st``, ``p``, in parentheses, so a statement may LEFT JOIN them as one).
    With assignment_read_row, for a statement that reads the assignment together with
    something else (api/views/annotate_lean.py: with the token)."""
    a, s = sql.quoted(Assignment, "a"), sql.quoted(ItemStage, "s")
    st, p = sql.quoted(Stage, "st"), sql.quoted(Project, "p")
    may_annotate = may_annotate_sql(a.annotator_id)
    governed = gates.governed_sql(annotator=a.annotator_id, project=st.project_id)
    select = (
        f"{sql.columns(Assignment, 'a')}, {sql.columns(ItemStage, 's')},"
        f" {sql.columns(Stage, 'st')}, CASE WHEN {may_annotate} THEN 1 ELSE 0 END AS may_annotate,"
        f" {governed} AS governed"
    )
    joins = (
        f"({sql.table(Assignment)} a"
        f" JOIN {sql.table(ItemStage)} s ON {s.id} = {a.item_stage_id}"
        f" JOIN {sql.table(Stage)} st ON {st.id} = {a.stage_id}"
        f" JOIN {sql.table(Project)} p ON {p.id} = {st.project_id})"
    )
    return select, joins


def assignment_read_width() -> int:
    """How many columns assignment_read_select's select list gives."""
    return sql.width(Assignment) + sql.width(ItemStage) + sql.width(Stage) + 2


@cache
def _locked_assignment_sql(vendor: str, locked: bool = True) -> str:
    """The read of _locked_assignment in one statement (assignment_read_select); the
    assignment's and the item stage's rows locked unless ``locked`` is False."""
    select, joins = assignment_read_select(vendor)
    a = sql.quoted(Assignment, "a")
    return (
        f"SELECT {select} FROM {joins}"
        f" WHERE {a.id} = %(assignment)s{sql.lock('a', 's') if locked else ''}"
    )


class LockedAssignment(NamedTuple):
    """An assignment as a submit or a skip reads it (_locked_assignment)."""

    #: The assignment, with ``item_stage`` and ``stage`` loaded.
    assignment: Assignment
    #: Whether its annotator may still annotate there: an active, unpaused annotator of an
    #: active stage of an active project.
    may_annotate: bool
    #: Whether an annotator gate governs its annotator in the project (annotation.gates).
    governed: bool


def _locked_assignment(*, assignment_id: int, user: User, locked: bool = True) -> LockedAssignment:
    """The user's assignment with its item stage and stage; the assignment's and the item
    stage's rows locked unless ``locked`` is False (one statement). Foreign and unknown ids:
    the same 404."""
    row = None
    if sql.in_range(Assignment, assignment_id):
        row = sql.fetchone(
            _locked_assignment_sql(connection.vendor, locked), {"assignment": assignment_id}
        )
    read = assignment_read_row(row, 0, user)
    if read is None:
        raise NotFound(NO_SUCH_ASSIGNMENT)
    return read


def assignment_read_row(
    row: Sequence[Any] | None, start: int, user: User
) -> LockedAssignment | None:
    """The read of _locked_assignment from ``row[start:]`` (the columns of
    assignment_read_select), or None when there is no assignment there (no row, or its id
    NULL) or it is not `user`'s: the caller's 404 (NO_SUCH_ASSIGNMENT), whichever it was."""
    if row is None or row[start] is None:
        return None
    instances, extras = sql.unpack(
        row[start : start + assignment_read_width()],
        (Assignment, ItemStage, Stage),
        ("may_annotate", "governed"),
    )
    assignment = cast(Assignment, instances[0])
    if assignment.annotator_id != user.pk:
        return None
    assignment.item_stage = cast(ItemStage, instances[1])
    assignment.stage = cast(Stage, instances[2])
    return LockedAssignment(
        assignment=assignment,
        may_annotate=bool(extras["may_annotate"]),
        governed=bool(extras["governed"]),
    )


def _gate_assignment(assignment_id: int, user: User, action: str) -> LockedAssignment | None:
    """Ask the annotator gates about a write on an assignment (annotation.gates.check), before
    its rows are locked: read it unlocked, and only when a gate governs its annotator.

    Returns the read when the caller may use it as its locked read: on a database without row
    locks (SQLite: the transaction holds the database's write lock from its start, so nothing
    changed since) and when no gate ran (a gate may change the assignment); otherwise None."""
    read = _locked_assignment(assignment_id=assignment_id, user=user, locked=False)
    if read.governed:
        gates.check(annotator_id=user.pk, stage=read.assignment.stage, action=action)
        return None
    return None if connection.features.has_select_for_update else read
