"""The slot a model rater's extra place reserves (ModelRater.fills_human_slot False).

Adding such a rater raises the stage's overlap and its open item stages' slot counts by one
(llm.services.rater_add); this rule keeps that slot for the model: a person may take an item
stage only while its leased and submitted slots, plus one per extra model rater that has not
yet leased, answered or skipped it (a model whose calls failed skips the item, and its slot goes
to people, as any skip's does), stay below its slot count. The model raters themselves pass.
llm.services adds the rule to the stage's eligibility list with the first extra rater.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from annotation.eligibility import Condition, Rule, RuleSQL


class ModelSlots(Rule):
    name = "model_slots"
    description = "one slot per extra model rater is kept for it"

    def sql(self, spec, names: RuleSQL) -> Condition:
        from annotation.models import Assignment
        from llm.models import ModelRater

        m, r, a = names.alias("m"), names.alias("r"), names.alias("a")
        raters = names.table(ModelRater)
        return Condition(
            f'(EXISTS (SELECT 1 FROM {raters} {m} WHERE {m}."user_id" = {names.annotator}'
            f' AND {m}."stage_id" = {names.column("stage_id")})'
            f" OR {names.column('leased_count')} + {names.column('submitted_count')}"
            f" + (SELECT COUNT(*) FROM {raters} {r}"
            f' WHERE {r}."stage_id" = {names.column("stage_id")} AND {r}."active"'
            f' AND NOT {r}."fills_human_slot"'
            f" AND NOT EXISTS (SELECT 1 FROM {names.table(Assignment)} {a}"
            f' WHERE {a}."item_stage_id" = {names.column("id")}'
            f' AND {a}."annotator_id" = {r}."user_id"'
            f" AND {a}.\"status\" IN ('active', 'submitted', 'skipped')))"
            f" < {names.column('target_count')})",
            {},
        )


def advisory_raters() -> Exists:
    """An answer is advice when its annotator is an extra model rater (active or removed) of
    its stage: measured against people's (llm/calibration) but not counted in the stage's
    decisions (annotation.advisory). A model in a human slot counts like the person it
    replaces."""
    from llm.models import ModelRater

    return Exists(
        ModelRater.objects.filter(
            user_id=OuterRef("annotator_id"),
            stage_id=OuterRef("item_stage__stage_id"),
            fills_human_slot=False,
        )
    )
