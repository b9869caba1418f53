"""The data manager's search moves off the items table's insert path (annotation/search.py).

The two trigram GIN indexes of ``0012_data_manager_indexes`` (item id and payload text) cost
about 80 % of PostgreSQL's work per imported item (benchmarks/io_scale.py). They are dropped
here and rebuilt on a table of their own, ``ItemSearch``, filled after the items commit by a
Celery task in chunks. What is not indexed yet is never missing from a search: the database
itself queues every inserted item, and every item whose ``external_id`` or ``payload``
changes, in ``ItemSearchPending`` (the triggers below, so no code path that writes items can
skip it), and the search reads the queued items' own columns (a scan bounded by the queue).
A deleted item takes its search and queue rows with it.

Every item already stored is queued, so the search stays complete until the first indexing.

The triggers are SQL because Django has no triggers. On PostgreSQL the insert trigger is
per statement, over its transition table (one INSERT … SELECT for a million-row import); on
SQLite they are per row. SQLite drops a table's triggers when Django rebuilds that table
(an ``AlterField`` on ``Item``): a migration that does must create them again
(``create_triggers`` below; tests/annotation/test_search.py fails if they are missing)."""

from django.db import migrations, models

OLD_TRIGRAM_INDEXES = {
    "item_external_id_trgm_idx": 'UPPER("external_id"::text)',
    "item_payload_trgm_idx": 'UPPER(("payload")::text)',
}
#: The same expressions as Django's ``icontains`` on PostgreSQL: ``UPPER(col::text) LIKE …``.
SEARCH_TRIGRAM_INDEXES = {
    "itemsearch_external_id_trgm_idx": 'UPPER("external_id"::text)',
    "itemsearch_content_trgm_idx": 'UPPER("content"::text)',
}

POSTGRESQL_TRIGGERS = """
CREATE OR REPLACE FUNCTION annotation_item_search_queue_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "annotation_itemsearchpending" ("item_id")
    SELECT "id" FROM item_search_inserted ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER "annotation_item_search_inserted" AFTER INSERT ON "annotation_item"
REFERENCING NEW TABLE AS item_search_inserted
FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_search_queue_inserted();

CREATE OR REPLACE FUNCTION annotation_item_search_queue_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "annotation_itemsearchpending" ("item_id") VALUES (NEW."id")
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER "annotation_item_search_changed"
AFTER UPDATE OF "external_id", "payload" ON "annotation_item" FOR EACH ROW
WHEN (OLD."external_id" IS DISTINCT FROM NEW."external_id"
      OR OLD."payload" IS DISTINCT FROM NEW."payload")
EXECUTE FUNCTION annotation_item_search_queue_changed();

CREATE OR REPLACE FUNCTION annotation_item_search_forget_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM "annotation_itemsearch" WHERE "item_id" IN (SELECT "id" FROM item_search_deleted);
    DELETE FROM "annotation_itemsearchpending"
    WHERE "item_id" IN (SELECT "id" FROM item_search_deleted);
    RETURN NULL;
END $$;
CREATE TRIGGER "annotation_item_search_deleted" AFTER DELETE ON "annotation_item"
REFERENCING OLD TABLE AS item_search_deleted
FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_search_forget_deleted();
"""

SQLITE_TRIGGERS = [
    """CREATE TRIGGER IF NOT EXISTS "annotation_item_search_inserted"
    AFTER INSERT ON "annotation_item" BEGIN
        INSERT OR IGNORE INTO "annotation_itemsearchpending" ("item_id") VALUES (NEW."id");
    END""",
    """CREATE TRIGGER IF NOT EXISTS "annotation_item_search_changed"
    AFTER UPDATE OF "external_id", "payload" ON "annotation_item"
    WHEN OLD."external_id" IS NOT NEW."external_id" OR OLD."payload" IS NOT NEW."payload" BEGIN
        INSERT OR IGNORE INTO "annotation_itemsearchpending" ("item_id") VALUES (NEW."id");
    END""",
    """CREATE TRIGGER IF NOT EXISTS "annotation_item_search_deleted"
    AFTER DELETE ON "annotation_item" BEGIN
        DELETE FROM "annotation_itemsearch" WHERE "item_id" = OLD."id";
        DELETE FROM "annotation_itemsearchpending" WHERE "item_id" = OLD."id";
    END""",
]
TRIGGERS = ("inserted", "changed", "deleted")


def create_triggers(schema_editor) -> None:
    """The queue's triggers on ``annotation_item`` (module docstring), for the connection's
    database."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_TRIGGERS)
    else:
        for statement in SQLITE_TRIGGERS:
            schema_editor.execute(statement)


def forwards(apps, schema_editor):
    create_triggers(schema_editor)
    schema_editor.execute(
        'INSERT INTO "annotation_itemsearchpending" ("item_id") SELECT "id" FROM "annotation_item"'
    )
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite's LIKE reads every row whatever the indexes
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name in OLD_TRIGRAM_INDEXES:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')
    for name, expression in SEARCH_TRIGRAM_INDEXES.items():
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{name}" ON "annotation_itemsearch" '
            f"USING gin (({expression}) gin_trgm_ops)"
        )


def backwards(apps, schema_editor):
    for name in TRIGGERS:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(
                f'DROP TRIGGER IF EXISTS "annotation_item_search_{name}" ON "annotation_item"'
            )
        else:
            schema_editor.execute(f'DROP TRIGGER IF EXISTS "annotation_item_search_{name}"')
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in ("queue_inserted", "queue_changed", "forget_deleted"):
        schema_editor.execute(f"DROP FUNCTION IF EXISTS annotation_item_search_{name}()")
    for name, expression in OLD_TRIGRAM_INDEXES.items():
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{name}" ON "annotation_item" '
            f"USING gin (({expression}) gin_trgm_ops)"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0014_item_stage_stopped_at"),
    ]

    operations = [
        migrations.CreateModel(
            name="ItemSearch",
            fields=[
                ("item_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("project_id", models.BigIntegerField()),
                ("external_id", models.TextField()),
                ("content", models.TextField()),
            ],
        ),
        migrations.CreateModel(
            name="ItemSearchPending",
            fields=[
                ("item_id", models.BigIntegerField(primary_key=True, serialize=False)),
            ],
        ),
        migrations.RunPython(forwards, backwards),
    ]
