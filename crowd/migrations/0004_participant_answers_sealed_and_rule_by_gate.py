"""Participant.answers_sealed_at (a resume without proof seals earlier answers), and the crowd
eligibility rule taken off stages' own lists: the crowd annotator gate (crowd/gate.py) now
applies it to participants in every stage, so stages no longer carry it for everyone."""

from django.db import migrations, models

RULE = {"rule": "crowd"}


def drop_rule(apps, schema_editor):
    Stage = apps.get_model("annotation", "Stage")
    for stage in Stage.objects.filter(project__crowd_studies__isnull=False).distinct():
        rules = list(stage.eligibility or [])
        if RULE in rules:
            stage.eligibility = [rule for rule in rules if rule != RULE]
            stage.save(update_fields=["eligibility"])


def add_rule(apps, schema_editor):
    Stage = apps.get_model("annotation", "Stage")
    for stage in Stage.objects.filter(project__crowd_studies__isnull=False).distinct():
        rules = list(stage.eligibility or [])
        if RULE not in rules:
            stage.eligibility = [*rules, RULE]
            stage.save(update_fields=["eligibility"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_annotation_versions"),
        ("crowd", "0003_bonus_payments"),
    ]

    operations = [
        migrations.AddField(
            model_name="participant",
            name="answers_sealed_at",
            field=models.DateTimeField(
                blank=True,
                help_text="The last resume without proof that it was the participant "
                "(crowd.services.participant_enter): answers given before it are never shown "
                "or changed again.",
                null=True,
            ),
        ),
        migrations.RunPython(drop_rule, add_rule),
    ]
