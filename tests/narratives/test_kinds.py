"""A stranded narrative resolved by hand with ``narrative_record`` (narratives/policies.py) and
the kind's one hand decision ``as answered`` (narratives/kinds.py): the item page offers it and
the item is finished with the answers it has. Before, the page asked for a number and the kind
refused it ("Send the events in your order")."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.models import Item, ItemStage, Role
from narratives import services
from narratives.demo import demo_rows
from narratives.kinds import AS_ANSWERED
from tests.factories import make_member

pytestmark = pytest.mark.django_db


@pytest.fixture
def stranded():
    """Two people on a stage needing two per narrative: one rebuilds it exactly, one skips."""
    project = services.narratives_project_create(slug="story", name="Story", overlap=2)
    row = next(r for r in demo_rows() if r["payload"]["structure"] == "chain")
    engine.items_create(project=project, rows=[row])
    stage = project.stages.get()
    ada, ben = make_member(project), make_member(project)
    held = engine.assignment_next(
        annotator=ada, stage=access_stage_for_annotator(user=ada, stage_id=stage.pk)
    )
    order = held.item_stage.item.payload["gold"]["order"]
    engine.annotation_submit(assignment_id=held.pk, annotator=ada, payload={"order": order})
    held = engine.assignment_next(
        annotator=ben, stage=access_stage_for_annotator(user=ben, stage_id=stage.pk)
    )
    engine.assignment_skip(assignment_id=held.pk, annotator=ben, reason="unsure")
    return project


def test_an_admin_finishes_a_stranded_narrative_with_the_answers_it_has(client, stranded):
    client.force_login(make_member(stranded, Role.ADMIN, username="boss"))
    item = Item.objects.get(project=stranded)
    page = html.unescape(
        client.get(reverse("studio:item", args=[stranded.slug, item.pk])).content.decode()
    )
    assert f'<option value="{AS_ANSWERED}"' in page
    response = client.post(
        reverse("studio:item_act", args=[stranded.slug, item.pk]),
        {"action": "resolve", "stage": "order", "value": AS_ANSWERED,
         "reason": "One exact answer is enough.", "confirm": "yes"},
    )  # fmt: skip
    assert response.status_code == 302, html.unescape(response.content.decode())[:3000]
    item.refresh_from_db()
    assert item.status == Item.Status.ACCEPTED
    resolution = ItemStage.objects.get(item=item).resolution
    assert (resolution.value, resolution.outcome) == (AS_ANSWERED, "accept")
    assert services.baseline(stranded)["overall"]["exact"] == 1  # the answer given counts
