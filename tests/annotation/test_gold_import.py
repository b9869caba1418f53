"""Gold items entering a stage (annotation/gold.py): with an import's gold column
(imports.services.mapping, option ``gold_field``) or a plain ``payload["gold"]``, a gold item
gets every annotator's slots and its known answer; the column is never left in the payload."""

from __future__ import annotations

import io

import pytest

from annotation import services
from annotation.models import Item, ItemStage
from annotation.slots import EVERYONE
from imports.services import import_batch_create, import_batch_run
from tests.factories import make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def test_a_gold_column_makes_gold_items_of_the_rows_that_fill_it():
    project = make_project()
    stage = make_verify_stage(project, overlap=3)
    admin = make_member(project, "admin")
    data = b"external_id,text,known\nq-1,The rain fell.,\nq-2,The river rose.,keep\nq-3,The dam broke.,reject\n"
    batch = import_batch_create(
        project=project,
        user=admin,
        fileobj=io.BytesIO(data),
        filename="items.csv",
        options={"gold_field": "known"},
    )
    import_batch_run(batch_id=batch.pk)
    items = {item.external_id: item for item in Item.objects.filter(project=project)}
    assert {key: item.purpose for key, item in items.items()} == {
        "q-1": "regular",
        "q-2": "gold",
        "q-3": "gold",
    }
    assert all("known" not in item.payload for item in items.values())
    stages = {
        s.item.external_id: s for s in ItemStage.objects.filter(stage=stage).select_related("item")
    }
    assert (stages["q-1"].target_count, stages["q-1"].gold) == (3, None)
    assert (stages["q-2"].target_count, stages["q-2"].gold) == (EVERYONE, "keep")
    assert (stages["q-3"].target_count, stages["q-3"].gold) == (EVERYONE, "reject")


def test_a_per_stage_gold_answer_still_wins_for_any_item():
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    services.items_create(
        project=project,
        rows=[
            {"external_id": "a", "payload": {"text": "A.", "gold": {"verify": "keep"}}},
            {"external_id": "b", "payload": {"text": "B.", "gold": "keep"}},
            {
                "external_id": "c",
                "payload": {"text": "C.", "gold": {"verify": "reject"}},
                "purpose": "gold",
            },
        ],
    )
    found = {
        s.item.external_id: (s.target_count, s.gold)
        for s in ItemStage.objects.filter(stage=stage).select_related("item")
    }
    # a regular item's plain "gold" is not read (it may mean anything in a dataset's own fields)
    assert found == {"a": (2, "keep"), "b": (2, None), "c": (EVERYONE, "reject")}
