# The disagreement list's ties / adjudicated filters (agreement/selectors.py,
# disagreement_candidates): a partial index over the few resolutions with those statuses.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0018_item_stage_keyset_indexes"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="resolution",
            index=models.Index(
                fields=["status", "item_stage"],
                name="resolution_rare_status_idx",
                condition=models.Q(("status__in", ["tie", "needs_adjudication", "adjudicated"])),
            ),
        ),
    ]
