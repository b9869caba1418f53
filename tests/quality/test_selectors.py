"""quality/selectors.py's answers (``_answers``, through ``stage_quality`` and ``gold_counts``):
a stage's current answers by people on every item but practice ones, each purpose named."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import Annotation, Item, ItemStage
from quality import selectors
from tests.factories import make_items, make_label_stage, make_member, make_project

pytestmark = pytest.mark.django_db


def _answered_stage():
    """A label stage with one item of each purpose, all with a known answer ("causal"), two
    annotators who answered every item ("causal"), a historic rating without an annotator, and
    an answer on another project's stage that must not count."""
    project = make_project()
    stage = make_label_stage(project)
    elsewhere = make_project()
    other = make_label_stage(elsewhere)
    make_items(elsewhere, 1)
    purposes = list(Item.Purpose)
    services.items_create(
        project=project,
        rows=[{"external_id": p.value, "payload": {"text": f"A {p.label}."}} for p in purposes],
    )
    for purpose in purposes:
        Item.objects.filter(project=project, external_id=purpose.value).update(purpose=purpose)
    ItemStage.objects.filter(stage=stage).update(gold="causal")
    people = [make_member(project), make_member(project)]
    for item_stage in ItemStage.objects.filter(stage=stage):
        for person in people:
            Annotation.all_versions.create(
                item_stage=item_stage, annotator=person, payload={"value": "causal"}
            )
        Annotation.all_versions.create(
            item_stage=item_stage, external_rater="historic", payload={"value": "none"}
        )
    Annotation.all_versions.create(
        item_stage=ItemStage.objects.get(stage=other),
        annotator=people[0],
        payload={"value": "none"},
    )
    return stage, people


def test_every_purpose_but_practice_counts():
    assert set(selectors._ANSWER_PURPOSES) == set(Item.Purpose) - {Item.Purpose.PRACTICE}


def test_answers_of_people_on_every_purpose_but_practice_on_this_stage():
    stage, people = _answered_stage()
    counted = len(Item.Purpose) - 1
    answers = selectors._answers(stage)
    assert sorted(answers.values_list("item_stage__item__purpose", flat=True)) == sorted(
        [purpose.value for purpose in selectors._ANSWER_PURPOSES] * 2
    )
    assert selectors._answers(stage, people[0].pk).count() == counted
    rows = {row.user_id: row for row in selectors.stage_quality(stage).rows}
    assert set(rows) == {person.pk for person in people}
    for person in people:
        assert (rows[person.pk].answers, rows[person.pk].gold) == (counted, counted)
        assert rows[person.pk].gold_right == counted
        assert selectors.gold_counts(stage, person.pk) == (counted, counted)
