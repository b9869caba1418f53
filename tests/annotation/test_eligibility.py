"""Eligibility rules (annotation/eligibility.py) enforced by the candidate search: the ``blind``
rule of a blind baseline, on SQLite here and on PostgreSQL under `make test`, where both lease
paths (the one-statement lease and the search in a transaction) are checked directly. The other
rules are tested beside the phases (tests/annotation/test_phases.py)."""

from __future__ import annotations

import pytest
from django.db import transaction

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.eligibility import blind, describe, validate_rules
from annotation.errors import ApplicationError
from annotation.models import Annotation, ItemStage, Resolution
from annotation.services import next_item
from tests.factories import (
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_verify_stage,
)

pytestmark = pytest.mark.django_db


def lease(person, stage):
    return services.assignment_next(
        annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
    )


def submit(person, assignment, value):
    services.annotation_submit(
        assignment_id=assignment.pk, annotator=person, payload={"value": value}
    )


def _verified_then_blind(capture):
    """One item verified by two people (a third leased it and skipped) and opened in a blind
    label stage; returns (project, label stage, the three who worked on it)."""
    project = make_project()
    verify = make_verify_stage(project, overlap=2)
    label = make_label_stage(project, overlap=2, eligibility=[blind()])
    make_items(project, 1)
    alice, bob, carol = (make_member(project) for _ in range(3))
    with capture(execute=True):
        held = lease(carol, verify)
        services.assignment_skip(assignment_id=held.pk, annotator=carol, reason="unsure")
        submit(alice, lease(alice, verify), "keep")
        submit(bob, lease(bob, verify), "keep")
    assert ItemStage.objects.filter(stage=label, state="open").count() == 1
    return project, label, (alice, bob, carol)


def test_a_blind_stage_keeps_out_everyone_who_worked_on_the_item_earlier(
    django_capture_on_commit_callbacks,
):
    project, label, earlier = _verified_then_blind(django_capture_on_commit_callbacks)
    for person in earlier:  # answered, or only shown the item (skipped)
        assert lease(person, label) is None
    fresh = make_member(project)
    assert lease(fresh, label) is not None


def test_a_blind_stage_keeps_out_the_reviewer_who_decided_the_item_earlier(
    django_capture_on_commit_callbacks,
):
    project, label, _ = _verified_then_blind(django_capture_on_commit_callbacks)
    reviewer, fresh = make_member(project), make_member(project)
    Resolution.objects.filter(item_stage__stage__slug="verify").update(decided_by=reviewer)
    assert lease(reviewer, label) is None
    assert lease(fresh, label) is not None


def test_a_blind_copy_follows_the_item_it_was_made_from(django_capture_on_commit_callbacks):
    """A blind copy under a neutral handle (``made_from`` names the payload field holding the
    original's external id): whoever worked on the original is kept off the copy."""
    project = make_project()
    review = make_verify_stage(
        project, overlap=1, slug="review", name="Review", routes={"accept": {"action": "finish"}}
    )
    answer = make_label_stage(
        project, overlap=2, slug="answer", name="Answer", eligibility=[blind("case_id")]
    )
    make_items(project, 1, prefix="case")
    reviewer, fresh = make_member(project), make_member(project)
    with django_capture_on_commit_callbacks(execute=True):
        submit(reviewer, lease(reviewer, review), "keep")
    copy = services.items_create(
        project=project,
        rows=[{"external_id": "answer/q-1", "payload": {"case_id": "case-00000", "text": "?"}}],
        open_first_stage=False,
    )
    services.item_stages_open(items=copy, stage=answer)
    assert lease(reviewer, answer) is None
    assert lease(fresh, answer).item_stage.item.external_id == "answer/q-1"
    # Without made_from the copy is another item: the reviewer would get it.
    services.stage_update(stage=answer, eligibility=[blind()])
    assert lease(reviewer, answer) is not None


@pytest.mark.postgres
@pytest.mark.parametrize("path", ["one statement", "in a transaction"])
def test_both_postgresql_lease_paths_honour_the_blind_rule(
    postgres, django_capture_on_commit_callbacks, path
):
    project, label, earlier = _verified_then_blind(django_capture_on_commit_callbacks)
    take = {
        "one statement": next_item._lease_at_once,
        "in a transaction": next_item._assignment_next_in_transaction,
    }[path]
    for person in earlier:
        with transaction.atomic():
            assert take(person, next_item.reached_by(label, person.pk)) is None
    fresh = make_member(project)
    with transaction.atomic():
        assert take(fresh, next_item.reached_by(label, fresh.pk)) is not None


def test_the_rule_is_checked_and_said_in_words():
    assert validate_rules([{"rule": "blind"}], stage_slugs=[]) == [{"rule": "blind"}]
    assert validate_rules([blind("case_id")], stage_slugs=[]) == [
        {"rule": "blind", "made_from": "case_id"}
    ]
    with pytest.raises(ApplicationError, match="made_from"):
        validate_rules([{"rule": "blind", "made_from": "case id; DROP"}], stage_slugs=[])
    assert describe([blind(), {"rule": "not_author"}]) == [
        "Blind: nobody who worked on this item in an earlier stage",
        "Never the item's author",
    ]


def test_a_blind_stage_keeps_out_a_member_whose_answer_was_imported_without_a_lease():
    project = make_project()
    verify = make_verify_stage(project, overlap=1, routes={"accept": {"action": "finish"}})
    label = make_label_stage(project, overlap=1, eligibility=[blind()])
    (item,) = make_items(project, 1)
    services.item_stages_open(items=[item], stage=label)
    imported, fresh = make_member(project), make_member(project)
    Annotation.objects.create(
        item_stage=ItemStage.objects.get(item=item, stage=verify),
        annotator=imported,
        payload={"value": "keep"},
    )
    assert lease(imported, label) is None
    assert lease(fresh, label) is not None
