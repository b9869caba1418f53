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

from django.db import connection

from annotation.eligibility import Condition, Rule
from annotation.models import Assignment, Item, ItemStage


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


class CrowdParticipantRule(Rule):
    name = "crowd"
    description = "crowd participants: consent, practice first, at most their study's quota"
    counts_own_work = True  # the quota: a participant's searches in the stage run one at a time

    def condition(self, spec, *, prefix, tables):
        from crowd.models import Participant, Study

        p = prefix
        practice = f"EXISTS (SELECT 1 FROM {_table(Item)} {p}i WHERE {p}i.id = c.item_id AND {p}i.purpose = 'practice')"
        taken = (
            f"(SELECT COUNT(*) FROM {_table(Assignment)} {p}qa"
            f" JOIN {_table(ItemStage)} {p}qs ON {p}qs.id = {p}qa.item_stage_id"
            f" JOIN {_table(Item)} {p}qi ON {p}qi.id = {p}qs.item_id"
            f" WHERE {p}qa.annotator_id = %(annotator)s AND {p}qa.stage_id = {p}s.stage_id"
            f" AND {p}qa.status IN ('active', 'submitted') AND {p}qi.purpose <> 'practice')"
        )
        return Condition(
            f"NOT EXISTS (SELECT 1 FROM {_table(Participant)} {p}p"
            f" JOIN {_table(Study)} {p}s ON {p}s.id = {p}p.study_id"
            f" WHERE {p}p.user_id = %(annotator)s AND {p}s.project_id = %(project)s"
            f" AND (({p}s.stage_id <> c.stage_id AND ({p}s.practice_stage_id IS NULL"
            f" OR {p}s.practice_stage_id <> c.stage_id))"
            f" OR {p}p.status <> 'active' OR {p}p.consented_at IS NULL"
            f" OR {p}p.instructed_at IS NULL"
            f" OR ({p}p.practice_done_at IS NULL AND NOT {practice})"
            f" OR ({p}p.practice_done_at IS NOT NULL AND ({practice}"
            f" OR {p}s.stage_id <> c.stage_id OR {taken} >= {p}s.quota))))",
            {},
        )
