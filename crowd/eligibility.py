"""The crowd eligibility rule (annotation.eligibility): what a study's participant may take.

The crowd annotator gate (crowd/gate.py, ``CrowdGate.rules``) has the engine apply this rule to
a study's participants in every stage of the project — stages that existed when the study was
made and stages added later, by the Setup tab, the admin or the API alike — without the stages
listing it (annotation.gates.search_rules). A stage may still list it (older studies did); the
rule leaves everyone who is not a participant of a study of the project alone. A participant
gets an item only

- of their study's stage or practice stage (every other stage of the project stays closed to
  them, through the API too);
- while their session is active and they accepted the consent and read the instructions;
- before their practice is done: practice items only;
- after it: no practice items, only items of the study's stage, and only while their items
  (leased + submitted, practice items not counted) stay below the study's quota.

The quota is counted from the rows inside the candidate search. That count is what the search's
statement sees when it starts, so two requests of one participant (two tabs, a double click)
could both pass it if the first leased and answered an item while the second's statement ran:
the rule declares ``counts_own_work``, and the engine makes a participant's searches in a stage
wait for each other (annotation.sql.annotator_lock), so the quota is never exceeded.
"""

from __future__ import annotations

from annotation.eligibility import Condition, Rule, RuleSQL
from annotation.models import Assignment, Item, ItemStage


class CrowdParticipantRule(Rule):
    name = "crowd"
    description = "crowd participants: consent, practice first, at most their study's quota"
    counts_own_work = True  # the quota: a participant's searches in the stage run one at a time

    def sql(self, spec, names: RuleSQL) -> Condition:
        # Hand-written: the condition goes inside the engine's candidate search (one statement
        # built once per process, annotation/eligibility.py says why it is not the ORM).
        from crowd.models import Participant, Study

        i, qa, qs, qi = (names.alias(name) for name in ("i", "qa", "qs", "qi"))
        p, s = names.alias("p"), names.alias("s")
        item_id, stage_id = names.column("item_id"), names.column("stage_id")
        practice = (
            f'EXISTS (SELECT 1 FROM {names.table(Item)} {i} WHERE {i}."id" = {item_id}'
            f""" AND {i}."purpose" = 'practice')"""
        )
        taken = (
            f"(SELECT COUNT(*) FROM {names.table(Assignment)} {qa}"
            f' JOIN {names.table(ItemStage)} {qs} ON {qs}."id" = {qa}."item_stage_id"'
            f' JOIN {names.table(Item)} {qi} ON {qi}."id" = {qs}."item_id"'
            f' WHERE {qa}."annotator_id" = {names.annotator} AND {qa}."stage_id" = {s}."stage_id"'
            f""" AND {qa}."status" IN ('active', 'submitted') AND {qi}."purpose" <> 'practice')"""
        )
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {names.table(Participant)} {p}"
            f' JOIN {names.table(Study)} {s} ON {s}."id" = {p}."study_id"'
            f' WHERE {p}."user_id" = {names.annotator} AND {s}."project_id" = {names.project}'
            f' AND (({s}."stage_id" <> {stage_id} AND ({s}."practice_stage_id" IS NULL'
            f' OR {s}."practice_stage_id" <> {stage_id}))'
            f""" OR {p}."status" <> 'active' OR {p}."consented_at" IS NULL"""
            f' OR {p}."instructed_at" IS NULL'
            f' OR ({p}."practice_done_at" IS NULL AND NOT {practice})'
            f' OR ({p}."practice_done_at" IS NOT NULL AND ({practice}'
            f' OR {s}."stage_id" <> {stage_id} OR {taken} >= {s}."quota"))))',
            {},
        )
