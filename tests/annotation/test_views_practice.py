"""The item screen after a practice answer (annotation/views.py, annotation/practice.py): the
answer is stored, then the item comes back with whether it matched its known answer and the
explanation, before the next item — with htmx and without JavaScript, for any kind; nothing
of the kind for regular items, and nobody else's answer is shown."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation, Assignment
from tests.factories import make_label_stage, make_member, make_project

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        yield


@pytest.fixture
def practice():
    """A label stage with one practice item (known answer, explanation) and one regular item."""
    project = make_project(slug="practice")
    stage = make_label_stage(project, overlap=2)
    services.items_create(
        project=project,
        rows=[
            {
                "external_id": "practice-1",
                "purpose": "practice",
                "payload": {
                    "text": "The storm came, so the roof leaked.",
                    "gold": {"label": "causal"},
                    "explanation": "The storm is why the roof leaked.",
                },
            },
            {
                "external_id": "regular-1",
                "payload": {"text": "The bell rang; then we ate.", "explanation": "NOT-SHOWN"},
            },
        ],
    )
    return stage, make_member(project, username="pat")


def lease(user, stage) -> Assignment:
    return services.assignment_next(
        annotator=user, stage=access_stage_for_annotator(user=user, stage_id=stage.pk)
    )


def held_practice(client, user, stage) -> Assignment:
    client.force_login(user)
    assignment = lease(user, stage)
    while assignment.item_stage.item.purpose != "practice":  # take the practice item
        services.assignment_skip(assignment_id=assignment.pk, annotator=user, reason="later")
        assignment = lease(user, stage)
    return assignment


def test_with_htmx_a_practice_answer_shows_its_feedback_then_enter_continues(client, practice):
    stage, pat = practice
    held = held_practice(client, pat, stage)
    url = reverse("annotation:submit", args=[held.pk])
    response = client.post(url, {"value": "temporal"}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert Annotation.objects.get(assignment=held).payload["value"] == "temporal"
    assert "data-practice-feedback" in body and 'id="item-card" tabindex="-1"' in body
    assert "Not quite" in body
    assert "<strong data-practice-answer>temporal</strong>" in body
    assert "<strong data-practice-known>causal</strong>" in body
    assert "The storm is why the roof leaked." in body
    assert "The storm came, so the roof leaked." in body  # the item, as it was shown
    # Continue (Enter) asks for the next item; none was leased meanwhile.
    assert 'data-key="Enter" data-practice-continue autofocus' in body
    assert not Assignment.objects.filter(annotator=pat, status=Assignment.Status.ACTIVE).exists()
    following = client.post(reverse("annotation:stage", args=[stage.pk]), **HTMX)
    assert "data-practice-feedback" not in following.content.decode()


def test_without_javascript_the_feedback_is_a_page_of_its_own_and_ids_reveal_nothing(
    client, practice
):
    stage, pat = practice
    held = held_practice(client, pat, stage)
    response = client.post(reverse("annotation:submit", args=[held.pk]), {"value": "causal"})
    assert response.status_code == 302
    assert (
        response["Location"]
        == reverse("annotation:stage", args=[stage.pk]) + f"?practice={held.pk}"
    )
    page = client.get(response["Location"]).content.decode()
    assert "Well done: your answer matches" in page and "The storm is why" in page
    # Someone else opening the same URL sees their own screen, not pat's answer.
    other = make_member(stage.project, username="oli")
    client.force_login(other)
    theirs = client.get(response["Location"]).content.decode()
    assert "data-practice-feedback" not in theirs and "causal</strong>" not in theirs


def test_a_regular_item_moves_straight_on_and_never_shows_its_explanation(client, practice):
    stage, pat = practice
    client.force_login(pat)
    held = lease(pat, stage)
    while held.item_stage.item.purpose == "practice":
        services.assignment_skip(assignment_id=held.pk, annotator=pat, reason="later")
        held = lease(pat, stage)
    response = client.post(
        reverse("annotation:submit", args=[held.pk]), {"value": "temporal"}, **HTMX
    )
    body = response.content.decode()
    assert "data-practice-feedback" not in body and "NOT-SHOWN" not in body
