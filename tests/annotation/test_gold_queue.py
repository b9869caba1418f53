"""Silent gold in the queue (annotation/gold.py, annotation/services/next_item.py): gold items
come among an annotator's items at the stage's rate, never first, never as work, and nothing an
annotator receives says which items they are."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.gold import gold_answers
from annotation.models import Assignment, Item, ItemStage, Resolution, Stage
from annotation.services import next_item
from annotation.slots import EVERYONE
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


def gold_stage(*, every=3, regular=30, gold=5, overlap=3, order=Stage.OrderPolicy.DEPTH_FIRST):
    project = make_project()
    stage = make_verify_stage(project, overlap=overlap, gold_every=every, order_policy=order)
    make_items(project, regular)
    services.items_create(
        project=project,
        rows=[
            {
                "external_id": f"item-9{index:04d}",
                "payload": {
                    "text": f"Sentence {index}: the wind rose, so the sea grew.",
                    "gold": "keep",
                },
                "purpose": "gold",
            }
            for index in range(gold)
        ],
    )
    return project, stage


def is_gold(assignment: Assignment) -> bool:
    return assignment.item_stage.item.purpose == Item.Purpose.GOLD


def work_through(stage, person, answer="keep") -> list[bool]:
    """The person takes items until none is left; returns, in order, whether each was gold."""
    seen = []
    while (
        assignment := services.assignment_next(
            annotator=person, stage=next_item.reached_by(stage, person.pk)
        )
    ) is not None:
        seen.append(is_gold(assignment))
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=person, payload={"value": answer}
        )
    return seen


def assert_rate(seen: list[bool], every: int) -> None:
    assert seen and not seen[0], "the first item is never gold"
    for start in range(len(seen)):
        assert sum(seen[start : start + every]) <= 1, f"two gold items within {every}: {seen}"


@pytest.mark.parametrize("order", [Stage.OrderPolicy.DEPTH_FIRST, Stage.OrderPolicy.RANDOM])
def test_gold_comes_at_most_one_in_n_never_first_and_every_gold_item_once(order):
    project, stage = gold_stage(every=3, regular=30, gold=5, order=order)
    person = make_member(project)
    seen = work_through(stage, person)
    assert_rate(seen, 3)
    assert seen.count(False) == 30
    assert seen.count(True) == 5  # 30 regular items leave room for every gold item once


def test_no_gold_when_the_rate_is_off_and_gold_items_are_never_work():
    project, stage = gold_stage(every=0, regular=6, gold=3)
    person = make_member(project)
    assert work_through(stage, person) == [False] * 6


def test_gold_answers_never_count_as_work(django_capture_on_commit_callbacks):
    project, stage = gold_stage(every=2, regular=8, gold=4, overlap=3)
    people = [make_member(project) for _ in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        for person in people:
            assert_rate(work_through(stage, person, answer="reject"), 2)
    golds = ItemStage.objects.filter(stage=stage, item__purpose=Item.Purpose.GOLD)
    assert {(g.state, g.target_count) for g in golds} == {(ItemStage.State.OPEN, EVERYONE)}
    assert not Resolution.objects.filter(item_stage__in=golds).exists()
    assert all(g.gold == "keep" for g in golds)
    regular = ItemStage.objects.filter(stage=stage, item__purpose=Item.Purpose.REGULAR)
    assert all(r.submitted_count == 3 and r.state == ItemStage.State.RESOLVED for r in regular)
    answers = gold_answers(stage=stage)
    assert answers and all(a.correct is False and a.vote == "reject" for a in answers)
    assert (
        len(answers)
        == golds.aggregate(
            n=__import__("django.db.models", fromlist=["Sum"]).Sum("submitted_count")
        )["n"]
    )
