"""The annotations' indexes on the assignment and the annotator leave out the rows without one
(annotation/models.py, ``Annotation.Meta``): the rules they carry still hold, and on
PostgreSQL the lookups by value are still answered from them."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation, ItemStage
from tests.factories import pipeline

pytestmark = pytest.mark.django_db

PARTIAL = {
    "annotation_assignment_idx": "assignment_id",
    "annotation_annotator_idx": "annotator_id",
    "annotation_annotator_time_idx": "annotator_id",
    "annotation_one_current_per_assignment": "assignment_id",
}


def _answered():
    """A live answer (assignment and annotator) and ten historic ones (neither) of one stage."""
    project, verify, _label, people = pipeline(overlap=3, items=4, annotators=1)
    person = people[0]
    assignment = services.assignment_next(
        annotator=person, stage=access_stage_for_annotator(user=person, stage_id=verify.pk)
    )
    services.annotation_submit(
        assignment_id=assignment.pk, annotator=person, payload={"value": "keep"}
    )
    item_stage = ItemStage.objects.filter(stage=verify).exclude(pk=assignment.item_stage_id)[0]
    Annotation.all_versions.bulk_create(
        Annotation(item_stage=item_stage, external_rater=f"r{n}", payload={"value": "keep"})
        for n in range(10)
    )
    return assignment, person


def test_one_current_answer_per_assignment_still_holds_and_historic_rows_never_collide():
    assignment, person = _answered()
    with pytest.raises(IntegrityError), transaction.atomic():
        Annotation.all_versions.create(
            item_stage_id=assignment.item_stage_id,
            assignment=assignment,
            annotator=person,
            payload={"value": "reject"},
        )
    assert Annotation.objects.filter(assignment=None).count() == 10
    assert Annotation.objects.get(assignment=assignment).payload["value"] == "keep"


@pytest.mark.postgres
def test_the_indexes_hold_only_rows_with_a_value_and_lookups_by_value_use_them(postgres):
    assignment, person = _answered()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s",
            [Annotation._meta.db_table],
        )
        definitions = dict(cursor.fetchall())
        for name, column in PARTIAL.items():
            condition = definitions[name].split(" WHERE ")[1]
            assert f"({column} IS NOT NULL)" in condition, definitions[name]
        # No other index of the table on these columns: each historic row skips all four.
        for name, definition in definitions.items():
            columns = definition.split(" USING btree (")[1].split(")")[0]
            if name not in PARTIAL and ("assignment_id" in columns or "annotator_id" in columns):
                pytest.fail(f"{name} indexes every row: {definition}")
        # The lookups the engine makes (by value, a list of values, the foreign keys' checks,
        # also as generic plans of prepared statements) imply IS NOT NULL.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        lookups = [
            ("bigint", "assignment_id = $1", assignment.pk, "annotation_assignment_idx"),
            ("bigint", "$1 OPERATOR(pg_catalog.=) assignment_id", assignment.pk, "annotation_assignment_idx"),
            ("bigint[]", "assignment_id = ANY($1)", [assignment.pk], "annotation_assignment_idx"),
            ("integer", "annotator_id = $1", person.pk, "annotation_annotator"),
            ("integer", "$1 OPERATOR(pg_catalog.=) annotator_id", person.pk, "annotation_annotator"),
            ("integer[]", "annotator_id = ANY($1)", [person.pk], "annotation_annotator"),
        ]  # fmt: skip
        for number, (kind, condition, value, index) in enumerate(lookups):
            cursor.execute(
                f"PREPARE lookup_{number} ({kind}) AS SELECT id FROM"
                f" {Annotation._meta.db_table} WHERE {condition}"
            )
            # A literal: EXPLAIN (a utility statement) takes no bound parameters.
            literal = f"'{{{value[0]}}}'" if isinstance(value, list) else str(int(value))
            cursor.execute(f"EXPLAIN EXECUTE lookup_{number} ({literal})")
            plan = "\n".join(row[0] for row in cursor.fetchall())
            cursor.execute(f"DEALLOCATE lookup_{number}")
            assert index in plan, f"{condition}:\n{plan}"
