"""Stranded items: item stages still collecting answers that need more people than can still
take them — the members with the annotator role (not paused), minus those who already held
the item in its current round and phase (answered, skipped, let the lease expire or had it
released), minus those the stage's eligibility rules keep off it (annotation.eligibility).
Such an item stays "in the pipeline" for ever unless an admin acts (annotation/services/
item_actions.py) or adds people; the Setup tab, the Agreement dashboard and the item page say so.

Why hand-written SQL: the eligibility rules exist only as SQL conditions on a candidate item
stage (annotation/eligibility.py says why), so counting who may still take an item means
running them for members and item stages, in SQL (below: for as few pairs as the argument
allows). Not counted: a phase's people
rule (annotation.phases) and annotator gates (annotation.gates), which may keep still more
people off: the count is an upper bound, so a stage named here is stranded for certain.
Item stages open to every annotator (annotation.slots.EVERYONE: practice items, checks) never
fill by design, so they are never stranded.

A stage without eligibility rules is counted set-based, and only over the item stages that can
be stranded at all (so the Agreement tab does not read every open item of a large stage): with
P members and T the most answers any open item stage still needs (item_stage_open_target_idx),
an item stage is stranded when fewer than its missing answers (at most T) of the P have not
held it, so any T members include one who held it. The statement therefore starts from the
assignments of the T members who hold the fewest in the stage (often none: nothing is stranded
then) and counts, for those item stages alone, who held them. When P < T every open item stage
is a candidate.

A stage with rules uses the same argument with the rules in it. A member is *ineligible* for
an item stage when they held it (in its round and phase) or a rule keeps them off it. If an
item stage is stranded (fewer than ``missing`` eligible members), then any ``missing`` members
include an ineligible one. So the statement first picks W = min(P, T) *witnesses*, ranked,
and keeps as candidates only the item stages that need more than W answers or for which one
of the first ``missing`` witnesses is ineligible; only those are counted member by member. Any
choice of witnesses gives the exact answer; a good one keeps the candidates few: the members
eligible for the most of a sample of the stage's open item stages (``SAMPLE``, the first by
id), then those who hold the fewest. So the rules run at most W times per open item stage
(instead of P times) plus P times per candidate: the statement still reads every open item
stage of the stage once (a rule is a condition on one member and one item stage, whose
excluded pairs cannot be listed without running it), but no longer once per member
(benchmarks/stranding_rules.py measures both; benchmarks/README.md, "Pages at scale").

Every statement here runs on ``rungwise.replica.read_connection``: the replica on a page that
reads there (the Agreement tab's warning), the primary elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from annotation import sql
from annotation.eligibility import RULES, RuleSQL
from annotation.models import Assignment, Item, ItemStage, Membership, Project, Role, Stage
from annotation.slots import EVERYONE
from rungwise.replica import read_connection

#: Stranded item stages listed per stage (the count covers them all).
EXAMPLES = 20
#: How many of a stage's open item stages (the first by id) the witnesses of a stage with
#: rules are chosen on (module docstring; the choice changes the cost, never the answer).
SAMPLE = 64


@dataclass(frozen=True)
class StrandedItem:
    """One item stage that cannot finish: ``missing`` answers still needed (free slots),
    ``eligible`` people who may still take it."""

    item_stage_id: int
    item_id: int
    external_id: str
    stage_id: int
    missing: int
    eligible: int


@dataclass(frozen=True)
class StrandedStage:
    """A stage with stranded items: how many, and the first few (``items``)."""

    stage: Stage
    count: int
    items: list[StrandedItem]

    @property
    def words(self) -> str:
        first = self.items[0] if self.items else None
        needs = (
            f" ({'the first ' if self.count > 1 else 'it '}needs "
            f"{first.missing} more answer{'s' if first.missing != 1 else ''}; "
            f"{first.eligible} eligible annotator{'s' if first.eligible != 1 else ''} left)"
            if first
            else ""
        )
        return (
            f"{self.stage.name}: {self.count} item{'s' if self.count != 1 else ''} "
            f"need{'s' if self.count == 1 else ''} more people than can still take "
            f"{'it' if self.count == 1 else 'them'}{needs}."
        )


def _fetchone(statement: str, params: dict[str, Any]) -> tuple | None:
    with read_connection(ItemStage).cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchone()


def _fetchall(statement: str, params: dict[str, Any], *, no_jit: bool = False) -> list[tuple]:
    """The rows of a statement; ``no_jit``: with PostgreSQL's JIT compilation off for it (the
    statement with rules is estimated costly enough to be compiled, which took 2 s of its 3.5
    at 100,000 open item stages: benchmarks/README.md, "Pages at scale")."""
    connection = read_connection(ItemStage)
    if not no_jit or connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            return cursor.fetchall()
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        cursor.execute(statement, params)
        return cursor.fetchall()


def _rules(
    stage: Stage, params: dict[str, Any], *, annotator: str | None = None, prefix: str = "e"
) -> list[str]:
    """The stage's eligibility rules as SQL conditions on the candidate ``c`` and the member
    whose user id is the SQL ``annotator`` (``m``'s by default), their aliases and parameters
    named from ``prefix`` (their parameters added to ``params``)."""
    if annotator is None:
        annotator = sql.quoted(Membership, "m").user_id
    rules = []
    for index, spec in enumerate(stage.eligibility or []):
        rule = RULES.get(str(spec.get("rule"))) if isinstance(spec, dict) else None
        if rule is None:
            continue
        condition = rule.sql(
            spec,
            RuleSQL(prefix=f"{prefix}{index}_", candidate="c", annotator=annotator),
        )
        rules.append(f"({condition.sql})")
        params.update(condition.params)
    return rules


def _stranded_sql(
    stage: Stage,
    *,
    only_ids: bool,
    held_by: list[int] | None = None,
    witnesses: list[int] | None = None,
) -> tuple[str, dict[str, Any]]:
    """One statement: the stage's stranded item stages (id, item_id, external_id, missing,
    eligible) in id order; with ``only_ids`` the text holds ``{c_id} IN ({ids})`` for the
    caller to fill in; with ``held_by`` (a stage without rules) only the item stages these
    members held in their round and phase are looked at; with ``witnesses`` (a stage with
    rules: ``_witnesses``) only the item stages one of them may not take (the module's
    docstring says why either finds them all)."""
    c, m = sql.quoted(ItemStage, "c"), sql.quoted(Membership, "m")
    a = sql.quoted(Assignment, "a")
    i = sql.quoted(Item, "i")
    params = _base_params(stage)
    rules = _rules(stage, params)
    members = _members_sql(m)
    missing = f"({c.target_count} - {c.submitted_count} - {c.leased_count})"
    candidates = (
        f"{c.stage_id} = %(stage)s AND {c.state} = %(open)s AND {missing} > 0"
        f" AND {c.target_count} < %(everyone)s" + (" AND {c_id} IN ({ids})" if only_ids else "")
    )
    if rules:
        if witnesses:
            candidates += " AND " + _witness_filter(stage, witnesses, missing, params)
        # A rule is a condition on one member and one candidate: counted member by member.
        eligible = (
            f"(SELECT COUNT(*) FROM {sql.table(Membership)} m WHERE {members}"
            f" AND NOT EXISTS (SELECT 1 FROM {sql.table(Assignment)} a"
            f" WHERE {a.item_stage_id} = {c.id} AND {a.annotator_id} = {m.user_id}"
            f" AND {a.round} = {c.round} AND {a.phase} = {c.phase})"
            + "".join(f" AND {rule}" for rule in rules)
            + ")"
        )
        # The candidates first, as a materialised CTE: PostgreSQL would otherwise push the
        # outer ``eligible < missing`` into the scan and count every open item stage member
        # by member before the witnesses' filter (EXPLAIN ANALYZE; benchmarks/README.md).
        fence = " MATERIALIZED" if read_connection(ItemStage).vendor == "postgresql" else ""
        inner = (
            f"SELECT {c.id} AS id, {c.item_id} AS item_id, {i.external_id} AS external_id,"
            f" {missing} AS missing, {eligible} AS eligible"
            f" FROM o c JOIN {sql.table(Item)} i ON {i.id} = {c.item_id}"
        )
        return (
            f"WITH o AS{fence} (SELECT * FROM {sql.table(ItemStage)} c WHERE {candidates})"
            f" SELECT * FROM ({inner}) x WHERE x.eligible < x.missing ORDER BY x.id",
            params,
        )
    # Without rules, set-based: eligible = the members, minus those who held the item stage
    # in its round and phase (one assignment each at most: assignment_unique_per_annotator).
    source = f"{sql.table(ItemStage)} c WHERE {candidates}"
    if held_by is not None:
        names = []
        for index, pk in enumerate(held_by):
            params[f"s{index}"] = pk
            names.append(f"%(s{index})s")
        source = (
            f"{sql.table(Assignment)} a JOIN {sql.table(ItemStage)} c ON {c.id} = {a.item_stage_id}"
            f" AND {c.round} = {a.round} AND {c.phase} = {a.phase}"
            f" WHERE {a.annotator_id} IN ({', '.join(names) or 'NULL'})"
            f" AND {a.stage_id} = %(stage)s AND {candidates}"
        )
    statement = (
        f"WITH o AS (SELECT DISTINCT {c.id} AS id, {c.item_id} AS item_id, {c.round} AS rnd,"
        f" {c.phase} AS phase, {missing} AS missing FROM {source}),"
        f" n AS (SELECT COUNT(*) AS people FROM {sql.table(Membership)} m WHERE {members}),"
        f" h AS (SELECT {a.item_stage_id} AS id, COUNT(*) AS held"
        f" FROM {sql.table(Assignment)} a JOIN o ON o.id = {a.item_stage_id}"
        f" AND {a.round} = o.rnd AND {a.phase} = o.phase"
        f" WHERE {a.annotator_id} IN (SELECT {m.user_id} FROM {sql.table(Membership)} m"
        f" WHERE {members}) GROUP BY {a.item_stage_id})"
        f" SELECT o.id, o.item_id, {i.external_id}, o.missing,"
        f" n.people - COALESCE(h.held, 0) AS eligible"
        f" FROM o CROSS JOIN n LEFT JOIN h ON h.id = o.id"
        f" JOIN {sql.table(Item)} i ON {i.id} = o.item_id"
        f" WHERE n.people - COALESCE(h.held, 0) < o.missing ORDER BY o.id"
    )
    return statement, params


def _witness_filter(
    stage: Stage, witnesses: list[int], missing: str, params: dict[str, Any]
) -> str:
    """The condition that keeps a candidate ``c`` (module docstring): it needs more answers
    than there are witnesses, or one of its first ``missing`` witnesses held it or is kept off
    it by a rule."""
    a, c = sql.quoted(Assignment, "a"), sql.quoted(ItemStage, "c")
    # A derived table of (user id, rank) that SQLite reads too (no column list on VALUES).
    ranks = " UNION ALL ".join(
        f"SELECT CAST(%(w{rank})s AS BIGINT) AS user_id, {rank + 1} AS rnk"
        for rank in range(len(witnesses))
    )
    params.update({f"w{rank}": pk for rank, pk in enumerate(witnesses)})
    rules = _rules(stage, params, annotator="w.user_id", prefix="w")
    kept_off = " OR ".join(f"NOT {rule}" for rule in rules)
    return (
        f"({missing} > {len(witnesses)} OR EXISTS (SELECT 1 FROM ({ranks}) w"
        f" WHERE w.rnk <= {missing} AND (EXISTS (SELECT 1 FROM {sql.table(Assignment)} a"
        f" WHERE {a.item_stage_id} = {c.id} AND {a.annotator_id} = w.user_id"
        f" AND {a.round} = {c.round} AND {a.phase} = {c.phase}) OR {kept_off})))"
    )


def _witnesses(stage: Stage) -> list[int] | None:
    """For a stage with rules: the W witnesses (module docstring) in rank order; None when no
    open item stage needs an answer. Two statements: the most answers needed and the number
    of members (one probe each), then the members ranked on a sample of ``SAMPLE`` open item
    stages (each member's rules run ``SAMPLE`` times)."""
    c, m, a = sql.quoted(ItemStage, "c"), sql.quoted(Membership, "m"), sql.quoted(Assignment, "a")
    params = _base_params(stage, sample=SAMPLE, cap=COUNT_CAP)
    members = _members_sql(m)
    most, people = _most_needed_and_people(c, m, params)
    if not most:
        return None
    if not people:
        return []
    params["most"] = min(int(most), int(people))
    rules = _rules(stage, params)
    missing = f"({c.target_count} - {c.submitted_count} - {c.leased_count})"
    eligible_in_sample = (
        f"(SELECT COUNT(*) FROM sample c WHERE NOT EXISTS (SELECT 1 FROM"
        f" {sql.table(Assignment)} a WHERE {a.item_stage_id} = {c.id}"
        f" AND {a.annotator_id} = {m.user_id} AND {a.round} = {c.round}"
        f" AND {a.phase} = {c.phase})" + "".join(f" AND {rule}" for rule in rules) + ")"
    )
    rows = _fetchall(
        f"WITH sample AS (SELECT * FROM {sql.table(ItemStage)} c"
        f" WHERE {c.stage_id} = %(stage)s AND {c.state} = %(open)s AND {missing} > 0"
        f" AND {c.target_count} < %(everyone)s ORDER BY {c.id} LIMIT %(sample)s)"
        f" SELECT {m.user_id} FROM {sql.table(Membership)} m WHERE {members}"
        f" ORDER BY {eligible_in_sample} DESC,"
        f" (SELECT COUNT(*) FROM (SELECT 1 FROM {sql.table(Assignment)} a"
        f" WHERE {a.annotator_id} = {m.user_id} AND {a.stage_id} = %(stage)s"
        f" LIMIT %(cap)s) x), {m.user_id} LIMIT %(most)s",
        params,
    )
    return [pk for (pk,) in rows]


def _base_params(stage: Stage, **extra: Any) -> dict[str, Any]:
    """The parameters every statement of the check names: the stage's project, the stage, the
    annotator role, the open state and the "everyone" target; ``extra`` adds a statement's own."""
    return {
        "project": stage.project_id,
        "stage": stage.pk,
        "annotator_role": Role.ANNOTATOR.value,
        "open": ItemStage.State.OPEN.value,
        "everyone": EVERYONE,
        **extra,
    }


def _members_sql(m: Any) -> str:
    """The condition on memberships ``m`` of the stage's annotators who can take work."""
    return f"{m.project_id} = %(project)s AND {m.role} = %(annotator_role)s AND NOT {m.is_paused}"


def _most_needed_and_people(c: Any, m: Any, params: dict[str, Any]) -> tuple[int | None, int]:
    """(the largest target of the stage's open item stages — it bounds the answers any of them
    still needs, item_stage_slots_within_target — or None when none is open; how many members
    can take work). One statement; ``params`` names the project, stage, role and states."""
    found = _fetchone(
        f"SELECT (SELECT MAX({c.target_count}) FROM {sql.table(ItemStage)} c"
        f" WHERE {c.stage_id} = %(stage)s AND {c.state} = %(open)s"
        f" AND {c.target_count} < %(everyone)s),"
        f" (SELECT COUNT(*) FROM {sql.table(Membership)} m WHERE {_members_sql(m)})",
        params,
    )
    most, people = found or (None, 0)
    return most, people


#: How many of a member's assignments in the stage are counted when choosing the members who
#: hold the fewest (the choice only changes how many item stages are looked at, never the answer).
COUNT_CAP = 64


def _fewest_holders(stage: Stage) -> list[int] | None:
    """For a stage without rules: the T members (module docstring) who hold the fewest item
    stages in it, where T is the most answers an open item stage still needs; [] when no open
    item stage needs any; None when every open item stage must be looked at (fewer members
    than T). Two statements, each reading a bounded part of an index."""
    c, m, a = sql.quoted(ItemStage, "c"), sql.quoted(Membership, "m"), sql.quoted(Assignment, "a")
    params = _base_params(stage)
    members = _members_sql(m)
    most, people = _most_needed_and_people(c, m, params)
    if not most:
        return []
    if people < most:
        return None
    params["most"], params["cap"] = int(most), COUNT_CAP
    rows = _fetchall(
        f"SELECT {m.user_id} FROM {sql.table(Membership)} m WHERE {members}"
        f" ORDER BY (SELECT COUNT(*) FROM (SELECT 1 FROM {sql.table(Assignment)} a"
        f" WHERE {a.annotator_id} = {m.user_id} AND {a.stage_id} = %(stage)s"
        f" LIMIT %(cap)s) x), {m.user_id} LIMIT %(most)s",
        params,
    )
    return [pk for (pk,) in rows]


def item_stages_stranded(
    project: Project, *, item_stage_ids: Iterable[int] | None = None
) -> list[StrandedItem]:
    """The project's stranded item stages (of its active stages), in id order; with
    ``item_stage_ids`` only those (the item page asks about one item)."""
    ids = None if item_stage_ids is None else [int(pk) for pk in item_stage_ids]
    stages = Stage.objects.filter(project=project, is_active=True).order_by("position")
    if ids is not None:
        if not ids:
            return []
        # Only the stages of the item stages asked about: one statement each.
        stages = stages.filter(pk__in=ItemStage.objects.filter(pk__in=ids).values("stage_id"))
    found: list[StrandedItem] = []
    for stage in stages:
        found += _stranded(stage, ids=ids)[0]
    return found


def _stranded(
    stage: Stage, *, ids: list[int] | None, limit: int | None = None
) -> tuple[list[StrandedItem], int]:
    """The stage's stranded item stages (the first ``limit`` of them) and how many there are
    in all: one statement, after two that bound the item stages it looks at (``ids`` None)."""
    held_by = witnesses = None
    if ids is None and not _rules(stage, {}):
        held_by = _fewest_holders(stage)
        if held_by == []:
            return [], 0
    elif ids is None:
        witnesses = _witnesses(stage)
        if witnesses is None:
            return [], 0
    statement, params = _stranded_sql(
        stage, only_ids=ids is not None, held_by=held_by, witnesses=witnesses
    )
    if ids is not None:
        if not ids:
            return [], 0
        c = sql.quoted(ItemStage, "c")
        names = []
        for index, pk in enumerate(ids):
            params[f"id{index}"] = pk
            names.append(f"%(id{index})s")
        statement = statement.replace("{c_id}", str(c.id)).replace("{ids}", ", ".join(names))
    statement = f"SELECT y.*, COUNT(*) OVER () FROM ({statement}) y ORDER BY y.id"
    if limit is not None:
        statement += f" LIMIT {int(limit)}"
    rows = _fetchall(statement, params, no_jit=witnesses is not None)
    found = [
        StrandedItem(
            item_stage_id=pk,
            item_id=item_id,
            external_id=external_id,
            stage_id=stage.pk,
            missing=int(missing),
            eligible=int(eligible),
        )
        for pk, item_id, external_id, missing, eligible, _ in rows
    ]
    return found, (int(rows[0][-1]) if rows else 0)


def stages_stranded(project: Project) -> list[StrandedStage]:
    """Per active stage of ``project`` with stranded items: how many and the first
    ``EXAMPLES`` of them (what the Setup tab and the Agreement dashboard warn about); at most
    three statements per stage."""
    warnings = []
    for stage in Stage.objects.filter(project=project, is_active=True).order_by("position"):
        items, count = _stranded(stage, ids=None, limit=EXAMPLES)
        if count:
            warnings.append(StrandedStage(stage=stage, count=count, items=items))
    return warnings
