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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.contrib.auth.models import User
from django.db import connection, transaction

from annotation.access import StageForAnnotator
from annotation.eligibility import counts_own_work
from annotation.inputs import check_payload, clean_client_info
from annotation.models import Annotation, Assignment, ItemStage, Stage
from annotation.services.leases import _locked_assignment
from annotation.services.next_item import _lease_at_once, assignment_next, reached_by
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
