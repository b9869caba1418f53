"""Existing projects' blind stages get the ``blind`` eligibility rule their templates now add
(review.causalt5k.pipeline, review.meter.services): CausalT5k's answer stage following the
answer item's ``case_id``, METER's human baseline following the entry's ``pair_id``. From then
on nobody who worked on the item in an earlier stage is given it; answers already given stay.
A stage that already has a ``blind`` rule is left as it is. Reversed, the rule is removed."""

from django.db import migrations

BLIND_STAGES = {"ct5k_answer": "case_id", "meter_answer": "pair_id"}


def add_blind_rule(apps, schema_editor):
    Stage = apps.get_model("annotation", "Stage")
    for stage in Stage.objects.filter(kind__in=list(BLIND_STAGES)):
        rules = list(stage.eligibility or [])
        if any(isinstance(rule, dict) and rule.get("rule") == "blind" for rule in rules):
            continue
        stage.eligibility = [*rules, {"rule": "blind", "made_from": BLIND_STAGES[stage.kind]}]
        stage.save(update_fields=["eligibility"])


def remove_blind_rule(apps, schema_editor):
    Stage = apps.get_model("annotation", "Stage")
    for stage in Stage.objects.filter(kind__in=list(BLIND_STAGES)):
        rules = [
            rule
            for rule in stage.eligibility or []
            if not (isinstance(rule, dict) and rule.get("rule") == "blind")
        ]
        if rules != (stage.eligibility or []):
            stage.eligibility = rules
            stage.save(update_fields=["eligibility"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_annotation_versions"),
        ("review", "0003_duplicate_survivor_cascade"),
    ]

    operations = [migrations.RunPython(add_blind_rule, remove_blind_rule)]
