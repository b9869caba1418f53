"""The search queue forgets deleted items by key, on PostgreSQL.

``0015_item_search_table``'s statement trigger removed a deleted item's rows from the search
table and the pending queue with ``item_id IN (SELECT id FROM <deleted rows>)``. A transition
table has no statistics and the queue is rarely analysed (it fills by thousands in one import
and empties as the indexing catches up), so PostgreSQL could plan that as a walk of the whole
queue per statement: Django deletes a project's items 100 at a time, and after a bulk import of
70,000 items each of those 700 statements scanned the 70,000 queued rows (3–4.6 s each, seen
with auto_explain; tests/test_database_backend.py's 70,000-item delete ran past 300 s late in a
whole run). ``item_id = ANY (ARRAY(SELECT id FROM <deleted rows>))`` compares with an array
computed once, which the primary key of both tables serves whatever the estimates: one probe
per deleted item. The function runs with ``enable_seqscan`` off (its own setting, restored on
return): the session keeps the function's plans, and one made while the queue was nearly empty
(earlier deletes on the same connection, or statistics taken then) chose a sequential scan,
which is not cheap once the queue holds an import (a whole ``make test`` run showed it). Same
rows removed; SQLite's row triggers were already by key.
"""

from django.db import migrations

FORGET_BY_KEY = """
CREATE OR REPLACE FUNCTION annotation_item_search_forget_deleted() RETURNS trigger
LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    DELETE FROM "annotation_itemsearch"
    WHERE "item_id" = ANY (ARRAY(SELECT "id" FROM item_search_deleted));
    DELETE FROM "annotation_itemsearchpending"
    WHERE "item_id" = ANY (ARRAY(SELECT "id" FROM item_search_deleted));
    RETURN NULL;
END $$;
"""

FORGET_BY_SEMI_JOIN = """
CREATE OR REPLACE FUNCTION annotation_item_search_forget_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM "annotation_itemsearch" WHERE "item_id" IN (SELECT "id" FROM item_search_deleted);
    DELETE FROM "annotation_itemsearchpending"
    WHERE "item_id" IN (SELECT "id" FROM item_search_deleted);
    RETURN NULL;
END $$;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORGET_BY_KEY)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORGET_BY_SEMI_JOIN)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0022_item_search_triggers_always"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
