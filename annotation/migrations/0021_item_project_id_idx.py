"""A project's items by id (the data manager's newest-first page and its sample of payload
paths, annotation/models.py ``item_project_id_idx``). It serves every lookup by project the
foreign key's own single-column index served; that index was dropped by
``0020_import_write_lean`` (on PostgreSQL; SQLite keeps it until Django next rebuilds the
table, which would drop the search queue's triggers of ``0015_item_search_table``)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0020_import_write_lean"),
        ("imports", "0004_import_batch_content_sha256"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="item",
            index=models.Index(fields=["project", "id"], name="item_project_id_idx"),
        ),
    ]
