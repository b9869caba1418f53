"""A stage's silent gold page (studio/gold_views.py): who opens it, the gold items with their
answers, and confirming unanimous decisions as gold — refused without the confirmation or for a
decision that is not a candidate, nothing changed; a promoted copy never reaches the people who
answered its original."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.api import gold_candidates
from annotation.models import Item, ItemStage, Resolution, Role
from annotation.services import next_item
from tests.factories import (
    PASSWORD,
    annotate_stage,
    make_items,
    make_member,
    make_project,
    make_verify_stage,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def decided(django_capture_on_commit_callbacks):
    """Two annotators decide four items: two unanimously keep, two split."""
    project = make_project(slug="goldpage")
    stage = make_verify_stage(project, overlap=2, gold_every=2)
    items = make_items(project, 4)
    people = [make_member(project, username=f"ann{n}") for n in range(2)]
    split = {items[2].pk, items[3].pk}
    with django_capture_on_commit_callbacks(execute=True):  # the decisions, on commit
        annotate_stage(
            stage,
            people,
            lambda person, item: "reject" if item.pk in split and person == people[1] else "keep",
        )
    staff = {
        role: make_member(project, role, username=role)
        for role in (Role.ADMIN, Role.RESEARCHER, Role.REVIEWER)
    }
    return project, stage, items, people, staff


def url(project, stage):
    return reverse("studio:stage_gold", args=[project.slug, stage.pk])


def test_only_admins_and_researchers_open_the_gold_page(client, decided):
    project, stage, _, people, staff = decided
    for user, expected in (
        (staff[Role.ADMIN], 200),
        (staff[Role.RESEARCHER], 200),
        (staff[Role.REVIEWER], 403),
        (people[0], 403),
    ):
        client.logout()
        assert client.login(username=user.get_username(), password=PASSWORD)
        assert client.get(url(project, stage)).status_code == expected, user
    other = make_project(slug="other")
    assert client.get(reverse("studio:stage_gold", args=[other.slug, stage.pk])).status_code in (
        403,
        404,
    )


def test_a_researcher_confirms_unanimous_decisions_as_gold(client, decided):
    project, stage, items, people, staff = decided
    candidates = gold_candidates(stage=stage)
    assert {r.item_stage.item_id for r in candidates} == {items[0].pk, items[1].pk}
    assert client.login(username=staff[Role.RESEARCHER].get_username(), password=PASSWORD)
    page = client.get(url(project, stage)).content.decode()
    assert items[0].external_id in page and items[2].external_id not in page

    chosen = [str(r.pk) for r in candidates]
    refused = client.post(url(project, stage), {"resolution": chosen})
    assert refused.status_code == 400 and "Tick the confirmation" in refused.content.decode()
    split = Resolution.objects.get(item_stage__item=items[2])
    refused = client.post(
        url(project, stage), {"resolution": [*chosen, str(split.pk)], "confirm": "yes"}
    )
    assert refused.status_code == 400 and "cannot become gold" in refused.content.decode()
    assert not Item.objects.filter(purpose=Item.Purpose.GOLD).exists()

    done = client.post(url(project, stage), {"resolution": chosen, "confirm": "yes"}, follow=True)
    assert done.status_code == 200 and "2 gold items added" in done.content.decode()
    copies = ItemStage.objects.filter(stage=stage, item__purpose=Item.Purpose.GOLD).select_related(
        "item"
    )
    assert sorted(c.item.external_id for c in copies) == sorted(
        f"{i.external_id}-2" for i in items[:2]
    )
    assert {c.gold for c in copies} == {"keep"}
    assert gold_candidates(stage=stage) == []

    # the two who decided the originals never get the copies; a newcomer does, after a first item
    for person in people:
        assert (
            services.assignment_next(annotator=person, stage=next_item.reached_by(stage, person.pk))
            is None
        )
    make_items(project, 5, prefix="more")
    newcomer = make_member(project, username="newcomer")
    seen = []
    while (
        held := services.assignment_next(
            annotator=newcomer, stage=next_item.reached_by(stage, newcomer.pk)
        )
    ) is not None:
        seen.append(held.item_stage.item.purpose)
        services.annotation_submit(
            assignment_id=held.pk, annotator=newcomer, payload={"value": "keep"}
        )
    assert seen[0] == Item.Purpose.REGULAR and seen.count(Item.Purpose.GOLD) == 2
