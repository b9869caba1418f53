"""Next item: the candidate search, the lease (in one statement on PostgreSQL when it can be)
and its renewal. The first half of the hot path: a next runs a fixed, small number of
statements (on PostgreSQL: the token, the stage, then one statement that searches and leases),
their text built here or in annotation/sql.py once per process.

Why hand-written SQL (CONTRIBUTING.md, "SQL you can change safely"): the search chains locking CTEs with
``UNION ALL … LIMIT 1`` and the lease is a data-modifying CTE over the locked row; and compiling
querysets on every request cost more CPU than PostgreSQL spent running them (annotation/sql.py).
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from functools import cache
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation import gates, sql
from annotation.access import StageForAnnotator
from annotation.eligibility import conditions as eligibility_conditions
from annotation.eligibility import counts_own_work
from annotation.gold import GOLD_SOURCE_FIELD
from annotation.models import Assignment, Item, ItemStage, Stage
from annotation.services.leases import leases_reclaim_expired
from annotation.slots import EVERYONE

#: The order of a caller that keeps its own cursor (assignment_next's ``after``).
SWEEP = "sweep"

#: Not an order but a set: every item stage of ``%(given)s`` (an array of ids) the search would
#: offer the annotator, in id order, each row locked (SKIP LOCKED) — a machine rater's wave of
#: answers ready before it leases (annotation.services.batch.annotations_submit_ready).
GIVEN = "given"


def _annotator_salt(stage: Stage, annotator_id: int) -> int:
    """A per-(stage, annotator) multiplier in [1, prime-1], stable across requests."""
    return random.Random(f"{stage.seed}:{annotator_id}").randrange(1, sql.ORDER_PRIME - 1)


@cache
def _candidate_sql(
    order_policy: str, vendor: str, phases: str = "[]", rules: str = "[]", gold: bool = False
) -> tuple[str, dict[str, Any]]:
    """The candidate search for the next item, as one statement, and the parameters its
    eligibility rules bind (text built once per process for each backend, order policy, phase
    list and rule list — the last two as JSON text, so they can key the cache); the other named
    parameters: see _candidate_statement.

    The searches are tried in turn until one yields a row:

    - RANDOM stages: every open item in the annotator's own seeded order, one variant of every
      group before the second variant of any (a sort over the stage's open items: O(open items)
      per request, fine for rating stages of thousands of items).
    - SWEEP (not a stage policy: asked for by a caller that passes ``after``, see
      assignment_next): the stage's open items in id order from just after the caller's cursor,
      then from the start up to it — two index range scans (the partial index
      ``item_stage_open_idx``), so a lease costs the same whether the caller answered none of the
      stage's items or most of them.
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

    Silent gold (annotation/gold.py): the searches above never take a gold item. With `gold`
    (the stage's ``gold_every`` is set; not in the SWEEP order) a gold search goes first
    (_gold_search): a gold item the annotator has not had, when their place for one has come.
    """
    item_stages, assignments = sql.table(ItemStage), sql.table(Assignment)
    c, s, i = sql.quoted(ItemStage, "c"), sql.quoted(ItemStage, "s"), sql.quoted(Item, "i")
    a, p = sql.quoted(Assignment, "a"), sql.quoted(Assignment, "p")
    # Constants of the models' choices, written into the text (it is built once per process).
    open_state = ItemStage.State.OPEN.value
    active, submitted = Assignment.Status.ACTIVE.value, Assignment.Status.SUBMITTED.value
    lock = sql.lock(skip_locked=True)
    conditions = [
        f"NOT EXISTS (SELECT 1 FROM {assignments} a WHERE {a.item_stage_id} = {c.id}"
        f" AND {a.annotator_id} = %(annotator)s AND {a.round} = {c.round}"
        f" AND {a.phase} = {c.phase})"
    ]
    for index, spec in enumerate(json.loads(phases)):
        people = spec.get("people", "any")
        if people == "any":
            continue
        earlier = (
            f"SELECT 1 FROM {assignments} p WHERE {p.item_stage_id} = {c.id}"
            f" AND {p.annotator_id} = %(annotator)s AND {p.round} = {c.round}"
            f" AND {p.phase} < {c.phase}"
        )
        if people == "new":
            conditions.append(
                f"({c.phase} <> {index} OR NOT EXISTS ({earlier}"
                f" AND {p.status} IN ('{active}', '{submitted}')))"
            )
        else:  # same
            conditions.append(
                f"({c.phase} <> {index} OR EXISTS ({earlier} AND {p.status} = '{submitted}'))"
            )
    rule_conditions = eligibility_conditions(json.loads(rules), candidate="c")
    conditions += [condition.sql for condition in rule_conditions]
    rule_params: dict[str, Any] = {}
    for condition in rule_conditions:
        rule_params.update(condition.params)
    common = (
        f"SELECT {c.id} FROM {item_stages} c"
        f" WHERE {c.stage_id} = %(stage)s AND {c.state} = '{open_state}'"
        f" AND {c.submitted_count} < {c.target_count} - {c.leased_count} AND "
        + " AND ".join(conditions)
    )
    base = f"{common} AND NOT {_is_gold('c')}"
    personal = f"CAST({c.random_key} AS BIGINT) * %(salt)s %% {sql.ORDER_PRIME}"
    if order_policy == GIVEN:
        searches = [f"{base} AND {c.id} = ANY(%(given)s) ORDER BY {c.id}{lock}"]
    elif order_policy == SWEEP:
        searches = [
            f"{base} AND {c.id} > %(after)s ORDER BY {c.id} LIMIT 1{lock}",
            f"{base} AND {c.id} <= %(after)s ORDER BY {c.id} LIMIT 1{lock}",
        ]
    elif order_policy == Stage.OrderPolicy.RANDOM:
        searches = [
            f"{base} ORDER BY ({c.spread_rank} + %(spread)s) %% {c.group_size}, {personal}"
            f" LIMIT 1{lock}"
        ]
    else:
        fresh = f"{base} AND {c.submitted_count} = 0 AND {c.leased_count} = 0"
        searches = [
            f"{base} AND ({c.submitted_count} > 0 OR {c.leased_count} > 0)"
            f" ORDER BY {c.submitted_count} + {c.leased_count} DESC, {personal} LIMIT 1{lock}",
            f"{fresh} AND {c.random_key} >= %(entry)s ORDER BY {c.random_key} LIMIT 1{lock}",
            f"{fresh} AND {c.random_key} < %(entry)s ORDER BY {c.random_key} LIMIT 1{lock}",
        ]
    helpers: list[str] = []
    if gold and order_policy != SWEEP:
        helpers, gold_search = _gold_search(common, vendor)
        searches.insert(0, f"{gold_search} ORDER BY {personal} LIMIT 1{lock}")
    # The CTEs' one column is named ``id`` by its SELECT list (quoted as every column is).
    found = connection.ops.quote_name("id")
    ctes = ", ".join(
        helpers + [f"search_{index} AS ({search})" for index, search in enumerate(searches)]
    )
    chain = " UNION ALL ".join(
        f"SELECT {found} FROM search_{index}" for index in range(len(searches))
    )
    limit = "" if order_policy == GIVEN else " LIMIT 1"  # GIVEN: every row its search found
    text = (
        f"SELECT {sql.columns(ItemStage, 's')}, {sql.columns(Item, 'i')}"
        f" FROM {item_stages} s JOIN {sql.table(Item)} i ON {i.id} = {s.item_id}"
        f" WHERE {s.id} IN (WITH {ctes} {chain}{limit})"
    )
    return text, rule_params


def _is_gold(alias: str) -> str:
    """SQL: the item stage under `alias` is a silent gold item's (annotation/gold.py). Gold
    item stages have every annotator's slots, so the item is looked up only for those: the
    searches for work pay one comparison per row."""
    c, g = sql.quoted(ItemStage, alias), sql.quoted(Item, f"{alias}_gold")
    return (
        f"({c.target_count} >= {EVERYONE} AND EXISTS (SELECT 1 FROM {sql.table(Item)}"
        f" {alias}_gold WHERE {g.id} = {c.item_id} AND {g.purpose} = '{Item.Purpose.GOLD.value}'))"
    )


#: How a promoted gold copy's source item id is read from its payload (GOLD_SOURCE_FIELD).
_SOURCE_ID = {
    "postgresql": "CAST({payload} ->> '{field}' AS BIGINT)",
    "sqlite": "CAST(json_extract({payload}, '$.{field}') AS INTEGER)",
}


def _gold_search(common: str, vendor: str) -> tuple[list[str], str]:
    """The gold search of _candidate_sql: its helper CTEs and the search (without its ORDER BY).

    A gold item of the stage the annotator has not had (``common``: the searches' shared
    conditions — free slot, not held before in the round and phase, phases, eligibility and
    gates), never a promoted copy of an item they answered themselves, and only when their place
    for one has come. The place: among the annotator's last 2n − 1 leases in the stage (n =
    ``gold_every``), count those after their latest gold one (all of them when none is there);
    a gold item may come once that count reaches n − 1 + (salt + id of that latest gold lease)
    mod n, and at least 1. So no two gold items are closer than n, the first item is never
    one, and the gap (n to 2n − 1) is drawn afresh after each gold item from the annotator's
    own salt, so nobody can count to the next one. Leases of every status count (an item
    skipped or left to expire was still shown). Both CTEs read at most 2n − 1 rows of the
    annotator's leases (the subquery limits before the joins)."""
    assignments, item_stages, items = sql.table(Assignment), sql.table(ItemStage), sql.table(Item)
    r, rs, ri = sql.quoted(Assignment, "r"), sql.quoted(ItemStage, "rs"), sql.quoted(Item, "ri")
    c = sql.quoted(ItemStage, "c")
    own, source, sa = (
        sql.quoted(Item, "gi"),
        sql.quoted(ItemStage, "ss"),
        sql.quoted(Assignment, "sa"),
    )
    gold_purpose = Item.Purpose.GOLD.value
    quote = connection.ops.quote_name
    rid, gid = quote("id"), quote("gold_id")
    recent = (
        f"gold_recent AS (SELECT {r.id} AS {rid}, CASE WHEN {rs.target_count} >= {EVERYONE}"
        f" AND {ri.purpose} = '{gold_purpose}' THEN {r.id} END AS {gid}"
        f" FROM (SELECT {sql.quoted(Assignment).id}, {sql.quoted(Assignment).item_stage_id}"
        f" FROM {assignments} WHERE {sql.quoted(Assignment).annotator_id} = %(annotator)s"
        f" AND {sql.quoted(Assignment).stage_id} = %(stage)s"
        f" ORDER BY {sql.quoted(Assignment).id} DESC LIMIT %(gold_window)s) r"
        f" JOIN {item_stages} rs ON {rs.id} = {r.item_stage_id}"
        f" JOIN {items} ri ON {ri.id} = {rs.item_id})"
    )
    last = f"gold_last AS (SELECT COALESCE(MAX({gid}), 0) AS {gid} FROM gold_recent)"
    since = f"(SELECT COUNT(*) FROM gold_recent WHERE {rid} > (SELECT {gid} FROM gold_last))"
    source_id = _SOURCE_ID["postgresql" if vendor == "postgresql" else "sqlite"].format(
        payload=own.payload, field=GOLD_SOURCE_FIELD
    )
    search = (
        f"{common} AND {_is_gold('c')}"
        f" AND {since} >= 1"
        f" AND {since} >= %(gold_every)s - 1"
        f" + (%(salt)s + (SELECT {gid} FROM gold_last)) %% %(gold_every)s"
        f" AND NOT EXISTS (SELECT 1 FROM {items} gi"
        f" JOIN {item_stages} ss ON {source.item_id} = {source_id}"
        f" JOIN {assignments} sa ON {sa.item_stage_id} = {source.id}"
        f" WHERE {own.id} = {c.item_id} AND {sa.annotator_id} = %(annotator)s)"
    )
    return [recent, last], search


def _search_rules(reached: StageForAnnotator) -> list[dict[str, Any]]:
    """The eligibility rules of the annotator's search in the stage: the stage's own and, for
    someone an annotator gate governs, the gates' rules (annotation.gates.search_rules)."""
    return gates.search_rules(reached.stage.eligibility or [], governed=reached.governed)


def reached_by(stage: Stage, annotator_id: int) -> StageForAnnotator:
    """`stage` as access_stage_for_annotator would return it, for callers that hold a plain
    stage (scripts, demos, tests): no current lease (a held one is found on the way, as a
    collision with it), and the gates asked in one statement (annotation.gates.governed)."""
    governed = gates.governed(annotator_id=annotator_id, project_id=stage.project_id)
    return StageForAnnotator(stage=stage, current_assignment_id=None, governed=governed)


def _candidate_statement(
    reached: StageForAnnotator,
    annotator_id: int,
    after: int | None = None,
    given: list[int] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The candidate search for this annotator in this stage (_candidate_sql) and all its
    parameters; `after` (an item stage id) asks for the SWEEP order, `given` (item stage ids)
    for the GIVEN set. The search rules are worked out once per call and the text comes from
    the per-process cache."""
    stage = reached.stage
    rules = _search_rules(reached)
    gold = after is None and given is None and stage.gold_every > 0
    order = GIVEN if given is not None else SWEEP if after is not None else stage.order_policy
    text, rule_params = _candidate_sql(
        order,
        connection.vendor,
        json.dumps(stage.phases or [], sort_keys=True),
        json.dumps(rules, sort_keys=True),
        gold,
    )
    salt = _annotator_salt(stage, annotator_id)
    params: dict[str, Any] = {
        "stage": stage.pk,
        "annotator": annotator_id,
        "project": stage.project_id,
        "salt": salt,
        **rule_params,
    }
    if gold:
        params["gold_every"] = stage.gold_every
        params["gold_window"] = 2 * stage.gold_every - 1
    if given is not None:
        params["given"] = given
    elif after is not None:
        params["after"] = after
    elif stage.order_policy == Stage.OrderPolicy.RANDOM:
        params["spread"] = salt % 997
    else:
        params["entry"] = salt % (2**31)
    return text, params


def assignment_next(
    *, annotator: User, stage: StageForAnnotator | Stage, after: int | None = None
) -> Assignment | None:
    """Lease the next item of the stage to `annotator`, or return None when none is left.

    `after`: an item stage id (0 to start) asks for the SWEEP order instead of the stage's
    (_candidate_sql): the open items by id after it, then the rest from the start. For callers
    that keep their cursor and show no order effects — machine raters (llm/runs.py): the stage's
    orders give each person their own order and finish items in progress first, but they pass
    over items the caller already answered while those stay open, which an extra rater's do, so
    a lease there costs O(items answered); a sweep's costs O(1). Every rule of the stage
    (overlap, phases, eligibility, gates) holds as in the stage's order.

    `stage`: what access_stage_for_annotator returned (it carries the current lease id and the
    gates' flag, so nothing is read again); a plain Stage is taken too (reached_by).
    Asking again while holding an unexpired lease returns the same assignment (renewed).

    Locking: the chosen ItemStage row is taken with SELECT … FOR UPDATE SKIP LOCKED inside one
    transaction, so concurrent annotators never take the same slot; the slot counters change
    under that lock and a CHECK constraint backs the overlap invariant. Two simultaneous requests
    of one annotator collide on the one-active-lease-per-stage constraint; the loser retries and
    gets the winner's lease.

    Someone an annotator gate governs (annotation.gates) is searched in a transaction that asks
    the gates first (None when one refuses) and applies their rules.
    """
    reached = stage if isinstance(stage, StageForAnnotator) else reached_by(stage, annotator.pk)
    for attempt in range(3):
        try:
            return _assignment_next(annotator, reached, after)
        except IntegrityError:
            if attempt == 2:
                raise
            held = (
                Assignment.objects.filter(
                    stage=reached.stage, annotator=annotator.pk, status=Assignment.Status.ACTIVE
                )
                .values_list("pk", flat=True)
                .first()
            )
            reached = reached._replace(current_assignment_id=held)
    return None  # pragma: no cover


def _assignment_next(
    annotator: User, reached: StageForAnnotator, after: int | None = None
) -> Assignment | None:
    """The one-statement lease when it can be one (_lease_at_once), otherwise the search,
    renewal and reclaiming in one transaction (_assignment_next_in_transaction)."""
    eligibility = reached.stage.eligibility
    if (
        connection.vendor == "postgresql"
        and reached.current_assignment_id is None
        and not reached.governed
        and not (eligibility and counts_own_work(eligibility))
    ):
        if not connection.in_atomic_block:
            leased = _lease_at_once(annotator, reached, after)
        else:
            with transaction.atomic():  # a savepoint: a failed statement leaves the caller's
                leased = _lease_at_once(annotator, reached, after)
        if leased is not None:
            return leased
    return _assignment_next_in_transaction(annotator, reached, after)


@transaction.atomic
def _assignment_next_in_transaction(
    annotator: User, reached: StageForAnnotator, after: int | None = None
) -> Assignment | None:
    stage = reached.stage
    if reached.governed and gates.refusal(
        annotator_id=annotator.pk, stage=stage, action=gates.NEXT
    ):
        return None
    rules = _search_rules(reached)
    if rules and counts_own_work(rules):
        sql.annotator_lock(stage.pk, annotator.pk)  # a quota: one search at a time per person
    now = timezone.now()
    if reached.current_assignment_id is not None:
        current = _renew(reached.current_assignment_id, now, stage)
        if current is not None:
            return current
    statement = _candidate_statement(reached, annotator.pk, after)
    item_stage = _take_candidate(statement)
    if item_stage is None:
        if not leases_reclaim_expired(stage_id=stage.pk, now=now):
            return None
        item_stage = _take_candidate(statement)
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
    slot, lease = sql.quoted(ItemStage), sql.quoted(Assignment)
    returned = connection.ops.quote_name("id")
    # chosen's columns are named c0, c1, … by the CTE's column list (ours, not the schema's).
    return f"""
        WITH chosen({", ".join(names)}) AS ({candidate_sql}),
        slot AS (
            UPDATE {sql.table(ItemStage)} SET {slot.leased_count} = {slot.leased_count} + 1
            WHERE {slot.id} = (SELECT {position["id"]} FROM chosen)
        ),
        lease AS (
            INSERT INTO {sql.table(Assignment)}
                ({lease.item_stage_id}, {lease.stage_id}, {lease.annotator_id}, {lease.status},
                 {lease.created_at}, {lease.expires_at}, {lease.finished_at},
                 {lease.skip_reason}, {lease.round}, {lease.phase}, {lease.item_version})
            SELECT {position["id"]}, %(stage)s, %(annotator)s, %(status)s, %(created_at)s,
                   %(expires_at)s, NULL, '', {position["round"]}, {position["phase"]},
                   {item_version}
            FROM chosen
            RETURNING {lease.id}
        )
        SELECT chosen.*, lease.{returned} FROM chosen CROSS JOIN lease
        """


def _lease_at_once(
    annotator: User, reached: StageForAnnotator, after: int | None = None
) -> Assignment | None:
    """Lease the next candidate in one statement (_lease_sql), or None when the search found
    nothing (the caller then reclaims expired leases and searches again). Two requests of one
    annotator at once collide on the one-active-lease constraint: IntegrityError, nothing
    stored, as in the transaction."""
    stage = reached.stage
    now = timezone.now()
    candidate_sql, params = _candidate_statement(reached, annotator.pk, after)
    params.update(
        status=Assignment.Status.ACTIVE,
        created_at=now,
        expires_at=now + timedelta(seconds=stage.lease_seconds),
    )
    row = sql.fetchone(_lease_sql(candidate_sql), params)
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
            _insert_lease_sql(connection.vendor),
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


@cache
def _insert_lease_sql(vendor: str) -> str:
    """The statement of _insert_lease on PostgreSQL (text built once per process)."""
    slot, lease = sql.quoted(ItemStage), sql.quoted(Assignment)
    return f"""
        WITH slot AS (
            UPDATE {sql.table(ItemStage)} SET {slot.leased_count} = {slot.leased_count} + 1
            WHERE {slot.id} = %(item_stage)s
        )
        INSERT INTO {sql.table(Assignment)}
            ({lease.item_stage_id}, {lease.stage_id}, {lease.annotator_id}, {lease.status},
             {lease.created_at}, {lease.expires_at}, {lease.finished_at}, {lease.skip_reason},
             {lease.round}, {lease.phase}, {lease.item_version})
        VALUES (%(item_stage)s, %(stage)s, %(annotator)s, %(status)s, %(created_at)s,
                %(expires_at)s, NULL, '', %(round)s, %(phase)s, %(item_version)s)
        RETURNING {lease.id}
        """


def _take_candidate(statement: tuple[str, dict[str, Any]]) -> ItemStage | None:
    """Lock and return the first candidate (with its item), skipping rows others hold: one
    statement (_candidate_statement)."""
    row = sql.fetchone(*statement)
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
