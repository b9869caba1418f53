"""Eligibility: who may take an item of a stage, declared per stage and enforced inside the
candidate search (annotation.sql), on PostgreSQL and SQLite alike, without per-kind SQL.

A stage's ``eligibility`` is a JSON list of rules::

    [{"rule": "not_author"},                        never the item's author
     {"rule": "not_in_stage", "stage": "verify"},   nobody who worked on this item in "verify"
     {"rule": "blind"},                             nobody who worked on this item in an
                                                    earlier stage (a blind baseline)
     {"rule": "skill", "tag": "medicine"}]          only members with that skill tag

Each rule is a :class:`Rule` registered under its name; it contributes one SQL condition on the
candidate item stage (alias ``c``, columns ``c.id``, ``c.item_id``, ``c.stage_id``, ``c.round``,
``c.phase``) with *named* parameters (``%(name)s``), given the annotator as
``%(annotator)s`` and the project as ``%(project)s``. Parameter names are prefixed per rule
position, so two rules of one kind never clash. Plug-ins register rules of their own with
:func:`register_rule`. The phase rules (``people``: new / same) come from annotation.phases and
are added by the search itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from annotation.errors import ApplicationError


@dataclass(frozen=True)
class Condition:
    """One SQL condition and its named parameters."""

    sql: str
    params: Mapping[str, Any]


class Rule:
    """Base class: set ``name``, implement ``clean`` (the rule's options, checked) and
    ``condition`` (SQL over the candidate ``c``; ``prefix`` makes parameter names unique;
    ``tables`` maps model names to quoted table names: Item, ItemStage, Assignment,
    Stage, Membership, Project, Annotation, Resolution)."""

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

    def condition(
        self, spec: Mapping[str, Any], *, prefix: str, tables: Mapping[str, str]
    ) -> Condition:
        raise NotImplementedError

    def describe(self, spec: Mapping[str, Any]) -> str:
        """The rule in words, for the Setup tab (a cleaned ``spec``)."""
        return self.description[:1].upper() + self.description[1:]


class NotAuthor(Rule):
    name = "not_author"
    description = "never the item's author"

    def condition(self, spec, *, prefix, tables):
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {tables['Item']} {prefix}i"
            f" WHERE {prefix}i.id = c.item_id AND {prefix}i.author_id = %(annotator)s)",
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

    def condition(self, spec, *, prefix, tables):
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {tables['Assignment']} {prefix}a"
            f" JOIN {tables['ItemStage']} {prefix}s ON {prefix}s.id = {prefix}a.item_stage_id"
            f" JOIN {tables['Stage']} {prefix}st ON {prefix}st.id = {prefix}s.stage_id"
            f" WHERE {prefix}s.item_id = c.item_id AND {prefix}a.annotator_id = %(annotator)s"
            f" AND {prefix}st.slug = %({prefix}stage)s"
            f" AND {prefix}a.status IN ('active', 'submitted'))",
            {f"{prefix}stage": spec["stage"]},
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

    def condition(self, spec, *, prefix, tables):
        from django.db import connection

        items = f"{prefix}s.item_id = c.item_id"
        params: dict[str, Any] = {}
        if spec.get("made_from"):
            field = f"{prefix}ci.payload ->> CAST(%({prefix}field)s AS TEXT)"
            params[f"{prefix}field"] = spec["made_from"]
            if connection.vendor != "postgresql":
                field = f"json_extract({prefix}ci.payload, %({prefix}field)s)"
                params[f"{prefix}field"] = f'$."{spec["made_from"]}"'
            items = (
                f"{prefix}s.item_id IN (c.item_id, (SELECT {prefix}o.id FROM {tables['Item']}"
                f" {prefix}ci JOIN {tables['Item']} {prefix}o ON {prefix}o.project_id ="
                f" {prefix}ci.project_id AND {prefix}o.external_id = {field}"
                f" WHERE {prefix}ci.id = c.item_id))"
            )
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {tables['ItemStage']} {prefix}s"
            f" WHERE {items} AND {prefix}s.stage_id <> c.stage_id AND ("
            f"EXISTS (SELECT 1 FROM {tables['Assignment']} {prefix}a"
            f" WHERE {prefix}a.item_stage_id = {prefix}s.id"
            f" AND {prefix}a.annotator_id = %(annotator)s)"
            # An answer stored without a lease (imported for a member): any version, since
            # having given one at all is what counts, not which one is current.
            f" OR EXISTS (SELECT 1 FROM {tables['Annotation']} {prefix}n"
            f" WHERE {prefix}n.item_stage_id = {prefix}s.id"
            f" AND {prefix}n.annotator_id = %(annotator)s)"
            f" OR EXISTS (SELECT 1 FROM {tables['Resolution']} {prefix}r"
            f" WHERE {prefix}r.item_stage_id = {prefix}s.id"
            f" AND {prefix}r.decided_by_id = %(annotator)s)))",
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

    def condition(self, spec, *, prefix, tables):
        # Tags are stored space-separated; padding both sides makes LIKE match whole tags.
        return Condition(
            f"EXISTS (SELECT 1 FROM {tables['Membership']} {prefix}m"
            f" WHERE {prefix}m.project_id = %(project)s AND {prefix}m.user_id = %(annotator)s"
            f" AND {prefix}m.role = 'annotator'"
            f" AND (' ' || {prefix}m.skills || ' ') LIKE %({prefix}tag)s)",
            {f"{prefix}tag": f"% {spec['tag']} %"},
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

    def condition(self, spec, *, prefix, tables):
        # Not correlated with the candidate: the database evaluates it once per search.
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {tables['ItemStage']} {prefix}s"
            f" JOIN {tables['Stage']} {prefix}st ON {prefix}st.id = {prefix}s.stage_id"
            f" WHERE {prefix}st.project_id = %(project)s AND {prefix}st.slug = %({prefix}stage)s"
            f" AND NOT EXISTS (SELECT 1 FROM {tables['Annotation']} {prefix}a"
            f" WHERE {prefix}a.item_stage_id = {prefix}s.id"
            f" AND {prefix}a.annotator_id = %(annotator)s))",
            {f"{prefix}stage": spec["stage"]},
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


def conditions(rules: Sequence[Mapping[str, Any]], *, tables: Mapping[str, str]) -> list[Condition]:
    """The SQL conditions of a stage's (cleaned) rules, parameter names made unique."""
    return [
        RULES[spec["rule"]].condition(spec, prefix=f"e{index}_", tables=tables)
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
