"""Eligibility: who may take an item of a stage, declared per stage and enforced inside the
candidate search (annotation.sql), on PostgreSQL and SQLite alike, without per-kind SQL.

A stage's ``eligibility`` is a JSON list of rules::

    [{"rule": "not_author"},                        never the item's author
     {"rule": "not_in_stage", "stage": "verify"},   nobody who worked on this item in "verify"
     {"rule": "blind"},                             nobody who worked on this item in an
                                                    earlier stage (a blind baseline)
     {"rule": "skill", "tag": "medicine"}]          only members with that skill tag

Each rule is a :class:`Rule` registered under its name; it contributes one SQL condition on the
candidate item stage with *named* parameters, written against the names the engine hands it in
a :class:`RuleSQL` (the candidate's alias and columns, the annotator's and the project's
parameters, quoted table names, a prefix that keeps its aliases and parameters apart from the
search's and from other rules'): a rule never guesses the engine's aliases or table names.
Plug-ins register rules of their own with :func:`register_rule`. The phase rules (``people``:
new / same) come from annotation.phases and are added by the search itself.

Why SQL and not the ORM: the conditions go inside the candidate search, a hand-written
statement built once per process (annotation/services/next_item.py, annotation/sql.py), where a
queryset cannot be embedded without compiling it on every request.

Where each rule's Python twin lives: none has one. The rules are enforced only here, in SQL;
``describe`` says them in words (the Setup tab). Tests: tests/annotation/test_eligibility.py
runs every rule on both databases and both PostgreSQL lease paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from django.db import connection
from django.db.models import Model

from annotation.errors import ApplicationError


@dataclass(frozen=True)
class Condition:
    """One SQL condition and its named parameters."""

    sql: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class RuleSQL:
    """The names a rule's SQL may use (:meth:`Rule.sql`), handed over by the candidate search.

    - ``candidate``: the alias of the candidate item stage row; :meth:`column` names its
      columns (``id``, ``item_id``, ``stage_id``, ``round``, ``phase``);
    - ``annotator`` / ``project``: the placeholders of the annotator's and the project's ids;
    - :meth:`table`: any model's quoted table name (the engine's and a plug-in's own alike);
    - :meth:`alias` / :meth:`param`: the rule's own table aliases and parameter placeholders,
      prefixed per rule position so that two rules never clash (:meth:`key` is the name a
      parameter gets in ``Condition.params``).
    """

    prefix: str
    candidate: str = "c"
    annotator: str = "%(annotator)s"
    project: str = "%(project)s"

    def column(self, name: str) -> str:
        return f"{self.candidate}.{connection.ops.quote_name(name)}"

    def table(self, model: type[Model]) -> str:
        return connection.ops.quote_name(model._meta.db_table)

    def alias(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def param(self, name: str) -> str:
        return f"%({self.key(name)})s"


class Rule:
    """Base class: set ``name``, implement ``clean`` (the rule's options, checked) and ``sql``
    (a condition on the candidate, written with the names in ``names``: RuleSQL)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: True when the condition counts the annotator's own leases or answers in the stage (a
    #: quota). The search reads them as of the moment its statement starts, so two requests of
    #: one annotator must not search at once (the second could miss the lease the first takes
    #: and answers meanwhile, and both would pass a limit only one may): for such a rule the
    #: engine serialises an annotator's searches in a stage (see annotation.sql.annotator_lock).
    counts_own_work: ClassVar[bool] = False

    def clean(self, spec: Mapping[str, Any], *, stage_slugs: Sequence[str]) -> dict[str, Any]:
        return {"rule": self.name}

    def sql(self, spec: Mapping[str, Any], names: RuleSQL) -> Condition:
        raise NotImplementedError

    def describe(self, spec: Mapping[str, Any]) -> str:
        """The rule in words, for the Setup tab (a cleaned ``spec``)."""
        return self.description[:1].upper() + self.description[1:]


class NotAuthor(Rule):
    name = "not_author"
    description = "never the item's author"

    def sql(self, spec, names):
        from annotation.models import Item

        i = names.alias("i")
        return Condition(
            f'NOT EXISTS (SELECT 1 FROM {names.table(Item)} {i} WHERE {i}."id" ='
            f' {names.column("item_id")} AND {i}."author_id" = {names.annotator})',
            {},
        )


class NotInStage(Rule):
    name = "not_in_stage"
    description = "nobody who worked on this item in another stage"

    def clean(self, spec, *, stage_slugs):
        stage = spec.get("stage")
        if stage not in stage_slugs:
            raise ApplicationError(
                f"not_in_stage: there is no stage {stage!r} in this project.",
                {"eligibility": stage},
            )
        return {"rule": self.name, "stage": stage}

    def sql(self, spec, names):
        from annotation.models import Assignment, ItemStage, Stage

        a, s, st = names.alias("a"), names.alias("s"), names.alias("st")
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {names.table(Assignment)} {a}"
            f' JOIN {names.table(ItemStage)} {s} ON {s}."id" = {a}."item_stage_id"'
            f' JOIN {names.table(Stage)} {st} ON {st}."id" = {s}."stage_id"'
            f' WHERE {s}."item_id" = {names.column("item_id")}'
            f' AND {a}."annotator_id" = {names.annotator} AND {st}."slug" = {names.param("stage")}'
            f""" AND {a}."status" IN ('active', 'submitted'))""",
            {names.key("stage"): spec["stage"]},
        )


class Blind(Rule):
    """A blind stage (a human baseline): nobody who already worked on the item in another stage
    of the project may take it — whoever held a lease on it there (answered, skipped, let it
    expire or was withdrawn: they were shown it), has an answer on it there (one imported
    without a lease too) or decided it as a reviewer. At the moment of
    a lease every such piece of work lies in the past, so "another stage" means "an earlier
    stage" whatever order the routes took the item in (a loop back included).

    ``made_from`` (optional): a payload field of the candidate item that holds the external id
    of the project item it was made from (a blind copy of a case under a neutral handle, an
    entry generated from a pair); work on that item counts as work on this one."""

    name = "blind"
    description = "nobody who worked on this item in an earlier stage"

    def clean(self, spec, *, stage_slugs):
        made_from = spec.get("made_from")
        if made_from is None:
            return {"rule": self.name}
        if not isinstance(made_from, str) or not made_from.isidentifier():
            raise ApplicationError(
                "blind: made_from names one payload field (letters, digits and _).",
                {"eligibility": made_from},
            )
        return {"rule": self.name, "made_from": made_from}

    def sql(self, spec, names):
        from annotation.models import Annotation, Assignment, Item, ItemStage, Resolution

        s, a, n, r = (names.alias(name) for name in ("s", "a", "n", "r"))
        ci, o = names.alias("ci"), names.alias("o")
        items = f'{s}."item_id" = {names.column("item_id")}'
        params: dict[str, Any] = {}
        if spec.get("made_from"):
            field = f'{ci}."payload" ->> CAST({names.param("field")} AS TEXT)'
            params[names.key("field")] = spec["made_from"]
            if connection.vendor != "postgresql":
                field = f'json_extract({ci}."payload", {names.param("field")})'
                params[names.key("field")] = f'$."{spec["made_from"]}"'
            items = (
                f'{s}."item_id" IN ({names.column("item_id")}, (SELECT {o}."id"'
                f" FROM {names.table(Item)} {ci} JOIN {names.table(Item)} {o}"
                f' ON {o}."project_id" = {ci}."project_id" AND {o}."external_id" = {field}'
                f' WHERE {ci}."id" = {names.column("item_id")}))'
            )
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {names.table(ItemStage)} {s}"
            f' WHERE {items} AND {s}."stage_id" <> {names.column("stage_id")} AND ('
            f"EXISTS (SELECT 1 FROM {names.table(Assignment)} {a}"
            f' WHERE {a}."item_stage_id" = {s}."id" AND {a}."annotator_id" = {names.annotator})'
            # An answer stored without a lease (imported for a member): any version, since
            # having given one at all is what counts, not which one is current.
            f" OR EXISTS (SELECT 1 FROM {names.table(Annotation)} {n}"
            f' WHERE {n}."item_stage_id" = {s}."id" AND {n}."annotator_id" = {names.annotator})'
            f" OR EXISTS (SELECT 1 FROM {names.table(Resolution)} {r}"
            f' WHERE {r}."item_stage_id" = {s}."id"'
            f' AND {r}."decided_by_id" = {names.annotator})))',
            params,
        )

    def describe(self, spec):
        words = "Blind: nobody who worked on this item in an earlier stage"
        if spec.get("made_from"):
            words += f" (nor on the item it was made from, named by its {spec['made_from']})"
        return words


class Skill(Rule):
    name = "skill"
    description = "only members with a skill tag"

    def clean(self, spec, *, stage_slugs):
        tag = spec.get("tag")
        if not isinstance(tag, str) or not tag.strip() or any(ch.isspace() for ch in tag.strip()):
            raise ApplicationError(
                "skill: give one tag without spaces.", {"eligibility": tag if tag else "required"}
            )
        return {"rule": self.name, "tag": tag.strip()}

    def sql(self, spec, names):
        from annotation.models import Membership

        m = names.alias("m")
        # Tags are stored space-separated; padding both sides makes LIKE match whole tags.
        return Condition(
            f"EXISTS (SELECT 1 FROM {names.table(Membership)} {m}"
            f' WHERE {m}."project_id" = {names.project} AND {m}."user_id" = {names.annotator}'
            f""" AND {m}."role" = 'annotator'"""
            f""" AND (' ' || {m}."skills" || ' ') LIKE {names.param("tag")})""",
            {names.key("tag"): f"% {spec['tag']} %"},
        )


class AfterStage(Rule):
    """Practice first: items of this stage go only to annotators who have answered every item
    of stage ``stage`` (e.g. the practice items before the real ratings)."""

    name = "after_stage"
    description = "only annotators who finished another stage (practice first)"

    def clean(self, spec, *, stage_slugs):
        stage = spec.get("stage")
        if stage not in stage_slugs:
            raise ApplicationError(
                f"after_stage: there is no stage {stage!r} in this project.",
                {"eligibility": stage},
            )
        return {"rule": self.name, "stage": stage}

    def sql(self, spec, names):
        from annotation.models import Annotation, ItemStage, Stage

        s, st, a = names.alias("s"), names.alias("st"), names.alias("a")
        # Not correlated with the candidate: the database evaluates it once per search.
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {names.table(ItemStage)} {s}"
            f' JOIN {names.table(Stage)} {st} ON {st}."id" = {s}."stage_id"'
            f' WHERE {st}."project_id" = {names.project} AND {st}."slug" = {names.param("stage")}'
            f" AND NOT EXISTS (SELECT 1 FROM {names.table(Annotation)} {a}"
            f' WHERE {a}."item_stage_id" = {s}."id" AND {a}."annotator_id" = {names.annotator}))',
            {names.key("stage"): spec["stage"]},
        )


RULES: dict[str, Rule] = {}


def register_rule(rule: Rule) -> Rule:
    if not rule.name:
        raise ValueError("an eligibility rule needs a name")
    RULES[rule.name] = rule
    return rule


def validate_rules(rules: Any, *, stage_slugs: Sequence[str]) -> list[dict[str, Any]]:
    """Clean a stage's eligibility list; ApplicationError naming the rule otherwise."""
    if rules in (None, ""):
        return []
    if not isinstance(rules, list):
        raise ApplicationError("eligibility must be a list of rules.", {"eligibility": "list"})
    clean = []
    for index, spec in enumerate(rules):
        name = spec.get("rule") if isinstance(spec, Mapping) else None
        if name not in RULES:
            raise ApplicationError(
                f"eligibility[{index}]: unknown rule {name!r}; known: {', '.join(sorted(RULES))}.",
                {f"eligibility[{index}]": name},
            )
        clean.append(RULES[name].clean(spec, stage_slugs=stage_slugs))
    return clean


def counts_own_work(rules: Sequence[Mapping[str, Any]]) -> bool:
    """Whether one of a stage's (cleaned) rules counts the annotator's own work (a quota)."""
    return any(RULES[spec["rule"]].counts_own_work for spec in rules)


def conditions(rules: Sequence[Mapping[str, Any]], *, candidate: str = "c") -> list[Condition]:
    """The SQL conditions of a stage's (cleaned) rules on the candidate item stage aliased
    ``candidate``, aliases and parameter names made unique per rule position."""
    return [
        RULES[spec["rule"]].sql(spec, RuleSQL(prefix=f"e{index}_", candidate=candidate))
        for index, spec in enumerate(rules)
    ]


def describe(rules: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """A stage's (cleaned) rules in words, in order: what the Setup tab shows."""
    return [
        RULES[spec["rule"]].describe(spec) if spec.get("rule") in RULES else str(spec.get("rule"))
        for spec in rules or []
        if isinstance(spec, Mapping)
    ]


def blind(made_from: str | None = None) -> dict[str, Any]:
    """The spec of the ``blind`` rule (:class:`Blind`, optionally following ``made_from``):
    what a workflow template puts on a stage that is a blind baseline."""
    spec: dict[str, Any] = {"rule": Blind.name}
    if made_from:
        spec["made_from"] = made_from
    return spec


#: The engine's own rules, registered by the engine's plug-in (annotation/apps.py).
BUILT_IN_RULES: tuple[Rule, ...] = (NotAuthor(), NotInStage(), Blind(), Skill(), AfterStage())
