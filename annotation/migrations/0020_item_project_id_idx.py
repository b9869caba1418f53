"""A project's items by id (the data manager's newest-first page and its sample of payload
paths, annotation/models.py ``item_project_id_idx``), replacing the single-column index of the
foreign key on project: the new index serves every lookup by project the old one did.

SQLite rebuilds the items table for the ``AlterField`` and drops its triggers with it: the
search queue's triggers are created again (``0015_item_search_table``)."""

import importlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def search_triggers_again(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        return  # PostgreSQL only drops the index; the table and its triggers stay
    search_table = importlib.import_module("annotation.migrations.0015_item_search_table")
    search_table.create_triggers(schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0019_resolution_rare_status_idx"),
        ("imports", "0004_import_batch_content_sha256"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="item",
            index=models.Index(fields=["project", "id"], name="item_project_id_idx"),
        ),
        migrations.AlterField(
            model_name="item",
            name="project",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="items",
                to="annotation.project",
            ),
        ),
        migrations.RunPython(search_triggers_again, migrations.RunPython.noop),
    ]
