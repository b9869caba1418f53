"""Stranded items (annotation/stranding.py): who can still take an item — members with the
annotator role, not paused, who have not held it in its round and phase, allowed by the
stage's eligibility rules — against the answers it still needs. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from annotation import api, services
from annotation.models import ItemStage, Role
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


def test_a_stage_with_fewer_annotators_than_it_needs_per_item_strands_every_item():
    project = make_project()
    make_verify_stage(project, overlap=3)
    make_items(project, 3)
    make_member(project), make_member(project)
    make_member(project, Role.REVIEWER)  # not an annotator: does not count
    rows = api.item_stages_stranded(project)
    assert [(row.missing, row.eligible) for row in rows] == [(3, 2)] * 3
    (warning,) = api.stages_stranded(project)
    assert warning.count == 3 and len(warning.items) == 3
    assert warning.words.startswith("Verify: 3 items need more people than can still take them")


def test_enough_people_strand_nothing_and_a_paused_one_does_not_count():
    project = make_project()
    make_verify_stage(project, overlap=2)
    make_items(project, 2)
    make_member(project)
    second = make_member(project)
    assert api.item_stages_stranded(project) == [] and api.stages_stranded(project) == []
    services.membership_set_paused(project=project, user_id=second.pk, paused=True)
    assert len(api.item_stages_stranded(project)) == 2


def test_items_open_to_every_annotator_are_never_stranded():
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 2)
    make_member(project)  # one annotator for two slots: both items stranded
    assert len(api.item_stages_stranded(project)) == 2
    # practice items and checks: every annotator who comes, never a number to reach
    ItemStage.objects.filter(stage=stage).update(target_count=api.EVERYONE)
    assert api.item_stages_stranded(project) == [] and api.stages_stranded(project) == []


def test_eligibility_rules_count_not_authors_and_skills():
    project = make_project()
    make_verify_stage(
        project, overlap=2, eligibility=[{"rule": "not_author"}, {"rule": "skill", "tag": "law"}]
    )
    authored, plain = make_items(project, 2)
    writer, lawyer = make_member(project), make_member(project)
    make_member(project)  # without the skill
    for user in (writer, lawyer):
        membership = user.memberships.get(project=project, role=Role.ANNOTATOR)
        membership.skills = "law"
        membership.save(update_fields=["skills"])
    api.items_author_link(project=project, authors={authored.pk: writer.pk})
    rows = {row.item_id: row for row in api.item_stages_stranded(project)}
    # `other` lacks the skill; the author may not take their own item.
    assert set(rows) == {authored.pk}
    assert (rows[authored.pk].missing, rows[authored.pk].eligible) == (2, 1)


def test_only_the_item_stages_asked_about_and_only_open_ones():
    project = make_project()
    make_verify_stage(project, overlap=2)
    first, second = make_items(project, 2)
    make_member(project)
    ids = ItemStage.objects.filter(item=first).values_list("pk", flat=True)
    assert [row.item_id for row in api.item_stages_stranded(project, item_stage_ids=ids)] == [
        first.pk
    ]
    assert api.item_stages_stranded(project, item_stage_ids=[]) == []
    ItemStage.objects.filter(item=first).update(state=ItemStage.State.ADJUDICATION)
    assert [row.item_id for row in api.item_stages_stranded(project)] == [second.pk]
