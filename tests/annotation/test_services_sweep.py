"""assignment_next's SWEEP order (``after``): item stages by id from the caller's cursor, then
from the start; every rule of the stage still holds; and on PostgreSQL the search visits a
bounded number of rows however many of the stage's open items the caller already answered."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from annotation import services
from annotation.models import Assignment, ItemStage, Stage
from annotation.services import next_item
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


def _sweep(user, stage, after):
    return services.assignment_next(
        annotator=user, stage=next_item.reached_by(stage, user.pk), after=after
    )


def _submit(user, assignment):
    services.annotation_submit(
        assignment_id=assignment.pk, annotator=user, payload={"value": "keep"}
    )


@pytest.mark.parametrize("order", [Stage.OrderPolicy.RANDOM, Stage.OrderPolicy.DEPTH_FIRST])
def test_a_sweep_takes_open_items_by_id_from_the_cursor_then_wraps_round(order):
    project = make_project()
    stage = make_verify_stage(project, overlap=3, order_policy=order)
    make_items(project, 12)
    ids = list(ItemStage.objects.filter(stage=stage).order_by("pk").values_list("pk", flat=True))
    model = make_member(project)
    taken = []
    cursor = ids[5]
    while (assignment := _sweep(model, stage, cursor)) is not None:
        taken.append(assignment.item_stage_id)
        cursor = assignment.item_stage_id
        _submit(model, assignment)
    # after the cursor first, in id order; then the start, up to and including the cursor
    assert taken == ids[6:] + ids[:6]


def test_a_sweep_keeps_overlap_phases_and_skips_full_or_answered_items():
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 6)
    ids = list(ItemStage.objects.filter(stage=stage).order_by("pk").values_list("pk", flat=True))
    person, model = make_member(project), make_member(project)
    # the person holds the first item's only slot: the sweep passes over it
    held = services.assignment_next(annotator=person, stage=stage)
    first = _sweep(model, stage, 0)
    assert first.item_stage_id != held.item_stage_id
    assert first.item_stage_id == min(set(ids) - {held.item_stage_id})
    _submit(model, first)
    # asking again while holding nothing: never the answered item, never the held one
    rest = []
    cursor = first.item_stage_id
    while (assignment := _sweep(model, stage, cursor)) is not None:
        rest.append(assignment.item_stage_id)
        cursor = assignment.item_stage_id
        _submit(model, assignment)
    assert held.item_stage_id not in rest and first.item_stage_id not in rest
    assert len(rest) == 4
    for item_stage in ItemStage.objects.filter(stage=stage):
        assert item_stage.submitted_count + item_stage.leased_count <= item_stage.target_count


def test_a_sweep_renews_the_lease_it_holds():
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 4)
    model = make_member(project)
    first = _sweep(model, stage, 0)
    again = _sweep(model, stage, first.item_stage_id)
    assert again.pk == first.pk
    assert Assignment.objects.filter(annotator=model, status="active").count() == 1


def _rows_visited(text: str, params: dict) -> int:
    """Rows PostgreSQL read from the item stage table to answer the statement: what each scan of
    it returned plus what its filters removed (EXPLAIN ANALYZE)."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {text}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    table = ItemStage._meta.db_table
    total = 0

    def walk(node):
        nonlocal total
        if node.get("Relation Name") == table:
            loops = node.get("Actual Loops", 1)
            total += (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * loops
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return total


@pytest.mark.postgres
def test_a_sweep_visits_few_rows_where_the_stage_order_passes_over_every_answered_item(postgres):
    project = make_project()
    stage = make_verify_stage(project, overlap=3, order_policy=Stage.OrderPolicy.RANDOM)
    make_items(project, 600)
    runner = make_member(project)
    cursor = 0
    for _ in range(400):  # runs ahead: its items stay open for the two others
        assignment = _sweep(runner, stage, cursor)
        cursor = assignment.item_stage_id
        _submit(runner, assignment)
    with connection.cursor() as cursor_:
        cursor_.execute(f"ANALYZE {ItemStage._meta.db_table}")
    reached = next_item.reached_by(stage, runner.pk)
    swept = _rows_visited(*next_item._candidate_statement(reached, runner.pk, after=cursor))
    ordered = _rows_visited(*next_item._candidate_statement(reached, runner.pk))
    assert ordered >= 400  # the stage's own order reads every open item
    assert swept <= 20, swept
