# The coalesced refresh's state moves from the engine's Stage (annotation/migrations/0003) to
# this app: the table is created here and every stage's values are copied into it; then
# annotation/migrations/0009 drops the Stage columns. Reversible: the values are copied back.

import django.db.models.deletion
from django.db import migrations, models

# AgreementRefresh's field: the Stage column it comes from.
COLUMNS = {
    "changes": "agreement_changes",
    "computed_changes": "agreement_computed_changes",
    "queued_at": "agreement_refresh_queued_at",
    "computed_at": "agreement_computed_at",
}
BATCH = 2000


def copy_from_stages(apps, schema_editor):
    Stage = apps.get_model("annotation", "Stage")
    AgreementRefresh = apps.get_model("agreement", "AgreementRefresh")
    rows = Stage.objects.order_by("pk").values_list("pk", *COLUMNS.values())
    batch = []
    for stage_id, *values in rows.iterator(chunk_size=BATCH):
        batch.append(AgreementRefresh(stage_id=stage_id, **dict(zip(COLUMNS, values))))
        if len(batch) == BATCH:
            AgreementRefresh.objects.bulk_create(batch)
            batch = []
    AgreementRefresh.objects.bulk_create(batch)


def copy_back_to_stages(apps, schema_editor):
    Stage = apps.get_model("annotation", "Stage")
    AgreementRefresh = apps.get_model("agreement", "AgreementRefresh")
    for row in AgreementRefresh.objects.order_by("pk").iterator(chunk_size=BATCH):
        Stage.objects.filter(pk=row.stage_id).update(
            **{column: getattr(row, field) for field, column in COLUMNS.items()}
        )


class Migration(migrations.Migration):

    dependencies = [
        ('agreement', '0001_initial'),
        ('annotation', '0008_annotation_versions'),
    ]

    operations = [
        migrations.CreateModel(
            name='AgreementRefresh',
            fields=[
                ('stage', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='agreement_refresh', serialize=False, to='annotation.stage')),
                ('changes', models.PositiveBigIntegerField(default=0, help_text='Bumped after each resolution of an item in the stage.')),
                ('computed_changes', models.PositiveBigIntegerField(default=0, help_text='changes as of the last computed figures.')),
                ('queued_at', models.DateTimeField(blank=True, help_text='Set while a refresh message is on its way.', null=True)),
                ('computed_at', models.DateTimeField(blank=True, help_text='When the figures were last computed.', null=True)),
            ],
        ),
        migrations.RunPython(copy_from_stages, copy_back_to_stages),
    ]
