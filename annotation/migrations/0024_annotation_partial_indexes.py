"""The annotations' indexes on the assignment and the annotator leave out the rows without one
(annotation/models.py, ``Annotation.Meta``): the historic imports' annotations, which have
neither, no longer write four index entries each that no lookup reads. Each lookup by value
(``= x``, ``IN (...)``, a join on the column, the foreign keys' checks) implies ``IS NOT NULL``,
so PostgreSQL and SQLite use the partial indexes as they used the whole ones; one current
answer per assignment is the same rule (a NULL assignment never collided).

Order and locks (PostgreSQL; one transaction): the three new indexes are built first, under
the SHARE lock of ``CREATE INDEX`` (reads go on, writes to the annotations wait); the old
indexes are dropped after them (``DROP INDEX`` takes the table's exclusive lock, held to the
commit), then the one-current-answer index is rebuilt under its unchanged name. The two foreign
keys lose their own index through ``SeparateDatabaseAndState``: Django's ``AlterField`` would
drop and re-add each foreign-key constraint, re-checking every annotation against its user or
assignment, and rebuild the table on SQLite. Not ``CONCURRENTLY``: see benchmarks/README.md,
"Historic ratings import at a million ratings" (branch ``hr10``), for the reasons and the time
it takes at 2,000,000 annotations.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# The names Django gave the foreign keys' own indexes (0001_initial; the same on every
# database: a hash of the table's and the column's names).
_FOREIGN_KEY_INDEXES = {
    "annotator": "annotation_annotation_annotator_id_d682a217",
    "assignment": "annotation_annotation_assignment_id_9fd0f781",
}


def _without_own_index(name: str, to: str) -> migrations.SeparateDatabaseAndState:
    index = _FOREIGN_KEY_INDEXES[name]
    return migrations.SeparateDatabaseAndState(
        state_operations=[
            migrations.AlterField(
                model_name="annotation",
                name=name,
                field=models.ForeignKey(
                    blank=True,
                    db_index=False,
                    null=True,
                    on_delete=django.db.models.deletion.PROTECT,
                    related_name="annotations",
                    to=to,
                ),
            ),
        ],
        database_operations=[
            migrations.RunSQL(
                f'DROP INDEX "{index}"',
                reverse_sql=f'CREATE INDEX "{index}" ON "annotation_annotation" ("{name}_id")',
            ),
        ],
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0023_item_search_forget_by_key"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="annotation",
            index=models.Index(
                condition=models.Q(("assignment__isnull", False)),
                fields=["assignment"],
                name="annotation_assignment_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="annotation",
            index=models.Index(
                condition=models.Q(("annotator__isnull", False)),
                fields=["annotator"],
                name="annotation_annotator_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="annotation",
            index=models.Index(
                condition=models.Q(("annotator__isnull", False)),
                fields=["annotator", "created_at"],
                name="annotation_annotator_time_idx",
            ),
        ),
        migrations.RemoveIndex(
            model_name="annotation",
            name="annotation__annotat_389660_idx",
        ),
        _without_own_index("annotator", settings.AUTH_USER_MODEL),
        _without_own_index("assignment", "annotation.assignment"),
        migrations.RemoveConstraint(
            model_name="annotation",
            name="annotation_one_current_per_assignment",
        ),
        migrations.AddConstraint(
            model_name="annotation",
            constraint=models.UniqueConstraint(
                condition=models.Q(("assignment__isnull", False), ("is_current", True)),
                fields=("assignment",),
                name="annotation_one_current_per_assignment",
            ),
        ),
    ]
