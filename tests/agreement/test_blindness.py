"""Reviewers and researchers never read votes of work in progress, and nobody judges an item
they worked on: adjudication opens only for items waiting for it (or already decided), the
disagreement view lists only items no longer open, and a reviewer who annotated an item neither
sees it in the queue nor decides it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agreement import selectors
from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import ItemStage, Role
from tests.factories import PASSWORD, make_items, make_label_stage, make_member, make_project

pytestmark = pytest.mark.django_db


def submit(person, stage, value):
    assignment = services.assignment_next(
        annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
    )
    services.annotation_submit(
        assignment_id=assignment.pk, annotator=person, payload={"value": value}
    )


@pytest.fixture
def split(django_capture_on_commit_callbacks):
    """A label stage (overlap 3) with one item tied three ways and one item with two of three
    votes; a reviewer who is also one of the annotators, and one who is not."""
    project = make_project()
    stage = make_label_stage(project, overlap=3)
    make_items(project, 2)
    people = [make_member(project) for _ in range(3)]
    both = people[0]
    services.membership_add(project=project, user=both, role=Role.REVIEWER)
    reviewer = make_member(project, role=Role.REVIEWER)
    with django_capture_on_commit_callbacks(execute=True):
        for person, value in zip(people, ["causal", "temporal", "none"], strict=True):
            submit(person, stage, value)
        submit(people[0], stage, "causal")
        submit(people[1], stage, "causal")
    tied = ItemStage.objects.get(stage=stage, state="adjudication")
    in_progress = ItemStage.objects.get(stage=stage, state="open")
    return project, stage, tied, in_progress, both, reviewer


def page(client, user, name, *args):
    client.login(username=user.username, password=PASSWORD)
    return client.get(reverse(name, args=args))


def test_an_item_still_being_annotated_cannot_be_opened_for_adjudication(client, split):
    project, _, tied, in_progress, _, reviewer = split
    assert page(client, reviewer, "agreement:adjudicate", project.slug, tied.pk).status_code == 200
    early = page(client, reviewer, "agreement:adjudicate", project.slug, in_progress.pk)
    assert early.status_code == 404
    assert "causal" not in early.content.decode()


def test_the_disagreement_view_lists_no_open_item(split):
    _, stage, tied, in_progress, _, _ = split
    listed = set(selectors.disagreement_items(stage, show="all").values_list("pk", flat=True))
    assert tied.pk in listed and in_progress.pk not in listed
    # An item reopened for one more vote (e.g. by a tie policy) is open again: not listed.
    ItemStage.objects.filter(pk=tied.pk).update(state="open")
    assert not selectors.disagreement_items(stage, show="all").filter(pk=tied.pk).exists()


def test_an_item_waiting_for_its_resolution_is_in_neither_the_drill_down_nor_its_csv(client, split):
    """Answers may still change while an item waits for its resolution (annotation.versions),
    even when an earlier resolution (a tie that asked for one more vote) is attached."""
    project, stage, tied, _, _, _ = split
    ItemStage.objects.filter(pk=tied.pk).update(state=ItemStage.State.RESOLVING)
    researcher = make_member(project, role=Role.RESEARCHER)
    listing = page(client, researcher, "agreement:disagreements", project.slug, stage.slug)
    table = page(client, researcher, "agreement:csv", project.slug, stage.slug, "disagreements")
    assert listing.status_code == 200 and table.status_code == 200
    assert tied.item.external_id not in listing.content.decode()
    assert tied.item.external_id not in b"".join(table.streaming_content).decode()


def test_a_reviewer_never_judges_an_item_they_annotated(client, split):
    project, _, tied, _, both, reviewer = split
    assert tied.pk in set(
        selectors.adjudication_queue(project, reviewer=reviewer).values_list("pk", flat=True)
    )
    assert not selectors.adjudication_queue(project, reviewer=both).filter(pk=tied.pk).exists()
    refused = page(client, both, "agreement:adjudicate", project.slug, tied.pk)
    assert refused.status_code == 403
    assert "You annotated this item" in refused.content.decode()
