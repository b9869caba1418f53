"""Phases inside one item stage (annotation/phases.py) and eligibility rules
(annotation/eligibility.py), enforced by the candidate search itself: on SQLite here, on
PostgreSQL under `make test`."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Item, ItemStage, Membership
from annotation.selectors import annotations_shown
from tests.factories import (
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_verify_stage,
)

pytestmark = pytest.mark.django_db

CHECK_EDIT_VOTE = [
    {"name": "check", "slots": 1},
    {"name": "edit", "slots": 2, "people": "new", "shows": ["check"]},
    {"name": "vote", "slots": 3, "people": "same", "shows": ["edit"]},
]


def lease(person, stage):
    return services.assignment_next(
        annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
    )


def submit(person, assignment, value, comment=""):
    services.annotation_submit(
        assignment_id=assignment.pk,
        annotator=person,
        payload={"value": value, "comment": comment},
    )


def test_check_edit_vote_phases_admit_the_right_people(django_capture_on_commit_callbacks):
    project = make_project()
    stage = make_verify_stage(project, overlap=3, phases=CHECK_EDIT_VOTE)
    make_items(project, 1)
    ann, ben, cat, dan = (make_member(project) for _ in range(4))

    with django_capture_on_commit_callbacks(execute=True):
        check = lease(ann, stage)
        assert lease(ben, stage) is None  # one checker
        submit(ann, check, "keep", "question 2 is at the wrong level")
    item_stage = ItemStage.objects.get()
    assert (item_stage.phase, item_stage.target_count, item_stage.submitted_count) == (1, 2, 0)

    with django_capture_on_commit_callbacks(execute=True):
        assert lease(ann, stage) is None  # the checker cannot edit ("new" people)
        edits = [(ben, lease(ben, stage)), (cat, lease(cat, stage))]
        assert lease(dan, stage) is None  # two editors
        shown = annotations_shown(edits[0][1])
        assert [row["phase"] for row in shown] == ["check"]
        assert "wrong level" in shown[0]["payload"]["comment"]
        assert "annotator" not in str(shown)
        for person, assignment in edits:
            submit(person, assignment, "keep", f"edited by {person.pk}")
    item_stage.refresh_from_db()
    assert (item_stage.phase, item_stage.target_count) == (2, 3)

    with django_capture_on_commit_callbacks(execute=True):
        assert lease(dan, stage) is None  # only the three who took part vote ("same")
        votes = [(person, lease(person, stage)) for person in (ann, ben, cat)]
        assert all(assignment is not None for _, assignment in votes)
        # The vote phase shows the two edits, labelled, not who wrote them; not the check.
        shown = annotations_shown(votes[0][1])
        assert [(row["phase"], row["label"]) for row in shown] == [("edit", "A"), ("edit", "B")]
        for person, assignment in votes:
            submit(person, assignment, "keep")
    item_stage.refresh_from_db()
    assert item_stage.state == "resolved"
    assert item_stage.resolution.votes == {"keep": 3}  # only the last phase's votes count
    assert item_stage.annotations.count() == 6


def test_a_checker_is_told_there_is_a_vote_waiting(django_capture_on_commit_callbacks):
    """The annotator's progress counts an item they worked on in an earlier phase as work left
    when a later phase may take them again (the page offered no Start button to the checker
    when the vote opened)."""
    from annotation.selectors import annotator_stage_progress

    project = make_project()
    stage = make_verify_stage(project, overlap=3, phases=CHECK_EDIT_VOTE)
    make_items(project, 1)
    ann, ben, cat = (make_member(project) for _ in range(3))
    with django_capture_on_commit_callbacks(execute=True):
        submit(ann, lease(ann, stage), "keep")
    with django_capture_on_commit_callbacks(execute=True):
        for person in (ben, cat):
            submit(person, lease(person, stage), "keep")
    assert ItemStage.objects.get().phase == 2
    assert annotator_stage_progress(ann, stage) == (1, 1)


def test_never_the_items_author():
    project = make_project()
    stage = make_verify_stage(project, overlap=1, eligibility=[{"rule": "not_author"}])
    (item,) = make_items(project, 1)
    alice, bob = make_member(project), make_member(project)
    Item.objects.filter(pk=item.pk).update(author=alice)
    assert lease(alice, stage) is None
    assert lease(bob, stage) is not None


def test_nobody_who_worked_on_the_item_in_another_stage(django_capture_on_commit_callbacks):
    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    label = make_label_stage(
        project, overlap=1, eligibility=[{"rule": "not_in_stage", "stage": "verify"}]
    )
    make_items(project, 1)
    alice, bob = make_member(project), make_member(project)
    with django_capture_on_commit_callbacks(execute=True):
        submit(alice, lease(alice, verify), "keep")
    assert ItemStage.objects.filter(stage=label).exists()
    assert lease(alice, label) is None
    assert lease(bob, label) is not None


def test_only_members_with_the_skill():
    project = make_project()
    stage = make_verify_stage(
        project, overlap=1, eligibility=[{"rule": "skill", "tag": "medicine"}]
    )
    make_items(project, 1)
    alice = make_member(project)
    assert lease(alice, stage) is None
    Membership.objects.filter(user=alice).update(skills="law medicine")
    assert lease(alice, stage) is not None


def test_two_rules_of_one_kind_do_not_clash():
    project = make_project()
    make_verify_stage(project, overlap=1)
    make_label_stage(project, overlap=1, slug="other", name="Other")
    stage = make_label_stage(
        project,
        overlap=1,
        eligibility=[
            {"rule": "skill", "tag": "medicine"},
            {"rule": "skill", "tag": "law"},
        ],
    )
    from annotation.models import Stage

    items = make_items(project, 1)
    services.item_stages_open(items=items, stage=Stage.objects.get(pk=stage.pk))
    alice = make_member(project)
    Membership.objects.filter(user=alice).update(skills="medicine")
    assert lease(alice, stage) is None  # both tags needed
    Membership.objects.filter(user=alice).update(skills="medicine law")
    assert lease(alice, stage) is not None


def test_every_way_into_a_stage_opens_with_the_first_phases_slots(settings, tmp_path):
    """Imports, item creation and routes all open items through services.item_stages_open:
    a phased stage's item stages start with the first phase's slots, not the overlap (the
    import's own PostgreSQL statement used to write the overlap)."""
    import io
    import json

    from imports.services import import_batch_create, import_batch_run

    settings.MEDIA_ROOT = tmp_path
    project = make_project()
    make_verify_stage(project, overlap=3, phases=CHECK_EDIT_VOTE)
    rows = [
        {"id": f"g{n}", "text": f"variant {n}", "group": "pair-1" if n < 3 else "",
         "gold": {"verify": "keep"} if n == 0 else {"verify": None}}
        for n in range(5)
    ]  # fmt: skip
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    batch = import_batch_create(
        project=project,
        user=None,
        fileobj=io.BytesIO(data),
        filename="items.jsonl",
        options={"group_field": "group"},
    )
    import_batch_run(batch_id=batch.pk)
    make_items(project, 2)  # through services.items_create
    stages = ItemStage.objects.filter(item__project=project).select_related("item")
    assert stages.count() == 7
    assert {row.target_count for row in stages} == {1}
    grouped = sorted(
        (row.spread_rank, row.group_size) for row in stages if row.item.group == "pair-1"
    )
    assert grouped == [(0, 3), (1, 3), (2, 3)]
    assert {(row.spread_rank, row.group_size) for row in stages if not row.item.group} == {(0, 1)}
    gold = {row.item.external_id: row.gold for row in stages if row.item.external_id[0] == "g"}
    assert gold == {"g0": "keep", "g1": None, "g2": None, "g3": None, "g4": None}
    assert len({row.random_key for row in stages}) == 7


def test_opening_twice_leaves_the_item_stage_as_it_was():
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    items = make_items(project, 3)
    ItemStage.objects.filter(item=items[0]).update(submitted_count=1)
    assert services.item_stages_open(items=Item.objects.filter(project=project), stage=stage) == 0
    assert ItemStage.objects.get(item=items[0]).submitted_count == 1


def test_practice_first_items_go_only_to_those_who_finished_another_stage(
    django_capture_on_commit_callbacks,
):
    """after_stage: the real stage hands out nothing until the annotator has answered every
    item of the practice stage (others who have are served meanwhile)."""
    from annotation.models import Stage

    project = make_project()
    practice = make_verify_stage(project, overlap=5, slug="practice", name="Practice")
    real = make_label_stage(
        project, overlap=1, eligibility=[{"rule": "after_stage", "stage": "practice"}]
    )
    items = make_items(project, 2)  # opened in the first stage: the practice
    services.item_stages_open(items=items[1:], stage=Stage.objects.get(pk=real.pk))
    ann, ben = make_member(project), make_member(project)
    assert lease(ann, real) is None  # no practice yet
    with django_capture_on_commit_callbacks(execute=True):
        submit(ann, lease(ann, practice), "keep")
    assert lease(ann, real) is None  # one practice item left
    with django_capture_on_commit_callbacks(execute=True):
        submit(ann, lease(ann, practice), "keep")
    assert lease(ben, real) is None
    assert lease(ann, real) is not None


def test_after_stage_names_a_stage_of_the_project():
    from annotation.errors import ApplicationError

    project = make_project()
    with pytest.raises(ApplicationError, match="no stage 'warmup'"):
        make_verify_stage(project, eligibility=[{"rule": "after_stage", "stage": "warmup"}])
