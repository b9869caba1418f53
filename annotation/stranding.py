"""Stranded items: item stages still collecting answers that need more people than can still
take them — the members with the annotator role (not paused), minus those who already held
the item in its current round and phase (answered, skipped, let the lease expire or had it
released), minus those the stage's eligibility rules keep off it (annotation.eligibility).
Such an item stays "in the pipeline" for ever unless an admin acts (annotation/services/
item_actions.py) or adds people; the Setup tab, the Agreement dashboard and the item page say so.

Why hand-written SQL: the eligibility rules exist only as SQL conditions on a candidate item
stage (annotation/eligibility.py says why), so counting who may still take an item means
running them once per member, inside one statement per stage. Not counted: a phase's people
rule (annotation.phases) and annotator gates (annotation.gates), which may keep still more
people off: the count is an upper bound, so a stage named here is stranded for certain.
Item stages open to every annotator (annotation.slots.EVERYONE: practice items, checks) never
fill by design, so they are never stranded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from annotation import sql
from annotation.eligibility import RULES, RuleSQL
from annotation.models import Assignment, Item, ItemStage, Membership, Project, Role, Stage
from annotation.slots import EVERYONE

#: Stranded item stages listed per stage (the count covers them all).
EXAMPLES = 20


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


def _stranded_sql(stage: Stage, *, only_ids: bool) -> tuple[str, dict[str, Any]]:
    c, m = sql.quoted(ItemStage, "c"), sql.quoted(Membership, "m")
    a = sql.quoted(Assignment, "a")
    i = sql.quoted(Item, "i")
    params: dict[str, Any] = {
        "project": stage.project_id,
        "stage": stage.pk,
        "annotator_role": Role.ANNOTATOR.value,
        "open": ItemStage.State.OPEN.value,
        "everyone": EVERYONE,
    }
    rules = []
    for index, spec in enumerate(stage.eligibility or []):
        rule = RULES.get(str(spec.get("rule"))) if isinstance(spec, dict) else None
        if rule is None:
            continue
        condition = rule.sql(
            spec,
            RuleSQL(prefix=f"e{index}_", candidate="c", annotator=m.user_id),
        )
        rules.append(f"({condition.sql})")
        params.update(condition.params)
    eligible = (
        f"(SELECT COUNT(*) FROM {sql.table(Membership)} m"
        f" WHERE {m.project_id} = %(project)s AND {m.role} = %(annotator_role)s"
        f" AND NOT {m.is_paused}"
        f" AND NOT EXISTS (SELECT 1 FROM {sql.table(Assignment)} a"
        f" WHERE {a.item_stage_id} = {c.id} AND {a.annotator_id} = {m.user_id}"
        f" AND {a.round} = {c.round} AND {a.phase} = {c.phase})"
        + "".join(f" AND {rule}" for rule in rules)
        + ")"
    )
    missing = f"({c.target_count} - {c.submitted_count} - {c.leased_count})"
    inner = (
        f"SELECT {c.id} AS id, {c.item_id} AS item_id, {i.external_id} AS external_id,"
        f" {missing} AS missing, {eligible} AS eligible"
        f" FROM {sql.table(ItemStage)} c JOIN {sql.table(Item)} i ON {i.id} = {c.item_id}"
        f" WHERE {c.stage_id} = %(stage)s AND {c.state} = %(open)s AND {missing} > 0"
        f" AND {c.target_count} < %(everyone)s"
    )
    if only_ids:
        inner += " AND {c_id} IN ({ids})"
    return f"SELECT * FROM ({inner}) x WHERE x.eligible < x.missing ORDER BY x.id", params


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
        found += _stranded(stage, ids=ids)
    return found


def _stranded(
    stage: Stage, *, ids: list[int] | None, limit: int | None = None
) -> list[StrandedItem]:
    statement, params = _stranded_sql(stage, only_ids=ids is not None)
    if ids is not None:
        if not ids:
            return []
        c = sql.quoted(ItemStage, "c")
        names = []
        for index, pk in enumerate(ids):
            params[f"id{index}"] = pk
            names.append(f"%(id{index})s")
        statement = statement.replace("{c_id}", str(c.id)).replace("{ids}", ", ".join(names))
    if limit is not None:
        statement += f" LIMIT {int(limit)}"
    with sql.cursor() as cursor:
        cursor.execute(statement, params)
        rows = cursor.fetchall()
    return [
        StrandedItem(
            item_stage_id=pk,
            item_id=item_id,
            external_id=external_id,
            stage_id=stage.pk,
            missing=int(missing),
            eligible=int(eligible),
        )
        for pk, item_id, external_id, missing, eligible in rows
    ]


def stages_stranded(project: Project) -> list[StrandedStage]:
    """Per active stage of ``project`` with stranded items: how many and the first
    ``EXAMPLES`` of them (what the Setup tab and the Agreement dashboard warn about)."""
    warnings = []
    for stage in Stage.objects.filter(project=project, is_active=True).order_by("position"):
        statement, params = _stranded_sql(stage, only_ids=False)
        with sql.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM ({statement}) y", params)
            (count,) = cursor.fetchone()
        if count:
            warnings.append(
                StrandedStage(
                    stage=stage, count=count, items=_stranded(stage, ids=None, limit=EXAMPLES)
                )
            )
    return warnings
