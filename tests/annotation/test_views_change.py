"""Changing an answer on the annotator's pages: the change page (filled in, refused once the item
is decided), "Saved", My recent answers, the Backspace link, and the unchanged submit budget."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Annotation, Assignment, ItemStage
from tests.annotation.test_views import HTMX, pair_project, signed_in, stage_url, submit_url

pytestmark = pytest.mark.django_db


def answer_first_item(client, stage, user, value="keep"):
    """Lease and answer one item through the pages; returns the stored annotation."""
    signed_in(client, user)
    client.post(stage_url(stage))
    assignment = Assignment.objects.get(annotator=user, stage=stage, status="active")
    client.post(submit_url(assignment), {"value": value}, **HTMX)
    return Annotation.objects.get(assignment=assignment)


def test_after_a_submit_the_next_item_offers_to_change_the_previous_answer(client):
    _, stage, (alice, *_) = pair_project()
    signed_in(client, alice)
    client.post(stage_url(stage))
    assignment = Assignment.objects.get(annotator=alice, stage=stage, status="active")
    html = client.post(submit_url(assignment), {"value": "keep"}, **HTMX).content.decode()
    last = reverse("annotation:answer_last", args=[stage.pk])
    assert f'href="{last}" data-key="Backspace"' in html
    assert reverse("annotation:answers", args=[stage.pk]) in html
    annotation = Annotation.objects.get(assignment=assignment)
    response = client.get(last)
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:answer", args=[annotation.pk])


def test_the_change_page_shows_the_answer_and_a_post_saves_a_new_version(client):
    _, stage, (alice, *_) = pair_project()
    first = answer_first_item(client, stage, alice, "keep")
    url = reverse("annotation:answer", args=[first.pk])
    page = client.get(url).content.decode()
    assert "Changing your answer to pair-" in page and 'data-current="keep"' in page
    assert f'action="{url}"' in page and "skip-form" not in page
    response = client.post(url, {"value": "reject"}, follow=True)
    html = response.content.decode()
    assert "Saved: your answer to" in html and "is now reject" in html
    current = Annotation.objects.get(assignment=first.assignment_id)
    assert (current.version, current.payload["value"], current.supersedes_id) == (
        2,
        "reject",
        first.pk,
    )
    # the item screen again, with the item the annotator holds
    assert response.redirect_chain[-1][0] == stage_url(stage)
    assert "item-form" in html
    # a retried POST (the same URL: the version replaced) stores nothing more
    client.post(url, {"value": "reject"})
    assert Annotation.all_versions.filter(assignment=first.assignment_id).count() == 2
    # the old URL opens the current version
    assert 'data-current="reject"' in client.get(url).content.decode()


def test_a_decided_item_shows_why_its_answer_can_no_longer_change_and_refuses_a_post(client):
    _, stage, (alice, *_) = pair_project()
    first = answer_first_item(client, stage, alice, "keep")
    ItemStage.objects.filter(pk=first.item_stage_id).update(state=ItemStage.State.RESOLVED)
    url = reverse("annotation:answer", args=[first.pk])
    page = client.get(url).content.decode()
    assert "can no longer be changed" in page and "has been decided" in page
    assert f'action="{url}"' not in page
    refused = client.post(url, {"value": "reject"})
    assert refused.status_code == 409 and "has been decided" in refused.content.decode()
    assert Annotation.all_versions.filter(assignment=first.assignment_id).count() == 1


def test_an_invalid_change_is_refused_naming_the_field_and_changes_nothing(client):
    _, stage, (alice, *_) = pair_project()
    first = answer_first_item(client, stage, alice, "keep")
    response = client.post(reverse("annotation:answer", args=[first.pk]), {"value": "maybe"})
    assert response.status_code == 400 and "Not saved" in response.content.decode()
    assert Annotation.all_versions.filter(assignment=first.assignment_id).count() == 1


def test_someone_elses_answer_is_not_found(client):
    _, stage, (alice, bob, _) = pair_project()
    first = answer_first_item(client, stage, alice, "keep")
    signed_in(client, bob)
    url = reverse("annotation:answer", args=[first.pk])
    assert client.get(url).status_code == 404
    assert client.post(url, {"value": "reject"}).status_code == 404
    assert client.get(reverse("annotation:answer", args=[10**12])).status_code == 404
    assert Annotation.all_versions.filter(assignment=first.assignment_id).count() == 1


def test_my_recent_answers_lists_mine_with_change_links_or_the_reason(client):
    _, stage, (alice, bob, _) = pair_project()
    first = answer_first_item(client, stage, alice, "keep")
    assignment = Assignment.objects.get(annotator=alice, stage=stage, status="active")
    client.post(submit_url(assignment), {"value": "reject"}, **HTMX)
    second = Annotation.objects.get(assignment=assignment)
    answer_first_item(client, stage, bob, "keep")  # never shown to alice
    ItemStage.objects.filter(pk=first.item_stage_id).update(state=ItemStage.State.RESOLVED)
    signed_in(client, alice)
    html = client.get(reverse("annotation:answers", args=[stage.pk])).content.decode()
    assert html.count("data-change-answer") == 1
    assert reverse("annotation:answer", args=[second.pk]) in html
    assert "has been decided" in html
    assert html.index(second.item_stage.item.external_id) < html.index(
        first.item_stage.item.external_id
    )


def test_a_resent_submit_with_another_answer_says_how_to_change_it(client):
    _, stage, (alice, *_) = pair_project()
    signed_in(client, alice)
    client.post(stage_url(stage))
    assignment = Assignment.objects.get(annotator=alice, stage=stage, status="active")
    client.post(submit_url(assignment), {"value": "keep"}, **HTMX)
    html = client.post(submit_url(assignment), {"value": "reject"}, **HTMX).content.decode()
    assert "was kept" in html and "Change previous answer" in html


def test_backspace_on_the_change_page_goes_one_answer_further_back(client):
    _, stage, (alice, *_) = pair_project()
    first = answer_first_item(client, stage, alice, "keep")
    assignment = Assignment.objects.get(annotator=alice, stage=stage, status="active")
    client.post(submit_url(assignment), {"value": "reject"}, **HTMX)
    second = Annotation.objects.get(assignment=assignment)
    page = client.get(reverse("annotation:answer", args=[second.pk])).content.decode()
    earlier = reverse("annotation:answer", args=[first.pk])
    assert f'href="{earlier}" data-key="Backspace"' in page
    oldest = client.get(earlier).content.decode()
    assert "data-earlier-answer" not in oldest


def test_the_change_page_opens_for_an_answer_of_every_demo_stage(client):
    """Every kind's form renders in change mode, filled with a stored answer (the demo seeds
    work in the stages of every workflow)."""
    from django.core.management import call_command

    from annotation.models import Membership, Role

    call_command("seed_demo")
    seen = {}
    for answer in (
        Annotation.objects.exclude(assignment=None)
        .select_related("item_stage__stage", "annotator")
        .order_by("-pk")
    ):
        stage = answer.item_stage.stage
        if (
            stage.pk in seen
            or not Membership.objects.filter(
                project_id=stage.project_id, user=answer.annotator, role=Role.ANNOTATOR
            ).exists()
        ):
            continue
        # undecided in the answer's own round and phase, so that the kind's form is shown
        ItemStage.objects.filter(pk=answer.item_stage_id).update(
            state=ItemStage.State.OPEN, round=answer.round, phase=answer.phase
        )
        client.force_login(answer.annotator)
        url = reverse("annotation:answer", args=[answer.pk])
        response = client.get(url)
        html = response.content.decode()
        seen[stage.pk] = stage.kind
        assert response.status_code == 200, (stage.kind, html[:500])
        assert f'action="{url}"' in html and "data-changing" in html, stage.kind
    kinds = set(seen.values())
    assert len(kinds) >= 8, kinds  # the demo answers eight kinds
