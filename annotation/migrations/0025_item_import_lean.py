"""Fewer writes per imported item on PostgreSQL (benchmarks/README.md, "Imports at scale").

* **The item stages' index on ``item`` alone is dropped.** Their unique ``(item, stage)``
  index (``item_stage_unique``) starts with the item and serves every look-up by item the
  single-column index served; an import opening a million items in a stage wrote both. The
  index on ``stage`` alone stays: without it the annotator loop's lease plans cost over 100 ms
  of PostgreSQL CPU per annotation (``0020_import_write_lean``).
* **The search queue's insert trigger queues without ``ON CONFLICT``.** An inserted item's id
  is new to the items table, and a queued id always belongs to an item: the queue's delete
  trigger forgets an item's row with the item (``0023_item_search_forget_by_key``), whatever
  the session's replication role (``0022_item_search_triggers_always``). The one statement
  that removes items without firing it, ``TRUNCATE``, now empties the queue and the search
  table too (a trigger of its own), so no queued id outlives its item to meet a new item of the
  same id. Should one do anyway (its triggers disabled by hand), the items' INSERT fails on the
  queue's primary key and writes nothing, instead of leaving the search stale. The per-row
  trigger of changed items keeps its ``ON CONFLICT``: a changed item may be queued already.

SQLite keeps its index and row triggers (``INSERT OR IGNORE``), unchanged: no table is
rebuilt here, which would drop the queue's triggers of ``0015_item_search_table``.
"""

from django.db import migrations, models
from django.db.models.deletion import CASCADE

QUEUE_INSERTED_PLAIN = """
CREATE OR REPLACE FUNCTION annotation_item_search_queue_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "annotation_itemsearchpending" ("item_id") SELECT "id" FROM item_search_inserted;
    RETURN NULL;
END $$;
"""

QUEUE_INSERTED_ON_CONFLICT = """
CREATE OR REPLACE FUNCTION annotation_item_search_queue_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "annotation_itemsearchpending" ("item_id")
    SELECT "id" FROM item_search_inserted ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
"""

FORGET_TRUNCATED = """
CREATE OR REPLACE FUNCTION annotation_item_search_forget_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM "annotation_itemsearchpending";
    DELETE FROM "annotation_itemsearch";
    RETURN NULL;
END $$;
CREATE TRIGGER "annotation_item_search_truncated" AFTER TRUNCATE ON "annotation_item"
FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_search_forget_truncated();
ALTER TABLE "annotation_item" ENABLE ALWAYS TRIGGER "annotation_item_search_truncated";
"""

NO_FORGET_TRUNCATED = """
DROP TRIGGER IF EXISTS "annotation_item_search_truncated" ON "annotation_item";
DROP FUNCTION IF EXISTS annotation_item_search_forget_truncated();
"""

#: The item stages' index on ``item`` alone (Django's name for the foreign key's index).
ITEM_INDEX_COLUMNS = ["item_id"]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    item_stage = apps.get_model("annotation", "itemstage")
    for name in schema_editor._constraint_names(
        item_stage, ITEM_INDEX_COLUMNS, index=True, unique=False, primary_key=False
    ):
        schema_editor.execute(schema_editor._delete_index_sql(item_stage, name))
    schema_editor.execute(QUEUE_INSERTED_PLAIN)
    schema_editor.execute(FORGET_TRUNCATED)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    table = apps.get_model("annotation", "itemstage")._meta.db_table
    schema_editor.execute(
        f'CREATE INDEX IF NOT EXISTS "{table}_item_id_fk_idx" ON "{table}" ("item_id")'
    )
    schema_editor.execute(QUEUE_INSERTED_ON_CONFLICT)
    schema_editor.execute(NO_FORGET_TRUNCATED)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0024_annotation_partial_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="itemstage",
                    name="item",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=CASCADE,
                        related_name="item_stages",
                        to="annotation.item",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
