"""Fewer writes per imported item (benchmarks/README.md, "Imports at scale").

* The index Django gave ``Item.project`` on its own is dropped (every index of the items table
  starts with the project): one index insertion less per imported item. The item stages keep
  theirs on ``item`` and ``stage``: without them the annotator loop's lease plans cost over
  100 ms of PostgreSQL CPU per annotation instead of about 3 (benchmarks/README.md).
* ``Item.import_batch`` keeps its index but loses its database constraint: a provenance link
  whose deferred check ran once per imported item at COMMIT. Deleting a batch still empties
  the link (``SET_NULL`` is Django's, done in Python).

Only PostgreSQL's schema changes (the imports' bulk path); SQLite keeps its indexes and
constraint until Django next rebuilds those tables, which would drop the queue triggers of
``0015_item_search_table``, so no table is rebuilt here.
"""

from django.db import migrations, models
from django.db.models.deletion import CASCADE, SET_NULL

#: (model, column) of each index dropped.
FOREIGN_KEY_INDEXES = (("item", "project_id"),)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for model_name, column in FOREIGN_KEY_INDEXES:
        model = apps.get_model("annotation", model_name)
        for name in schema_editor._constraint_names(
            model, [column], index=True, unique=False, primary_key=False
        ):
            schema_editor.execute(schema_editor._delete_index_sql(model, name))
    item = apps.get_model("annotation", "item")
    for name in schema_editor._constraint_names(item, ["import_batch_id"], foreign_key=True):
        schema_editor.execute(schema_editor._delete_fk_sql(item, name))


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for model_name, column in FOREIGN_KEY_INDEXES:
        table = apps.get_model("annotation", model_name)._meta.db_table
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{table}_{column}_fk_idx" ON "{table}" ("{column}")'
        )
    batches = apps.get_model("imports", "importbatch")._meta.db_table  # its name has changed
    schema_editor.execute(
        'ALTER TABLE "annotation_item" ADD CONSTRAINT "annotation_item_import_batch_id_fk" '
        f'FOREIGN KEY ("import_batch_id") REFERENCES "{batches}" ("id") '
        "DEFERRABLE INITIALLY DEFERRED NOT VALID"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0019_resolution_rare_status_idx"),
        ("imports", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="item",
                    name="project",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=CASCADE,
                        related_name="items",
                        to="annotation.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="item",
                    name="import_batch",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=SET_NULL,
                        related_name="items",
                        to="imports.importbatch",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
