"""ImportBatch, Release and AgreementSnapshot moved to their own apps (imports, releases,
agreement). Their tables keep their names (db_table), so a database created before the move keeps
every row: only Django's state changes here, no SQL runs."""

import django.db.models.deletion
from django.db import migrations, models


MOVED = {"importbatch": "imports", "release": "releases", "agreementsnapshot": "agreement"}


def content_types_follow(apps, schema_editor):
    """Keep the moved models' content types (and so the permissions granted on them)."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model, app_label in MOVED.items():
        if not ContentType.objects.filter(app_label=app_label, model=model).exists():
            ContentType.objects.filter(app_label="annotation", model=model).update(
                app_label=app_label
            )


def content_types_return(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model, app_label in MOVED.items():
        if not ContentType.objects.filter(app_label="annotation", model=model).exists():
            ContentType.objects.filter(app_label=app_label, model=model).update(
                app_label="annotation"
            )


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0003_stage_agreement_refresh_state'),
        ('imports', '0001_initial'),
        ('releases', '0001_initial'),
        ('agreement', '0001_initial'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='item',
                    name='import_batch',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='items', to='imports.importbatch'),
                ),
                migrations.DeleteModel(name='AgreementSnapshot'),
                migrations.DeleteModel(name='ImportBatch'),
                migrations.DeleteModel(name='Release'),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_follow, content_types_return),
    ]
