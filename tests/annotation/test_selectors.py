"""The engine's one rule for open votes (annotation.selectors.annotations_visible): a vote on an
item stage still collecting or changing answers is seen by its author alone; votes waiting for a
reviewer, decided ones and those of an earlier round are final."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation, ItemStage
from annotation.selectors import annotations_visible, item_stage_results
from tests.factories import make_items, make_label_stage, make_member, make_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_of_three(django_capture_on_commit_callbacks):
    project = make_project()
    stage = make_label_stage(project, overlap=3)
    make_items(project, 1)
    people = [make_member(project) for _ in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        for person in people[:2]:
            assignment = services.assignment_next(
                annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
            )
            services.annotation_submit(
                assignment_id=assignment.pk, annotator=person, payload={"value": "causal"}
            )
    return ItemStage.objects.get(stage=stage), people


def authors(viewer) -> set[int]:
    return set(
        annotations_visible(Annotation.objects.all(), viewer).values_list("annotator_id", flat=True)
    )


def test_an_open_vote_is_seen_by_its_author_alone(two_of_three):
    _, (first, second, third) = two_of_three
    assert authors(None) == set()
    assert authors(first) == {first.pk}
    assert authors(third) == set()


@pytest.mark.parametrize("state", [ItemStage.State.OPEN, ItemStage.State.RESOLVING])
def test_votes_still_changeable_are_open(two_of_three, state):
    item_stage, (first, second, _) = two_of_three
    ItemStage.objects.filter(pk=item_stage.pk).update(state=state)
    assert authors(None) == set()


@pytest.mark.parametrize(
    "state",
    [ItemStage.State.ADJUDICATION, ItemStage.State.RESOLVED, ItemStage.State.DISCARDED],
)
def test_votes_decided_or_waiting_for_a_reviewer_are_final(two_of_three, state):
    item_stage, (first, second, _) = two_of_three
    ItemStage.objects.filter(pk=item_stage.pk).update(state=state)
    assert authors(None) == {first.pk, second.pk}


def test_votes_of_an_earlier_round_are_final_when_the_item_comes_back(two_of_three):
    item_stage, (first, second, _) = two_of_three
    ItemStage.objects.filter(pk=item_stage.pk).update(round=1)
    assert authors(None) == {first.pk, second.pk}


def test_an_items_results_carry_no_tally_of_open_votes(two_of_three):
    from annotation.models import Resolution

    item_stage, _ = two_of_three
    Resolution.objects.create(
        item_stage=item_stage, value=None, status="tie", votes={"causal": 2}, outcome="tie"
    )
    [result] = item_stage_results(item_stage.item)
    assert result["state"] == "open" and result["resolution"] is None
    ItemStage.objects.filter(pk=item_stage.pk).update(state=ItemStage.State.ADJUDICATION)
    [result] = item_stage_results(item_stage.item)
    assert result["resolution"]["votes"] == {"causal": 2}
