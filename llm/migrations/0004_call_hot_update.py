"""The ledger's answer UPDATE made a HOT one (llm/models.py, Call): the (run, status) index
goes — ``status`` changes when an answer is stored, and a changed indexed column rules HOT
out — and on PostgreSQL the table leaves 30 % of each page free for the new row versions."""

from django.db import migrations


def fillfactor(apps, schema_editor, percent: int) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    table = schema_editor.quote_name(apps.get_model("llm", "Call")._meta.db_table)
    schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {percent})")


class Migration(migrations.Migration):
    dependencies = [("llm", "0003_run_generation_settings")]

    operations = [
        migrations.RemoveIndex(model_name="call", name="llm_call_run_status"),
        migrations.RunPython(
            lambda apps, editor: fillfactor(apps, editor, 70),
            lambda apps, editor: fillfactor(apps, editor, 100),
        ),
    ]
