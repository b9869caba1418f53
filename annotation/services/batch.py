"""A wave of leases and submits in one transaction, for a caller whose answers are ready before
it leases: a machine rater (llm/waves.py) whose model answered the stage's next items already.

One annotator holds at most one active lease per stage (the ``assignment_one_active_per_stage``
constraint), so a wave cannot lease many items first and submit them after: it leases one item,
submits it, leases the next, … — each through the engine's own services (``assignment_next`` in
the SWEEP order, ``annotation_submit``), so the slot counters, the overlap CHECK, the phases and
eligibility rules, the idempotent submit (one annotation per assignment) and the resolution
enqueued when an item stage fills are the same code as for one item. What the wave saves:

* the commit per statement: the wave is one transaction, and the caller's own rows for the wave
  (a model rater's votes) are written in it through ``on_submitted``, so they land with the
  annotations or not at all;
* in the common case (PostgreSQL, an annotator no gate governs, no rule counting their own
  work: when ``assignment_next`` leases in one statement), the savepoints the one-item services
  take inside a caller's transaction and the submit's read of each lease: an item is then two
  statements — the engine's one-statement lease (next_item._lease_at_once) and its one-statement
  submit (submit._submit_sql) — and whether the annotator may annotate is read once per wave.
  Any other case goes through the public services item by item, in the same transaction.

:func:`annotations_submit_ready` goes further for a caller that knows which items it has
answers for: the wave's leases and submits are ONE statement (the candidate search over the
given item stages, their slots, assignments inserted already submitted, annotations), so the
engine's cost per item is a few index entries, not two statements. Its contract says what
guards it in place of the one-active-lease rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from typing import Any, NamedTuple

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from annotation import events, gates, sql
from annotation.access import StageForAnnotator
from annotation.eligibility import counts_own_work
from annotation.inputs import check_payload, clean_client_info
from annotation.kinds import KindContext, get_kind
from annotation.models import Annotation, Assignment, Item, ItemStage, Project, Stage
from annotation.services.common import enqueue_on_commit
from annotation.services.leases import _locked_assignment, may_annotate_sql
from annotation.services.next_item import (
    _candidate_statement,
    _lease_at_once,
    assignment_next,
    reached_by,
)
from annotation.services.submit import _submit_statement, _validated, annotation_submit


class WaveAnswer(NamedTuple):
    """One submit of a wave: the lease, its stored annotation, and whether this wave stored it
    (False: a retried submit found it stored, as annotation_submit returns it)."""

    assignment: Assignment
    annotation: Annotation
    created: bool


@dataclass
class Wave:
    """What a wave did. ``held``: the last item leased, whose answer ``answer`` did not have —
    still leased to the annotator (committed with the wave), for the caller to submit or skip
    through the one-item services; asking ``assignment_next`` again returns it, renewed.
    ``cursor``: the last item stage leased (the next wave's ``after``). ``exhausted``: the
    search found no item left for the annotator."""

    submitted: list[WaveAnswer] = field(default_factory=list)
    held: Assignment | None = None
    cursor: int = 0
    exhausted: bool = False


def annotations_submit_wave(
    *,
    annotator: User,
    stage: StageForAnnotator | Stage,
    after: int,
    answer: Callable[[ItemStage], Mapping[str, Any] | None],
    limit: int,
    client_info: Mapping[str, Any] | None = None,
    on_submitted: Callable[[Sequence[WaveAnswer]], None] | None = None,
) -> Wave:
    """Lease, in the SWEEP order from ``after``, and submit up to ``limit`` items, all in one
    transaction; ``answer(item_stage)`` gives the payload for the item just leased (None: no
    answer yet — the wave ends there, the lease held, see :class:`Wave`). ``on_submitted``
    runs in the same transaction with the wave's submits (the caller's rows about them).

    Contract: as ``limit`` calls of ``assignment_next`` then ``annotation_submit`` — every rule
    is theirs, and a payload the kind refuses raises their ApplicationError. Any error rolls
    the whole wave back (nothing leased, nothing stored, nothing enqueued), so a caller may
    retry it, or go item by item; a wave retried after it committed finds its items answered
    (the search never offers an annotator an item they submitted) and stores nothing twice.

    Locking: each item stage's row is locked by its lease (SKIP LOCKED: other annotators pass
    it by) and stays locked until the wave commits, so ``answer`` must be quick (read from
    memory); the wave's item stages fill and are resolved only after the commit."""
    reached = stage if isinstance(stage, StageForAnnotator) else reached_by(stage, annotator.pk)
    wave = Wave(cursor=after)
    info = clean_client_info(client_info)
    # next_item._assignment_next's test for its one-statement lease, asked once for the wave
    eligibility = reached.stage.eligibility
    direct = (
        connection.vendor == "postgresql"
        and reached.current_assignment_id is None
        and not reached.governed
        and not (eligibility and counts_own_work(eligibility))
    )
    may_annotate: bool | None = None
    with transaction.atomic():
        for _ in range(limit):
            assignment = None
            if direct and wave.submitted:  # the first through assignment_next: a lease the
                # annotator still holds is renewed there, where the statement would collide
                assignment = _lease_at_once(annotator, reached, wave.cursor)
            if assignment is None:  # none found at once: expired leases reclaimed, and so on
                assignment = assignment_next(annotator=annotator, stage=reached, after=wave.cursor)
            if assignment is None:
                wave.exhausted = True
                break
            wave.cursor = assignment.item_stage_id
            payload = answer(assignment.item_stage)
            if payload is None:
                wave.held = assignment
                break
            if direct and may_annotate is None:
                read = _locked_assignment(assignment_id=assignment.pk, user=annotator, locked=False)
                may_annotate = read.may_annotate and not read.governed
            stored = None
            if direct and may_annotate:
                stored = _submit_leased(assignment, annotator, payload, info)
            if stored is not None:
                wave.submitted.append(WaveAnswer(assignment, stored, True))
                continue
            annotation, created = annotation_submit(
                assignment_id=assignment.pk, annotator=annotator, payload=payload, client_info=info
            )
            wave.submitted.append(WaveAnswer(assignment, annotation, created))
        if on_submitted is not None and wave.submitted:
            on_submitted(wave.submitted)
    return wave


def _submit_leased(
    assignment: Assignment,
    annotator: User,
    payload: Mapping[str, Any],
    client_info: Mapping[str, Any],
) -> Annotation | None:
    """Submit a lease this wave just took (active, its annotator checked once for the wave):
    the kind's check and the engine's one-statement submit (submit._submit_sql, the statement
    of annotation_submit's common case), the resolution enqueued when the item stage fills.
    None, having stored nothing, when the statement found the lease no longer active: the
    caller then asks annotation_submit, which decides it."""
    clean = _validated(assignment, annotator, check_payload(payload), None)
    return _submit_statement(assignment, annotator, clean, None, client_info)


# A wave of answers ready before the lease, leased and submitted in ONE statement.


class ReadyAnswer(NamedTuple):
    """One answer of :func:`annotations_submit_ready` that was stored: the item stage, the
    assignment (inserted already submitted) and the annotation's ids."""

    item_stage_id: int
    assignment_id: int
    annotation_id: int


def ready_path_open(reached: StageForAnnotator) -> bool:
    """Whether :func:`annotations_submit_ready` can serve this annotator in this stage: on
    PostgreSQL, no lease of theirs known to be held, no gate governing them and no
    eligibility rule counting their own work (the conditions of the engine's one-statement
    lease, next_item._assignment_next). Otherwise: :func:`annotations_submit_wave`."""
    eligibility = reached.stage.eligibility
    return (
        connection.vendor == "postgresql"
        and reached.current_assignment_id is None
        and not reached.governed
        and not (eligibility and counts_own_work(eligibility))
    )


def annotations_submit_ready(
    *,
    annotator: User,
    stage: StageForAnnotator,
    answers: Sequence[tuple[ItemStage, Mapping[str, Any]]],
    client_info: Mapping[str, Any] | None = None,
    on_submitted: Callable[[Sequence[ReadyAnswer]], None] | None = None,
) -> list[ReadyAnswer]:
    """Lease and submit, in one statement, every item stage of ``answers`` (each with the
    payload for it) that the engine's search would offer the annotator now; returns those
    stored, by item stage id. The others are left as they were (filled meanwhile, held by
    someone — SKIP LOCKED —, already answered, sent to a new round, or refused by a rule): a
    caller that still wants them asks :func:`annotations_submit_wave` (the SWEEP order), which
    decides each through the one-item services. Precondition: :func:`ready_path_open`.

    What one statement does (:func:`_ready_sql`): the engine's candidate search
    (next_item._candidate_sql, the GIVEN set: open, a free slot, not held before by the
    annotator in the item stage's round and phase, the phases' people rules, the stage's
    eligibility rules, never a gold item; each row locked FOR UPDATE SKIP LOCKED), only while
    the annotator may annotate and no gate governs them (leases.may_annotate_sql, the
    submit's rule); then for each row found the slot counted submitted (closing the item
    stage at its target, as submit._submit_sql does), an assignment inserted already
    submitted and the annotation inserted. It never holds a lease, so the one-active-lease
    rule is not in play; what it guards instead: the ``assignment_unique_per_annotator``
    constraint (one assignment per annotator, item stage, round and phase) makes a second
    wave of the same annotator at the same moment fail rather than answer twice, and an
    advisory lock per (stage, annotator) (sql.annotator_lock, taken first in the wave's
    transaction) makes it wait instead and then find those items answered; the slot CHECK
    backs the overlap as for every lease.

    Payloads are checked by the stage's kind first (a refused one raises its
    ApplicationError and nothing is stored). The wave is one transaction (a savepoint inside
    a caller's); ``on_submitted`` runs in it with what was stored (the caller's rows about
    them: a model rater's votes, llm/waves.py), so they land together or not at all; the item
    stages it filled are resolved after the commit. A retried wave finds its items answered
    and stores nothing twice."""
    if not answers:
        return []
    reached = stage
    kind = get_kind(reached.stage.kind)
    given: list[int] = []
    rounds: list[int] = []
    payloads: list[str] = []
    for item_stage, payload in answers:
        clean = kind.validate(
            check_payload(payload),
            KindContext(stage=reached.stage, item_stage=item_stage, annotator_id=annotator.pk),
        )
        given.append(item_stage.pk)
        rounds.append(item_stage.round)
        payloads.append(json.dumps(clean))
    candidate_sql, params = _candidate_statement(reached, annotator.pk, given=given)
    now = timezone.now()
    json_field = Annotation._meta.get_field("payload")
    params.update(
        rounds=rounds,
        payloads=payloads,
        submitted=Assignment.Status.SUBMITTED,
        resolving=ItemStage.State.RESOLVING,
        now=now,
        expires_at=now + timedelta(seconds=reached.stage.lease_seconds),
        client_info=json_field.get_db_prep_save(clean_client_info(client_info), connection),
    )
    with transaction.atomic():
        sql.annotator_lock(reached.stage.pk, annotator.pk)
        with sql.cursor() as cursor:
            cursor.execute(_ready_sql(candidate_sql), params)
            rows = cursor.fetchall()
        stored = []
        for item_stage_id, assignment_id, annotation_id, complete in rows:
            stored.append(ReadyAnswer(item_stage_id, assignment_id, annotation_id))
            if complete:
                from annotation.tasks import resolve_item_stage

                enqueue_on_commit(resolve_item_stage, item_stage_id)
        if on_submitted is not None and stored:
            on_submitted(stored)
        if stored and events.has_stored_listeners():
            # The stored-answer event every submit path sends (submit._announce_on_commit).
            stage_read, ids = reached.stage, [answer.item_stage_id for answer in stored]
            transaction.on_commit(lambda: events.answers_stored(stage_read, ids))
    return stored


@cache
def _ready_sql(candidate_sql: str) -> str:
    """The statement of :func:`annotations_submit_ready` (text built once per process for each
    search): ``chosen`` is the candidate search over the GIVEN ids, its columns named c0, c1, …
    by the CTE's column list as in next_item._lease_sql; ``answer`` pairs each id with its
    round and payload (arrays: one text whatever the wave's size, so psycopg prepares it)."""
    item_stage_width = sql.width(ItemStage)
    item_fields = [field.column for field in Item._meta.concrete_fields]
    names = [f"c{index}" for index in range(item_stage_width + len(item_fields))]
    position = {
        field.column: names[index] for index, field in enumerate(ItemStage._meta.concrete_fields)
    }
    chosen_id, item_version = position["id"], names[item_stage_width + item_fields.index("version")]
    slot, lease, stored = sql.quoted(ItemStage), sql.quoted(Assignment), sql.quoted(Annotation)
    st, p = sql.quoted(Stage, "st"), sql.quoted(Project, "p")
    returned = connection.ops.quote_name("id")
    governed = gates.governed_sql(annotator="%(annotator)s", project=st.project_id)
    text = f"""
        WITH chosen({", ".join(names)}) AS ({candidate_sql}),
        allowed AS (
            SELECT 1 FROM {sql.table(Stage)} st JOIN {sql.table(Project)} p
                ON {p.id} = {st.project_id}
            WHERE {st.id} = %(stage)s AND {may_annotate_sql("%(annotator)s")}
                AND {governed} = 0
        ),
        answer AS (
            SELECT * FROM unnest(%(given)s::bigint[], %(rounds)s::integer[], %(payloads)s::text[])
                AS answer(item_stage, round, payload)
        ),
        taken AS (
            SELECT chosen.{chosen_id} AS item_stage, chosen.{position["round"]} AS round,
                   chosen.{position["phase"]} AS phase, chosen.{item_version} AS item_version,
                   answer.payload
            FROM chosen JOIN answer ON answer.item_stage = chosen.{chosen_id}
                AND answer.round = chosen.{position["round"]}
            WHERE EXISTS (SELECT 1 FROM allowed)
        ),
        slot AS (
            UPDATE {sql.table(ItemStage)} SET
                {slot.submitted_count} = {slot.submitted_count} + 1,
                {slot.state} = CASE WHEN {slot.submitted_count} + 1 >= {slot.target_count}
                        THEN %(resolving)s ELSE {slot.state} END,
                {slot.completed_at} = CASE WHEN {slot.submitted_count} + 1 >= {slot.target_count}
                               THEN %(now)s ELSE {slot.completed_at} END
            FROM taken WHERE {sql.table(ItemStage)}.{slot.id} = taken.item_stage
            RETURNING {sql.table(ItemStage)}.{slot.id} AS item_stage,
                {slot.submitted_count} >= {slot.target_count} AS complete
        ),
        lease AS (
            INSERT INTO {sql.table(Assignment)}
                ({lease.item_stage_id}, {lease.stage_id}, {lease.annotator_id}, {lease.status},
                 {lease.created_at}, {lease.expires_at}, {lease.finished_at},
                 {lease.skip_reason}, {lease.round}, {lease.phase}, {lease.item_version})
            SELECT item_stage, %(stage)s, %(annotator)s, %(submitted)s, %(now)s,
                   %(expires_at)s, %(now)s, '', round, phase, item_version
            FROM taken
            RETURNING {lease.id}, {lease.item_stage_id}
        ),
        stored AS (
            INSERT INTO {sql.table(Annotation)}
                ({stored.item_stage_id}, {stored.assignment_id}, {stored.annotator_id},
                 {stored.external_rater}, {stored.payload}, {stored.seconds_spent},
                 {stored.client_info}, {stored.created_at}, {stored.round}, {stored.phase},
                 {stored.item_version})
            SELECT taken.item_stage, lease.{returned}, %(annotator)s, '', taken.payload::jsonb,
                   NULL, %(client_info)s, %(now)s, taken.round, taken.phase, taken.item_version
            FROM taken JOIN lease ON lease.{lease.item_stage_id} = taken.item_stage
            RETURNING {stored.id}, {stored.item_stage_id}
        )
        SELECT stored.{stored.item_stage_id}, lease.{returned}, stored.{returned}, slot.complete
        FROM stored
        JOIN lease ON lease.{lease.item_stage_id} = stored.{stored.item_stage_id}
        JOIN slot ON slot.item_stage = stored.{stored.item_stage_id}
        ORDER BY 1
        """
    # One space for each run of white space (no literal here holds any): psycopg converts a
    # statement's parameters once per process only when its text fits in 4 kB.
    return " ".join(text.split())
