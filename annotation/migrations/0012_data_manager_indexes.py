"""Indexes of the data manager (studio/data_manager/selectors.py), each kept because
benchmarks/data_manager.py measured it on 1,000,000 items (its figures are in its docstring):

* (project, status, id): keyset pages sorted by status (newest first is served by the primary
  key; a (project, id) index was measured and not used by the planner, so it is not here);
* on PostgreSQL, trigram GIN indexes (pg_trgm) on the upper-cased item id and payload text:
  the search's ``icontains`` (``UPPER(…) LIKE UPPER('%text%')``) then reads the index instead of
  every payload. Written as SQL because Django's ``GinIndex`` cannot name the ``UPPER(...)``
  expression Django's own lookup produces; skipped on SQLite (its search reads every row).
  pg_trgm ships with PostgreSQL and is a trusted extension (PostgreSQL 13 and later): the
  database's owner creates it, no superuser needed."""

from django.db import migrations, models

TRIGRAM_INDEXES = {
    "item_external_id_trgm_idx": 'UPPER("external_id"::text)',
    "item_payload_trgm_idx": 'UPPER(("payload")::text)',
}


def create_trigram_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, expression in TRIGRAM_INDEXES.items():
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{name}" ON "annotation_item" '
            f"USING gin (({expression}) gin_trgm_ops)"
        )


def drop_trigram_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in TRIGRAM_INDEXES:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0011_item_events"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="item",
            index=models.Index(
                fields=["project", "status", "id"], name="item_project_status_id_idx"
            ),
        ),
        migrations.RunPython(create_trigram_indexes, drop_trigram_indexes),
    ]
