"""The search queue's triggers (``0015_item_search_table``) fire whatever the session's
replication role, on PostgreSQL.

An import runs its two bulk statements (the items' INSERT and their opening in a stage) with
``session_replication_role = replica`` once it has checked and locked the rows they reference,
so that PostgreSQL does not check every row's foreign keys again at COMMIT
(imports/services/staged.py, ``_foreign_keys_checked_once``). That role fires no trigger left
in its default mode; the queue's must still fire, or imported items would be missing from the
search until something else queued them. ``ENABLE ALWAYS`` fires them in every role
(tests/imports/services/test_staged.py fails on a trigger of the items or item stages tables
that does not). SQLite has no such role: nothing changes there.
"""

from django.db import migrations

TRIGGERS = ("inserted", "changed", "deleted")


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in TRIGGERS:
        schema_editor.execute(
            f'ALTER TABLE "annotation_item" ENABLE ALWAYS TRIGGER "annotation_item_search_{name}"'
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in TRIGGERS:
        schema_editor.execute(
            f'ALTER TABLE "annotation_item" ENABLE TRIGGER "annotation_item_search_{name}"'
        )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0021_item_project_id_idx"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
