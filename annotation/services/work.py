"""The annotator's loop: next item (leases, the candidate search), skip and submit.

The hot path: next + submit run a fixed, small number of statements (three each on PostgreSQL:
the token, the stage or the locked assignment, then one statement that leases or stores), the
hand-written ones in annotation/sql.py or built here once per process."""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import timedelta
from functools import cache
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation import gates, sql
from annotation.access import NO_SUCH_ANSWER, NO_SUCH_ASSIGNMENT
from annotation.eligibility import conditions as eligibility_conditions
from annotation.eligibility import counts_own_work
from annotation.errors import ApplicationError, Conflict, NotFound, PermissionDenied
from annotation.inputs import check_payload, clean_client_info, clean_text
from annotation.kinds import KindContext, get_kind
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemStage,
    Membership,
    Project,
    Resolution,
    Role,
    Stage,
)
from annotation.services.common import enqueue_on_commit

logger = logging.getLogger(__name__)


# --- Next item --------------------------------------------------------------------------------


def _annotator_salt(stage: Stage, annotator_id: int) -> int:
    """A per-(stage, annotator) multiplier in [1, prime-1], stable across requests."""
    return random.Random(f"{stage.seed}:{annotator_id}").randrange(1, sql.ORDER_PRIME - 1)


@cache
def _candidate_sql(order_policy: str, vendor: str, phases: str = "[]", rules: str = "[]") -> str:
    """The candidate search for the next item, as one statement (text built once per process
    for each backend, order policy, phase list and rule list — the last two as JSON text, so
    they can key the cache); named parameters: see _candidate_params.

    The searches are tried in turn until one yields a row:

    - RANDOM stages: every open item in the annotator's own seeded order, one variant of every
      group before the second variant of any (a sort over the stage's open items: O(open items)
      per request, fine for rating stages of thousands of items).
    - DEPTH_FIRST stages: (1) items already in progress, most complete first, then in the
      annotator's own order (a small set, by a partial index); (2) fresh items, in the stage's
      random order entered at a point fixed per annotator and wrapping round, so the search is
      an index range scan however many items the stage holds.

    Every search skips items the annotator already held in the item stage's current round and
    phase (submitted, skipped, expired), items without a free slot, items the phase's people
    rule keeps them from (annotation.phases: "new" — nobody from an earlier phase of the round;
    "same" — only those who submitted in one) and items a stage eligibility rule refuses
    (annotation.eligibility: one SQL condition each). On PostgreSQL each search is a CTE that
    locks its row (FOR UPDATE SKIP LOCKED, so concurrent annotators never take the same slot)
    and `UNION ALL … LIMIT 1` evaluates them lazily: a later search neither runs nor locks
    anything once an earlier one has found its row. The chosen row is then joined with its item.
    """
    import json

    item_stages, assignments = sql.table(ItemStage), sql.table(Assignment)
    open_state = ItemStage.State.OPEN.value
    lock = sql.lock(skip_locked=True)
    conditions = [
        f"NOT EXISTS (SELECT 1 FROM {assignments} a WHERE a.item_stage_id = c.id"
        " AND a.annotator_id = %(annotator)s AND a.round = c.round AND a.phase = c.phase)"
    ]
    for index, spec in enumerate(json.loads(phases)):
        people = spec.get("people", "any")
        if people == "any":
            continue
        earlier = (
            f"SELECT 1 FROM {assignments} p WHERE p.item_stage_id = c.id"
            " AND p.annotator_id = %(annotator)s AND p.round = c.round AND p.phase < c.phase"
        )
        if people == "new":
            conditions.append(
                f"(c.phase <> {index} OR NOT EXISTS ({earlier}"
                " AND p.status IN ('active', 'submitted')))"
            )
        else:  # same
            conditions.append(
                f"(c.phase <> {index} OR EXISTS ({earlier} AND p.status = 'submitted'))"
            )
    tables = {
        model.__name__: sql.table(model)
        for model in (
            Item,
            ItemStage,
            Assignment,
            Stage,
            Membership,
            Project,
            Annotation,
            Resolution,
        )
    }
    conditions += [
        condition.sql for condition in eligibility_conditions(json.loads(rules), tables=tables)
    ]
    base = (
        f"SELECT c.id FROM {item_stages} c"
        f" WHERE c.stage_id = %(stage)s AND c.state = '{open_state}'"
        " AND c.submitted_count < c.target_count - c.leased_count AND " + " AND ".join(conditions)
    )
    personal = f"CAST(c.random_key AS BIGINT) * %(salt)s %% {sql.ORDER_PRIME}"
    if order_policy == Stage.OrderPolicy.RANDOM:
        searches = [
            f"{base} ORDER BY (c.spread_rank + %(spread)s) %% c.group_size, {personal}"
            f" LIMIT 1{lock}"
        ]
    else:
        fresh = f"{base} AND c.submitted_count = 0 AND c.leased_count = 0"
        searches = [
            f"{base} AND (c.submitted_count > 0 OR c.leased_count > 0)"
            f" ORDER BY c.submitted_count + c.leased_count DESC, {personal} LIMIT 1{lock}",
            f"{fresh} AND c.random_key >= %(entry)s ORDER BY c.random_key LIMIT 1{lock}",
            f"{fresh} AND c.random_key < %(entry)s ORDER BY c.random_key LIMIT 1{lock}",
        ]
    ctes = ", ".join(f"search_{index} AS ({search})" for index, search in enumerate(searches))
    chain = " UNION ALL ".join(f"SELECT id FROM search_{index}" for index in range(len(searches)))
    return (
        f"SELECT {sql.columns(ItemStage, 's')}, {sql.columns(Item, 'i')}"
        f" FROM {item_stages} s JOIN {sql.table(Item)} i ON i.id = s.item_id"
        f" WHERE s.id IN (WITH {ctes} {chain} LIMIT 1)"
    )


def _search_rules(stage: Stage, annotator_id: int) -> list[dict[str, Any]]:
    """The eligibility rules of the annotator's search in `stage`: the stage's own and, for
    someone an annotator gate governs, the gates' rules (annotation.gates.search_rules)."""
    return gates.search_rules(stage.eligibility or [], governed=_governed(stage, annotator_id))


def _governed(stage: Stage, annotator_id: int) -> bool:
    """Whether an annotator gate governs the annotator in the stage's project: the flag
    access_stage_for_annotator read with the stage, or one statement for other callers."""
    if getattr(stage, "governed", None) is None:
        stage.governed = gates.governed(annotator_id=annotator_id, project_id=stage.project_id)
    return stage.governed


def _candidate_params(stage: Stage, annotator_id: int) -> dict[str, Any]:

    salt = _annotator_salt(stage, annotator_id)
    params: dict[str, Any] = {
        "stage": stage.pk,
        "annotator": annotator_id,
        "project": stage.project_id,
        "salt": salt,
    }
    if stage.order_policy == Stage.OrderPolicy.RANDOM:
        params["spread"] = salt % 997
    else:
        params["entry"] = salt % (2**31)
    tables = {
        name: ""
        for name in (
            "Item",
            "ItemStage",
            "Assignment",
            "Stage",
            "Membership",
            "Project",
            "Annotation",
            "Resolution",
        )
    }
    for condition in eligibility_conditions(_search_rules(stage, annotator_id), tables=tables):
        params.update(condition.params)
    return params


def _candidate_key(stage: Stage, annotator_id: int) -> tuple[str, str, str, str]:
    """The cache key of a stage's candidate statement."""
    import json

    return (
        stage.order_policy,
        connection.vendor,
        json.dumps(stage.phases or [], sort_keys=True),
        json.dumps(_search_rules(stage, annotator_id), sort_keys=True),
    )


def assignment_next(*, annotator: AbstractBaseUser, stage: Stage) -> Assignment | None:
    """Lease the next item of `stage` to `annotator`, or return None when none is left.

    `stage` must come from access_stage_for_annotator (it carries the current lease id).
    Asking again while holding an unexpired lease returns the same assignment (renewed).

    Locking: the chosen ItemStage row is taken with SELECT … FOR UPDATE SKIP LOCKED inside one
    transaction, so concurrent annotators never take the same slot; the slot counters change
    under that lock and a CHECK constraint backs the overlap invariant. Two simultaneous requests
    of one annotator collide on the one-active-lease-per-stage constraint; the loser retries and
    gets the winner's lease.

    Someone an annotator gate governs (annotation.gates) is searched in a transaction that asks
    the gates first (None when one refuses) and applies their rules.
    """
    for attempt in range(3):
        try:
            return _assignment_next(annotator, stage)
        except IntegrityError:
            if attempt == 2:
                raise
            stage.current_assignment_id = (
                Assignment.objects.filter(
                    stage=stage, annotator=annotator, status=Assignment.Status.ACTIVE
                )
                .values_list("pk", flat=True)
                .first()
            )
    return None  # pragma: no cover


def _assignment_next(annotator: AbstractBaseUser, stage: Stage) -> Assignment | None:
    """The one-statement lease when it can be one (_lease_at_once), otherwise the search,
    renewal and reclaiming in one transaction (_assignment_next_in_transaction)."""
    if (
        connection.vendor == "postgresql"
        and getattr(stage, "current_assignment_id", None) is None
        and not _governed(stage, annotator.pk)
        and not (stage.eligibility and counts_own_work(stage.eligibility))
    ):
        if not connection.in_atomic_block:
            leased = _lease_at_once(annotator, stage)
        else:
            with transaction.atomic():  # a savepoint: a failed statement leaves the caller's
                leased = _lease_at_once(annotator, stage)
        if leased is not None:
            return leased
    return _assignment_next_in_transaction(annotator, stage)


@transaction.atomic
def _assignment_next_in_transaction(annotator: AbstractBaseUser, stage: Stage) -> Assignment | None:
    if _governed(stage, annotator.pk) and gates.refusal(
        annotator_id=annotator.pk, stage=stage, action=gates.NEXT
    ):
        return None
    rules = _search_rules(stage, annotator.pk)
    if rules and counts_own_work(rules):
        sql.annotator_lock(stage.pk, annotator.pk)  # a quota: one search at a time per person
    now = timezone.now()
    current_id = getattr(stage, "current_assignment_id", None)
    if current_id is not None:
        current = _renew(current_id, now, stage)
        if current is not None:
            return current
    item_stage = _take_candidate(stage, annotator.pk)
    if item_stage is None:
        if not leases_reclaim_expired(stage_id=stage.pk, now=now):
            return None
        item_stage = _take_candidate(stage, annotator.pk)
        if item_stage is None:
            return None
    assignment = Assignment(
        item_stage=item_stage,
        stage=stage,
        annotator=annotator,
        status=Assignment.Status.ACTIVE,
        created_at=now,
        expires_at=now + timedelta(seconds=stage.lease_seconds),
        round=item_stage.round,
        phase=item_stage.phase,
        item_version=item_stage.item.version,
    )
    _insert_lease(assignment)
    item_stage.leased_count += 1
    assignment.item_stage = item_stage
    return assignment


@cache
def _lease_sql(candidate_sql: str) -> str:
    """The candidate search (_candidate_sql), the slot taken and the assignment inserted, in one
    statement (data-modifying CTEs over the row the search locked): in autocommit no BEGIN or
    COMMIT is sent, and the lease costs one round trip instead of four. Returns the item stage
    and item columns as the search does (before leased_count + 1), then the assignment's id."""
    item_stage_width = sql.width(ItemStage)
    item_fields = [field.column for field in Item._meta.concrete_fields]
    names = [f"c{index}" for index in range(item_stage_width + len(item_fields))]
    position = {
        field.column: names[index] for index, field in enumerate(ItemStage._meta.concrete_fields)
    }
    item_version = names[item_stage_width + item_fields.index("version")]
    return f"""
        WITH chosen({", ".join(names)}) AS ({candidate_sql}),
        slot AS (
            UPDATE {sql.table(ItemStage)} SET leased_count = leased_count + 1
            WHERE id = (SELECT {position["id"]} FROM chosen)
        ),
        lease AS (
            INSERT INTO {sql.table(Assignment)}
                (item_stage_id, stage_id, annotator_id, status, created_at, expires_at,
                 finished_at, skip_reason, round, phase, item_version)
            SELECT {position["id"]}, %(stage)s, %(annotator)s, %(status)s, %(created_at)s,
                   %(expires_at)s, NULL, '', {position["round"]}, {position["phase"]},
                   {item_version}
            FROM chosen
            RETURNING id
        )
        SELECT chosen.*, lease.id FROM chosen CROSS JOIN lease
        """


def _lease_at_once(annotator: AbstractBaseUser, stage: Stage) -> Assignment | None:
    """Lease the next candidate in one statement (_lease_sql), or None when the search found
    nothing (the caller then reclaims expired leases and searches again). Two requests of one
    annotator at once collide on the one-active-lease constraint: IntegrityError, nothing
    stored, as in the transaction."""
    now = timezone.now()
    params = _candidate_params(stage, annotator.pk)
    params.update(
        status=Assignment.Status.ACTIVE,
        created_at=now,
        expires_at=now + timedelta(seconds=stage.lease_seconds),
    )
    row = sql.fetchone(_lease_sql(_candidate_sql(*_candidate_key(stage, annotator.pk))), params)
    if row is None:
        return None
    item_stage = sql.load(ItemStage, row)
    item_stage.item = sql.load(Item, row, sql.width(ItemStage))
    item_stage.leased_count += 1
    assignment = Assignment(
        pk=row[-1],
        item_stage=item_stage,
        stage=stage,
        annotator=annotator,
        status=Assignment.Status.ACTIVE,
        created_at=now,
        expires_at=params["expires_at"],
        round=item_stage.round,
        phase=item_stage.phase,
        item_version=item_stage.item.version,
    )
    assignment._state.adding = False
    return assignment


def _insert_lease(assignment: Assignment) -> None:
    """Insert the assignment and take its slot (leased_count + 1): one statement on PostgreSQL
    (a data-modifying CTE), two elsewhere. The caller holds the item stage's row lock."""
    if connection.vendor != "postgresql":
        assignment.save(force_insert=True)
        ItemStage.objects.filter(pk=assignment.item_stage_id).update(
            leased_count=F("leased_count") + 1
        )
        return
    with sql.cursor() as cursor:
        cursor.execute(
            f"""
            WITH slot AS (
                UPDATE {sql.table(ItemStage)} SET leased_count = leased_count + 1
                WHERE id = %(item_stage)s
            )
            INSERT INTO {sql.table(Assignment)}
                (item_stage_id, stage_id, annotator_id, status, created_at, expires_at,
                 finished_at, skip_reason, round, phase, item_version)
            VALUES (%(item_stage)s, %(stage)s, %(annotator)s, %(status)s, %(created_at)s,
                    %(expires_at)s, NULL, '', %(round)s, %(phase)s, %(item_version)s)
            RETURNING id
            """,
            {
                "item_stage": assignment.item_stage_id,
                "stage": assignment.stage_id,
                "annotator": assignment.annotator_id,
                "status": assignment.status,
                "created_at": assignment.created_at,
                "expires_at": assignment.expires_at,
                "round": assignment.round,
                "phase": assignment.phase,
                "item_version": assignment.item_version,
            },
        )
        assignment.pk = cursor.fetchone()[0]
    assignment._state.adding = False


def _take_candidate(stage: Stage, annotator_id: int) -> ItemStage | None:
    """Lock and return the first candidate (with its item), skipping rows others hold: one
    statement (see _candidate_sql)."""
    row = sql.fetchone(
        _candidate_sql(*_candidate_key(stage, annotator_id)), _candidate_params(stage, annotator_id)
    )
    if row is None:
        return None
    item_stage = sql.load(ItemStage, row)
    item_stage.item = sql.load(Item, row, sql.width(ItemStage))
    return item_stage


def _renew(assignment_id: int, now: Any, stage: Stage) -> Assignment | None:
    """Renew the annotator's active lease (still counted in leased_count, so still theirs)."""
    assignment = (
        Assignment.objects.select_related("item_stage__item")
        .select_for_update(of=("self",))
        .filter(pk=assignment_id, status=Assignment.Status.ACTIVE)
        .first()
    )
    if assignment is None:
        return None
    assignment.expires_at = now + timedelta(seconds=stage.lease_seconds)
    assignment.save(update_fields=["expires_at"])
    assignment.stage = stage
    return assignment


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
    for item_stage_id, count in per_item_stage.items():
        ItemStage.objects.filter(pk=item_stage_id).update(leased_count=F("leased_count") - count)
    return len(locked)


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


@cache
def _locked_assignment_sql(vendor: str, locked: bool = True) -> str:
    """The assignment, its item stage and stage, whether its annotator may still annotate
    there (an active, unpaused annotator of an active stage of an active project) and whether
    an annotator gate governs them (annotation.gates), in one statement; the assignment's and
    the item stage's rows locked unless ``locked`` is False."""
    may_annotate = (
        f"EXISTS (SELECT 1 FROM {sql.table(Membership)} m WHERE m.project_id = st.project_id"
        f" AND m.user_id = a.annotator_id AND m.role = '{Role.ANNOTATOR.value}'"
        f" AND NOT m.is_paused) AND st.is_active AND p.is_active"
    )
    governed = gates.governed_sql(annotator="a.annotator_id", project="st.project_id")
    return (
        f"SELECT {sql.columns(Assignment, 'a')}, {sql.columns(ItemStage, 's')},"
        f" {sql.columns(Stage, 'st')}, CASE WHEN {may_annotate} THEN 1 ELSE 0 END AS may_annotate,"
        f" {governed} AS governed"
        f" FROM {sql.table(Assignment)} a"
        f" JOIN {sql.table(ItemStage)} s ON s.id = a.item_stage_id"
        f" JOIN {sql.table(Stage)} st ON st.id = a.stage_id"
        f" JOIN {sql.table(Project)} p ON p.id = st.project_id"
        f" WHERE a.id = %(assignment)s{sql.lock('a', 's') if locked else ''}"
    )


def _locked_assignment(
    *, assignment_id: int, user: AbstractBaseUser, locked: bool = True
) -> Assignment:
    """The user's assignment with its item stage and stage; the assignment's and the item
    stage's rows locked unless ``locked`` is False (one statement). Foreign and unknown ids:
    the same 404."""
    row = None
    if sql.in_range(Assignment, assignment_id):
        row = sql.fetchone(
            _locked_assignment_sql(connection.vendor, locked), {"assignment": assignment_id}
        )
    if row is None:
        raise NotFound(NO_SUCH_ASSIGNMENT)
    (assignment, item_stage, stage), extras = sql.unpack(
        row, (Assignment, ItemStage, Stage), ("may_annotate", "governed")
    )
    if assignment.annotator_id != user.pk:
        raise NotFound(NO_SUCH_ASSIGNMENT)
    assignment.item_stage, assignment.stage = item_stage, stage
    assignment.may_annotate = bool(extras["may_annotate"])
    stage.governed = bool(extras["governed"])
    return assignment


def _gate_assignment(assignment_id: int, user: AbstractBaseUser, action: str) -> None:
    """Ask the annotator gates about a write on an assignment (annotation.gates.check), before
    its rows are locked: read it unlocked, and only when a gate governs its annotator."""
    assignment = _locked_assignment(assignment_id=assignment_id, user=user, locked=False)
    if assignment.stage.governed:
        gates.check(annotator_id=user.pk, stage=assignment.stage, action=action)


@transaction.atomic
def assignment_skip(*, assignment_id: int, annotator: AbstractBaseUser, reason: str) -> Assignment:
    """Give up an item (with a reason): the slot goes to others, and the annotator never gets the
    item again. Skipping twice is harmless."""
    reason = clean_text(reason, field="reason", max_length=300)
    if not reason:
        raise ApplicationError("Say why you skip this item.", {"reason": "required"})
    _gate_assignment(assignment_id, annotator, gates.SKIP)
    assignment = _locked_assignment(assignment_id=assignment_id, user=annotator)
    if assignment.status == Assignment.Status.SUBMITTED:
        raise Conflict("This item is already submitted; it cannot be skipped.")
    if assignment.status == Assignment.Status.SKIPPED:
        return assignment
    if assignment.status == Assignment.Status.ACTIVE:
        ItemStage.objects.filter(pk=assignment.item_stage_id).update(
            leased_count=F("leased_count") - 1
        )
    assignment.status = Assignment.Status.SKIPPED
    assignment.skip_reason = reason
    assignment.finished_at = timezone.now()
    assignment.save(update_fields=["status", "skip_reason", "finished_at"])
    return assignment


# --- Submit -----------------------------------------------------------------------------------


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
    annotator: AbstractBaseUser,
    payload: Mapping[str, Any],
    seconds_spent: float | None = None,
    client_info: Mapping[str, Any] | None = None,
) -> tuple[Annotation, bool]:
    """Store an annotation for the annotator's lease; returns (annotation, created).

    Idempotent: a retried submit for the same assignment returns the stored annotation and
    `created=False`, whatever payload it carries. A lease that expired is still accepted while
    its slot is free; otherwise 409. When the item stage reaches its target, resolution is
    enqueued after commit (and the beat sweep repairs a lost message).
    """
    payload = check_payload(payload)
    client_info = clean_client_info(client_info)
    try:
        if connection.vendor == "postgresql":
            if not connection.in_atomic_block:
                stored = _annotation_submit_at_once(
                    assignment_id, annotator, payload, seconds_spent, client_info
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
    annotator: AbstractBaseUser,
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
    annotator: AbstractBaseUser,
    payload: Mapping[str, Any],
    seconds_spent: float | None,
    client_info: Mapping[str, Any] | None,
) -> Annotation | None:
    """The common submit on PostgreSQL — a lease still held, by an annotator who may annotate —
    as one read and one write statement, with no transaction around them: the write marks the
    assignment submitted only if it is still active (a retry, an expiry or a withdrawal that
    got there first makes it change nothing), and only then moves the slot and stores the
    annotation (_submit_sql). Returns None, having stored nothing, in every other case: the
    caller then takes the locked path (_annotation_submit), which decides each of them."""
    assignment = _locked_assignment(assignment_id=assignment_id, user=annotator, locked=False)
    if (
        assignment.status != Assignment.Status.ACTIVE
        or not assignment.may_annotate
        or assignment.stage.governed  # the gates decide, in the locked path's transaction
    ):
        return None
    clean = _validated(assignment, annotator, payload, seconds_spent)
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
        from annotation.tasks import resolve_item_stage

        enqueue_on_commit(resolve_item_stage, assignment.item_stage_id)
    return annotation


def _first_version(
    assignment: Assignment,
    annotator: AbstractBaseUser,
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
    return f"""
        WITH done AS (
            UPDATE {sql.table(Assignment)} SET status = %(submitted)s, finished_at = %(now)s
            WHERE id = %(assignment)s AND status = %(active)s
            RETURNING id, item_stage_id, annotator_id, round, phase, item_version
        ), slot AS (
            UPDATE {sql.table(ItemStage)} SET
                submitted_count = submitted_count + 1,
                leased_count = leased_count - 1,
                state = CASE WHEN submitted_count + 1 >= target_count
                        THEN %(resolving)s ELSE state END,
                completed_at = CASE WHEN submitted_count + 1 >= target_count
                               THEN %(now)s ELSE completed_at END
            WHERE id = (SELECT item_stage_id FROM done)
            RETURNING submitted_count >= target_count AS complete
        ), stored AS (
            INSERT INTO {sql.table(Annotation)}
                (item_stage_id, assignment_id, annotator_id, external_rater, payload,
                 seconds_spent, client_info, created_at, round, phase, item_version)
            SELECT item_stage_id, id, annotator_id, '', %(payload)s, %(seconds)s,
                   %(client_info)s, %(now)s, round, phase, item_version
            FROM done
            RETURNING id
        )
        SELECT stored.id, slot.complete FROM stored CROSS JOIN slot
        """


@transaction.atomic
def _annotation_submit(
    assignment_id: int,
    annotator: AbstractBaseUser,
    payload: Mapping[str, Any],
    seconds_spent: float | None,
    client_info: Mapping[str, Any] | None,
) -> tuple[Annotation, bool]:
    _gate_assignment(assignment_id, annotator, gates.SUBMIT)
    assignment = _locked_assignment(assignment_id=assignment_id, user=annotator)
    if assignment.status == Assignment.Status.SUBMITTED:
        return Annotation.objects.get(assignment=assignment), False
    if assignment.status == Assignment.Status.SKIPPED:
        raise Conflict("You skipped this item, so it can no longer be submitted.")
    if assignment.status == Assignment.Status.REVOKED:
        raise PermissionDenied(
            "This item was withdrawn from you: your annotation in this project is paused or "
            "ended. Nothing was saved; contact the project's researchers."
        )
    if not assignment.may_annotate:
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
    _record_submission(annotation, holds_slot=holds_slot, complete=complete)
    if assignment.stage.governed:
        gates.after_submit(annotator_id=annotator.pk, stage=assignment.stage)
    if complete:
        from annotation.tasks import resolve_item_stage

        enqueue_on_commit(resolve_item_stage, item_stage.pk)
    return annotation, True


def _record_submission(annotation: Annotation, *, holds_slot: bool, complete: bool) -> None:
    """Store the annotation, mark its assignment submitted and move the slot from leased to
    submitted (closing the item stage when it reaches its target): one statement on PostgreSQL
    (data-modifying CTEs), three elsewhere. The caller holds both rows' locks."""
    assignment, now = annotation.assignment, annotation.created_at
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
            f"""
            WITH done AS (
                UPDATE {sql.table(Assignment)} SET status = %(status)s, finished_at = %(now)s
                WHERE id = %(assignment)s
            ), slot AS (
                UPDATE {sql.table(ItemStage)} SET
                    submitted_count = submitted_count + 1,
                    leased_count = leased_count - %(leased)s,
                    state = CASE WHEN %(complete)s THEN %(resolving)s ELSE state END,
                    completed_at = CASE WHEN %(complete)s THEN %(now)s ELSE completed_at END
                WHERE id = %(item_stage)s
            )
            INSERT INTO {sql.table(Annotation)}
                (item_stage_id, assignment_id, annotator_id, external_rater, payload,
                 seconds_spent, client_info, created_at, round, phase, item_version)
            VALUES (%(item_stage)s, %(assignment)s, %(annotator)s, '', %(payload)s,
                    %(seconds)s, %(client_info)s, %(now)s, %(round)s, %(phase)s,
                    %(item_version)s)
            RETURNING id
            """,
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


# --- Changing an answer -----------------------------------------------------------------------


def annotation_revise(
    *,
    annotation_id: int,
    annotator: AbstractBaseUser,
    payload: Mapping[str, Any],
    seconds_spent: float | None = None,
    client_info: Mapping[str, Any] | None = None,
) -> tuple[Annotation, bool]:
    """Change one's own answer: store `payload` as a new version that supersedes the annotation
    `annotation_id` (the version the annotator saw); returns (current version, created).

    Allowed while annotation.versions.change_refusal finds nothing (the item stage still open
    or waiting for its resolution, in the answer's round and phase); otherwise 409 with that
    sentence. The new row keeps the assignment, round and phase, gets ``version`` + 1 and
    ``supersedes``; the old row keeps its payload and only loses ``is_current``. Counters do
    not move: the annotator is still counted once.

    Idempotent, keyed by the version replaced (as a submit is keyed by its assignment): a
    retried change of the same version with the same answer returns the version it created
    (``created=False``); an answer equal to the current one creates nothing. A change of a
    version that another change already replaced with a different answer is refused (409):
    the annotator saw an out-of-date answer.

    Locking: the item stage's row is locked first (FOR UPDATE), the lock resolution
    (services.item_stage_resolve) takes before it reads the answers, so a change either lands
    before the decision and is counted in it, or finds the item decided and is refused.
    """
    payload = check_payload(payload)
    client_info = clean_client_info(client_info)
    _check_seconds_spent(seconds_spent)
    try:
        return _annotation_revise(annotation_id, annotator, payload, seconds_spent, client_info)
    except IntegrityError:
        # Another connection replaced the same version at the same moment (the partial unique
        # constraint on current versions stopped this one): answer as a retry would.
        return _annotation_revise(annotation_id, annotator, payload, seconds_spent, client_info)


@transaction.atomic
def _annotation_revise(
    annotation_id: int,
    annotator: AbstractBaseUser,
    payload: Mapping[str, Any],
    seconds_spent: float | None,
    client_info: Mapping[str, Any],
) -> tuple[Annotation, bool]:
    from annotation.versions import change_refusal

    base = None
    if sql.in_range(Annotation, annotation_id):
        base = (
            Annotation.all_versions.filter(pk=annotation_id, annotator_id=annotator.pk)
            .only("pk", "item_stage_id", "assignment_id")
            .first()
        )
    if base is None or base.assignment_id is None:
        raise NotFound(NO_SUCH_ANSWER)
    gated = Stage.objects.filter(item_stages=base.item_stage_id).only("pk", "project_id").get()
    if _governed(gated, annotator.pk):
        current = Annotation.objects.filter(assignment_id=base.assignment_id).first()
        gates.check(
            annotator_id=annotator.pk, stage=gated, action=gates.CHANGE, answer=current or base
        )
    item_stage = (
        ItemStage.objects.select_for_update(of=("self",))
        .select_related("stage__project", "item")
        .get(pk=base.item_stage_id)
    )
    # Read again under the lock: another change may have committed while this one waited.
    base = Annotation.all_versions.get(pk=base.pk)
    stage = item_stage.stage
    kind = get_kind(stage.kind)
    if not base.is_current:
        current = Annotation.objects.filter(assignment_id=base.assignment_id).first()
        clean = kind.validate(
            payload, KindContext(stage=stage, item_stage=item_stage, annotator_id=annotator.pk)
        )
        if current is not None and current.supersedes_id == base.pk and current.payload == clean:
            return current, False
        raise Conflict(
            "Your answer to this item was changed since this page was opened (it is now "
            f"version {current.version if current else '?'}); open it again to change it.",
            {"current": current.pk if current else None},
        )
    refusal = change_refusal(base, item_stage, stage)
    if refusal is None:
        paused = (
            Membership.objects.filter(
                project_id=stage.project_id, user_id=annotator.pk, role=Role.ANNOTATOR
            )
            .values_list("is_paused", flat=True)
            .first()
        )
        if paused is None:
            refusal = "You are no longer an annotator of this project, so nothing was changed."
        elif paused:
            refusal = "Your annotation in this project is paused, so nothing was changed."
    if refusal is not None:
        raise Conflict(refusal, {"state": item_stage.state})
    clean = kind.validate(
        payload if isinstance(payload, Mapping) else {},
        KindContext(stage=stage, item_stage=item_stage, annotator_id=annotator.pk),
    )
    if clean == base.payload:
        return base, False
    updated = Annotation.all_versions.filter(pk=base.pk, is_current=True).update(is_current=False)
    if not updated:  # pragma: no cover - the row lock above makes this unreachable
        raise Conflict("Your answer changed meanwhile; open it again to change it.")
    revised = Annotation.all_versions.create(
        item_stage=item_stage,
        assignment_id=base.assignment_id,
        annotator=annotator,
        payload=clean,
        seconds_spent=seconds_spent,
        client_info=dict(client_info or {}),
        round=base.round,
        phase=base.phase,
        item_version=item_stage.item.version,
        supersedes=base,
        version=base.version + 1,
        is_current=True,
    )
    return revised, True
