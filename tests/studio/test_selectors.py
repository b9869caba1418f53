"""The item browser's item page is blind where it must be (studio.selectors.item_history):
an answer given on an item stage still collecting or changing answers is shown to its author
alone — not to reviewers, researchers or admins, nor to a reviewer who also annotates — until
the item is decided or sent to a reviewer; reviewers see no names and no gold."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import ItemStage, Role
from tests.factories import make_items, make_label_stage, make_member, make_project

pytestmark = pytest.mark.django_db


def submit(person, stage, value, comment):
    assignment = services.assignment_next(
        annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
    )
    services.annotation_submit(
        assignment_id=assignment.pk,
        annotator=person,
        payload={"value": value, "comment": comment},
    )


@pytest.fixture
def half_done(django_capture_on_commit_callbacks):
    """One item of a label stage (overlap 3) with two of its three answers; the first
    annotator is also a reviewer."""
    project = make_project()
    stage = make_label_stage(project, overlap=3)
    make_items(project, 1)
    people = [make_member(project, username=f"annotator-{n}") for n in range(3)]
    services.membership_add(project=project, user=people[0], role=Role.REVIEWER)
    with django_capture_on_commit_callbacks(execute=True):
        submit(people[0], stage, "causal", "first-comment")
        submit(people[1], stage, "temporal", "second-comment")
    item_stage = ItemStage.objects.get(stage=stage)
    return project, stage, item_stage, people


def item_page(client, user, item_stage) -> str:
    client.force_login(user)
    project = item_stage.stage.project
    response = client.get(reverse("studio:item", args=[project.slug, item_stage.item_id]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.RESEARCHER, Role.ADMIN])
def test_nobody_reads_the_answers_of_an_item_still_being_annotated(client, half_done, role):
    project, _, item_stage, people = half_done
    page = item_page(client, make_member(project, role=role), item_stage)
    for secret in ("annotator-0", "annotator-1", "first-comment", "second-comment"):
        assert secret not in page
    assert "2 answers by others not shown" in page


def test_a_reviewer_who_annotates_sees_their_own_answer_and_no_one_elses(client, half_done):
    _, _, item_stage, (both, *_) = half_done
    page = item_page(client, both, item_stage)
    assert "first-comment" in page
    assert "second-comment" not in page and "annotator-1" not in page


def test_answers_waiting_for_resolution_stay_blind(client, half_done):
    project, _, item_stage, _ = half_done
    ItemStage.objects.filter(pk=item_stage.pk).update(state=ItemStage.State.RESOLVING)
    page = item_page(client, make_member(project, role=Role.RESEARCHER), item_stage)
    assert "second-comment" not in page


def test_every_answer_shows_once_the_item_is_decided(
    client, half_done, django_capture_on_commit_callbacks
):
    project, stage, item_stage, people = half_done
    with django_capture_on_commit_callbacks(execute=True):
        submit(people[2], stage, "causal", "third-comment")
    item_stage.refresh_from_db()
    assert item_stage.state == ItemStage.State.RESOLVED
    page = item_page(client, make_member(project, role=Role.RESEARCHER), item_stage)
    for shown in ("annotator-1", "first-comment", "second-comment", "third-comment"):
        assert shown in page
    assert "not shown" not in page


def test_reviewers_weigh_answers_not_people_and_see_no_gold(
    client, half_done, django_capture_on_commit_callbacks
):
    """As on the adjudication page: "Annotator 1, 2, …" instead of names, and the item's gold
    field left out; researchers and admins see both."""
    project, stage, item_stage, people = half_done
    item = item_stage.item
    item.payload = {**item.payload, "gold": {"label": "gold-answer"}}
    item.save(update_fields=["payload"])
    with django_capture_on_commit_callbacks(execute=True):
        submit(people[2], stage, "causal", "third-comment")
    reviewer = item_page(client, make_member(project, role=Role.REVIEWER), item_stage)
    assert "third-comment" in reviewer and "Annotator 3" in reviewer
    assert "annotator-2" not in reviewer and "gold-answer" not in reviewer
    researcher = item_page(client, make_member(project, role=Role.RESEARCHER), item_stage)
    assert "annotator-2" in researcher and "gold-answer" in researcher
