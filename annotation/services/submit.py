"""Submit: an annotator's answer to the item they hold, stored as the first version of their
annotation, the slot moved from leased to submitted and the item stage closed at its target.
The second half of the hot path: on PostgreSQL one read and one write statement with no
transaction around them in the common case (_annotation_submit_at_once), a locked transaction
for every other one (_annotation_submit).

Why hand-written SQL (CONTRIBUTING.md, "SQL you can change safely"): the write is one statement
of data-modifying CTEs (the assignment marked, the slot moved, the annotation inserted), which
the ORM cannot say, and compiling querysets on every request cost more CPU than PostgreSQL
spent running them (annotation/sql.py)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation import events, gates, sql
from annotation.errors import ApplicationError, Conflict, PermissionDenied
from annotation.inputs import check_payload, clean_client_info
from annotation.kinds import KindContext, get_kind
from annotation.models import Annotation, Assignment, ItemStage
from annotation.services import resolution_publish
from annotation.services.common import enqueue_on_commit
from annotation.services.leases import LockedAssignment, _gate_assignment, _locked_assignment

#: The longest time an answer may say it took (the item screen clamps the browser's figure to it).
MAX_SECONDS_SPENT = 7 * 24 * 3600


def _check_seconds_spent(seconds_spent: float | None) -> None:
    """One rule for a submit and a change: a time spent, if given, is within a week."""
    if seconds_spent is not None and not (0 <= seconds_spent < MAX_SECONDS_SPENT):
        raise ApplicationError(
            "seconds_spent must be between 0 and a week.", {"seconds_spent": seconds_spent}
        )


def annotation_submit(
    *,
    assignment_id: int,
    annotator: User,
    payload: Mapping[str, Any],
    seconds_spent: float | None = None,
    client_info: Mapping[str, Any] | None = None,
    read: LockedAssignment | None = None,
) -> tuple[Annotation, bool]:
    """Store an annotation for the annotator's lease; returns (annotation, created).

    `read`: the assignment as the caller already read it, unlocked, in a statement of its own
    (annotation.services.leases.assignment_read_select, read as assignment_read_row: None for
    an id that is unknown or someone else's, then read again here and refused alike); the
    common case on PostgreSQL then needs no read of its own. Only on PostgreSQL: elsewhere the
    locked path reads in its transaction.

    Idempotent: a retried submit for the same assignment returns the stored annotation and
    `created=False`, whatever payload it carries. A lease that expired is still accepted while
    its slot is free; otherwise 409. When the item stage reaches its target, resolution is
    enqueued after commit, batched with others (annotation.services.resolution_publish; the beat
    sweep repairs a lost message). After commit, the listeners of stored answers are told
    (annotation.events.on_answers_stored); a retry that stored nothing tells no one.
    """
    payload = check_payload(payload)
    client_info = clean_client_info(client_info)
    try:
        if connection.vendor == "postgresql":
            if not connection.in_atomic_block:
                stored = _annotation_submit_at_once(
                    assignment_id, annotator, payload, seconds_spent, client_info, read
                )
            else:
                with transaction.atomic():  # a savepoint: a failure leaves the caller's intact
                    stored = _annotation_submit_at_once(
                        assignment_id, annotator, payload, seconds_spent, client_info
                    )
            if stored is not None:
                return stored, True
        return _annotation_submit(assignment_id, annotator, payload, seconds_spent, client_info)
    except IntegrityError:
        # Two identical submits raced past the status check on different connections before
        # one committed; the unique assignment on Annotation stopped the second.
        stored = Annotation.objects.filter(assignment_id=assignment_id).first()
        if stored is None:
            raise
        return stored, False


def _validated(
    assignment: Assignment,
    annotator: User,
    payload: Mapping[str, Any],
    seconds_spent: float | None,
) -> Mapping[str, Any]:
    """The payload as the stage's kind cleans it (or its error), the time spent checked."""
    stage = assignment.stage
    clean = get_kind(stage.kind).validate(
        payload if isinstance(payload, Mapping) else {},
        KindContext(stage=stage, item_stage=assignment.item_stage, annotator_id=annotator.pk),
    )
    _check_seconds_spent(seconds_spent)
    return clean


def _annotation_submit_at_once(
    assignment_id: int,
    annotator: User,
    payload: Mapping[str, Any],
    seconds_spent: float | None,
    client_info: Mapping[str, Any] | None,
    read: LockedAssignment | None = None,
) -> Annotation | None:
    """The common submit on PostgreSQL — a lease still held, by an annotator who may annotate —
    as one read and one write statement, with no transaction around them: the write marks the
    assignment submitted only if it is still active (a retry, an expiry or a withdrawal that
    got there first makes it change nothing), and only then moves the slot and stores the
    annotation (_submit_sql). Returns None, having stored nothing, in every other case: the
    caller then takes the locked path (_annotation_submit), which decides each of them.
    `read`: annotation_submit's (the same unlocked read, made by the caller), if any."""
    if read is None or read.assignment.pk != assignment_id:
        read = _locked_assignment(assignment_id=assignment_id, user=annotator, locked=False)
    assignment = read.assignment
    if (
        assignment.status != Assignment.Status.ACTIVE
        or not read.may_annotate
        or read.governed  # the gates decide, in the locked path's transaction
    ):
        return None
    clean = _validated(assignment, annotator, payload, seconds_spent)
    return _submit_statement(assignment, annotator, clean, seconds_spent, client_info)


def _submit_statement(
    assignment: Assignment,
    annotator: User,
    clean: Any,
    seconds_spent: float | None,
    client_info: Mapping[str, Any] | None,
) -> Annotation | None:
    """Run the one-statement submit (_submit_sql) of a validated payload on an active lease:
    the annotation it stored (its first version), with the item stage's resolution enqueued
    when it filled; None, having stored nothing, when the lease was no longer active. Shared by
    the submit's common case and a model rater's wave (annotation.services.batch)."""
    now = timezone.now()
    json_field = Annotation._meta.get_field("payload")
    row = sql.fetchone(
        _submit_sql(connection.vendor),
        {
            "assignment": assignment.pk,
            "active": Assignment.Status.ACTIVE,
            "submitted": Assignment.Status.SUBMITTED,
            "resolving": ItemStage.State.RESOLVING,
            "now": now,
            "payload": json_field.get_db_prep_save(clean, connection),
            "seconds": seconds_spent,
            "client_info": json_field.get_db_prep_save(dict(client_info or {}), connection),
        },
    )
    if row is None:
        return None
    annotation_id, complete = row
    annotation = _first_version(assignment, annotator, clean, seconds_spent, client_info, now)
    annotation.pk, annotation._state.adding = annotation_id, False
    if complete:
        _resolve_on_commit(assignment.item_stage_id)
    _announce_on_commit(assignment)
    return annotation


def _resolve_on_commit(item_stage_id: int) -> None:
    """Have a completed item stage resolved after commit: in the next batched message when this
    process batches them (annotation.services.resolution_publish), else in a message of its own."""
    if resolution_publish.batching():
        resolution_publish.resolution_batch_on_commit(item_stage_id)
        return
    from annotation.tasks import resolve_item_stage

    enqueue_on_commit(resolve_item_stage, item_stage_id)


def _announce_on_commit(assignment: Assignment) -> None:
    """Tell the stored-answer listeners (annotation.events.on_answers_stored) after commit (at
    once outside a transaction) that the assignment's item stage got its answer. Nothing when
    no one listens, so the hot path pays for the event only where a plug-in asked for it."""
    if not events.has_stored_listeners():
        return
    stage, item_stage_id = assignment.stage, assignment.item_stage_id
    transaction.on_commit(lambda: events.answers_stored(stage, [item_stage_id]))


def _first_version(
    assignment: Assignment,
    annotator: User,
    clean: Mapping[str, Any],
    seconds_spent: float | None,
    client_info: Mapping[str, Any] | None,
    now: Any,
) -> Annotation:
    """The annotation a submit stores (not saved), and its assignment marked submitted."""
    assignment.status, assignment.finished_at = Assignment.Status.SUBMITTED, now
    return Annotation(
        item_stage=assignment.item_stage,
        assignment=assignment,
        annotator=annotator,
        payload=clean,
        seconds_spent=seconds_spent,
        client_info=dict(client_info or {}),
        created_at=now,
        round=assignment.round,
        phase=assignment.phase,
        item_version=assignment.item_version,
    )


@cache
def _submit_sql(vendor: str) -> str:
    """The write of _annotation_submit_at_once: ``done`` marks the assignment submitted if it
    is still active (its row lock makes a concurrent retry, expiry or withdrawal wait, then find
    it changed); the slot moves from leased to submitted, closing the item stage at its target,
    and the annotation is inserted only from what ``done`` returned. Returns (annotation id,
    whether the item stage is now complete), or no row when the assignment was not active."""
    done, slot, stored = sql.quoted(Assignment), sql.quoted(ItemStage), sql.quoted(Annotation)
    # The CTE ``done`` returns the assignment's columns under their own (quoted) names.
    return f"""
        WITH done AS (
            UPDATE {sql.table(Assignment)} SET {done.status} = %(submitted)s,
                {done.finished_at} = %(now)s
            WHERE {done.id} = %(assignment)s AND {done.status} = %(active)s
            RETURNING {done.id}, {done.item_stage_id}, {done.annotator_id}, {done.round},
                {done.phase}, {done.item_version}
        ), slot AS (
            UPDATE {sql.table(ItemStage)} SET
                {slot.submitted_count} = {slot.submitted_count} + 1,
                {slot.leased_count} = {slot.leased_count} - 1,
                {slot.state} = CASE WHEN {slot.submitted_count} + 1 >= {slot.target_count}
                        THEN %(resolving)s ELSE {slot.state} END,
                {slot.completed_at} = CASE WHEN {slot.submitted_count} + 1 >= {slot.target_count}
                               THEN %(now)s ELSE {slot.completed_at} END
            WHERE {slot.id} = (SELECT {done.item_stage_id} FROM done)
            RETURNING {slot.submitted_count} >= {slot.target_count} AS complete
        ), stored AS (
            INSERT INTO {sql.table(Annotation)}
                ({stored.item_stage_id}, {stored.assignment_id}, {stored.annotator_id},
                 {stored.external_rater}, {stored.payload}, {stored.seconds_spent},
                 {stored.client_info}, {stored.created_at}, {stored.round}, {stored.phase},
                 {stored.item_version})
            SELECT {done.item_stage_id}, {done.id}, {done.annotator_id}, '', %(payload)s,
                   %(seconds)s, %(client_info)s, %(now)s, {done.round}, {done.phase},
                   {done.item_version}
            FROM done
            RETURNING {stored.id}
        )
        SELECT stored.{stored.id}, slot.complete FROM stored CROSS JOIN slot
        """


@transaction.atomic
def _annotation_submit(
    assignment_id: int,
    annotator: User,
    payload: Mapping[str, Any],
    seconds_spent: float | None,
    client_info: Mapping[str, Any] | None,
) -> tuple[Annotation, bool]:
    read = _gate_assignment(assignment_id, annotator, gates.SUBMIT) or _locked_assignment(
        assignment_id=assignment_id, user=annotator
    )
    assignment = read.assignment
    if assignment.status == Assignment.Status.SUBMITTED:
        return Annotation.objects.get(assignment=assignment), False
    if assignment.status == Assignment.Status.SKIPPED:
        raise Conflict("You skipped this item, so it can no longer be submitted.")
    if assignment.status == Assignment.Status.REVOKED:
        raise PermissionDenied(
            "This item was withdrawn from you: your annotation in this project is paused or "
            "ended. Nothing was saved; contact the project's researchers."
        )
    if not read.may_annotate:
        raise Conflict(
            "This stage is closed, or you are no longer an annotator here: nothing was saved."
        )
    clean = _validated(assignment, annotator, payload, seconds_spent)
    item_stage = assignment.item_stage
    holds_slot = assignment.status == Assignment.Status.ACTIVE
    if not holds_slot and (
        item_stage.state != ItemStage.State.OPEN
        or item_stage.submitted_count + item_stage.leased_count >= item_stage.target_count
    ):
        raise Conflict(
            f"Your lease on this item expired at {assignment.expires_at:%H:%M:%S} UTC and the "
            "item went to other annotators. Ask for the next item.",
            {"expires_at": assignment.expires_at.isoformat()},
        )
    now = timezone.now()
    annotation = _first_version(assignment, annotator, clean, seconds_spent, client_info, now)
    complete = item_stage.submitted_count + 1 >= item_stage.target_count
    _record_submission(annotation, assignment, holds_slot=holds_slot, complete=complete)
    if read.governed:
        gates.after_submit(annotator_id=annotator.pk, stage=assignment.stage)
    if complete:
        _resolve_on_commit(item_stage.pk)
    _announce_on_commit(assignment)
    return annotation, True


def _record_submission(
    annotation: Annotation, assignment: Assignment, *, holds_slot: bool, complete: bool
) -> None:
    """Store the annotation, mark its assignment submitted and move the slot from leased to
    submitted (closing the item stage when it reaches its target): one statement on PostgreSQL
    (data-modifying CTEs), three elsewhere. `assignment` is the annotation's, marked submitted
    (_first_version). The caller holds both rows' locks."""
    now = annotation.created_at
    item_stage_id = assignment.item_stage_id
    if connection.vendor != "postgresql":
        annotation.save(force_insert=True)
        assignment.save(update_fields=["status", "finished_at"])
        changes: dict[str, Any] = {"submitted_count": F("submitted_count") + 1}
        if holds_slot:
            changes["leased_count"] = F("leased_count") - 1
        if complete:
            changes.update(state=ItemStage.State.RESOLVING, completed_at=now)
        ItemStage.objects.filter(pk=item_stage_id).update(**changes)
        return
    json_field = Annotation._meta.get_field("payload")
    with sql.cursor() as cursor:
        cursor.execute(
            _record_submission_sql(connection.vendor),
            {
                "status": assignment.status,
                "now": now,
                "assignment": assignment.pk,
                "leased": 1 if holds_slot else 0,
                "complete": complete,
                "resolving": ItemStage.State.RESOLVING,
                "item_stage": item_stage_id,
                "annotator": annotation.annotator_id,
                "payload": json_field.get_db_prep_save(annotation.payload, connection),
                "seconds": annotation.seconds_spent,
                "client_info": json_field.get_db_prep_save(annotation.client_info, connection),
                "round": annotation.round,
                "phase": annotation.phase,
                "item_version": annotation.item_version,
            },
        )
        annotation.pk = cursor.fetchone()[0]
    annotation._state.adding = False


@cache
def _record_submission_sql(vendor: str) -> str:
    """The statement of _record_submission on PostgreSQL (text built once per process)."""
    done, slot, stored = sql.quoted(Assignment), sql.quoted(ItemStage), sql.quoted(Annotation)
    return f"""
        WITH done AS (
            UPDATE {sql.table(Assignment)} SET {done.status} = %(status)s,
                {done.finished_at} = %(now)s
            WHERE {done.id} = %(assignment)s
        ), slot AS (
            UPDATE {sql.table(ItemStage)} SET
                {slot.submitted_count} = {slot.submitted_count} + 1,
                {slot.leased_count} = {slot.leased_count} - %(leased)s,
                {slot.state} = CASE WHEN %(complete)s THEN %(resolving)s ELSE {slot.state} END,
                {slot.completed_at} = CASE WHEN %(complete)s THEN %(now)s
                                      ELSE {slot.completed_at} END
            WHERE {slot.id} = %(item_stage)s
        )
        INSERT INTO {sql.table(Annotation)}
            ({stored.item_stage_id}, {stored.assignment_id}, {stored.annotator_id},
             {stored.external_rater}, {stored.payload}, {stored.seconds_spent},
             {stored.client_info}, {stored.created_at}, {stored.round}, {stored.phase},
             {stored.item_version})
        VALUES (%(item_stage)s, %(assignment)s, %(annotator)s, '', %(payload)s,
                %(seconds)s, %(client_info)s, %(now)s, %(round)s, %(phase)s,
                %(item_version)s)
        RETURNING {stored.id}
        """
