"""The ``graph_question`` kind's choices (graphs/kinds.py): a yes-or-no question offers yes / no,
so an admin resolves a stranded one by hand from its item page (the form offered a number field
and refused "yes" before); a number question still takes a number."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.kinds import KindContext, get_kind
from annotation.models import Item, ItemStage, Role
from graphs.services import carlgt_project_create
from tests.factories import make_member

pytestmark = pytest.mark.django_db

ROWS = [
    {"external_id": "q-yes-no", "payload": {"question": "Are V1 and V2 d-separated?",
     "task": "d_separation", "answer_type": "yes_no", "answer": "yes"}},
    {"external_id": "q-number", "payload": {"question": "E[V2 | do(V1=1)]?",
     "task": "intervention", "answer_type": "number", "answer": 2.5}},
]  # fmt: skip


@pytest.fixture
def stranded():
    """Two people on a stage needing two per question; the second skips both questions."""
    project = carlgt_project_create(slug="carl", name="CARL", overlap=2)
    engine.items_create(project=project, rows=ROWS)
    stage = project.stages.get()
    ada, ben = make_member(project), make_member(project)
    for _ in ROWS:
        held = engine.assignment_next(
            annotator=ada, stage=access_stage_for_annotator(user=ada, stage_id=stage.pk)
        )
        value = "yes" if held.item_stage.item.payload["answer_type"] == "yes_no" else 2.5
        engine.annotation_submit(assignment_id=held.pk, annotator=ada, payload={"value": value})
        held = engine.assignment_next(
            annotator=ben, stage=access_stage_for_annotator(user=ben, stage_id=stage.pk)
        )
        engine.assignment_skip(assignment_id=held.pk, annotator=ben, reason="unsure")
    return project


def test_yes_no_questions_offer_yes_and_no_and_number_questions_none(stranded):
    kind = get_kind("graph_question")
    offered = {
        item_stage.item.external_id: kind.choices(
            KindContext(stage=item_stage.stage, item_stage=item_stage)
        )
        for item_stage in ItemStage.objects.filter(item__project=stranded)
    }
    assert offered == {"q-yes-no": ["yes", "no"], "q-number": None}


@pytest.mark.parametrize("external_id, value, stored", [("q-yes-no", "yes", "yes"),
                                                        ("q-number", "2.5", 2.5)])  # fmt: skip
def test_an_admin_resolves_a_stranded_question_by_hand_from_its_page(
    client, stranded, external_id, value, stored
):
    client.force_login(make_member(stranded, Role.ADMIN, username="boss"))
    item = Item.objects.get(project=stranded, external_id=external_id)
    page = html.unescape(
        client.get(reverse("studio:item", args=[stranded.slug, item.pk])).content.decode()
    )
    if stored == "yes":
        assert '<select id="resolve-value"' in page and '<option value="no"' in page
    else:
        assert '<input id="resolve-value" name="value" inputmode="decimal"' in page
    response = client.post(
        reverse("studio:item_act", args=[stranded.slug, item.pk]),
        {"action": "resolve", "stage": "answer", "value": value, "reason": "Ada knows.",
         "confirm": "yes"},
    )  # fmt: skip
    assert response.status_code == 302, html.unescape(response.content.decode())[:3000]
    item.refresh_from_db()
    assert item.status == Item.Status.ACCEPTED
    assert ItemStage.objects.get(item=item).resolution.value == stored
