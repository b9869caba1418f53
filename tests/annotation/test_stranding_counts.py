"""Stranded items counted set-based (annotation/stranding.py, a stage without eligibility
rules) against the same count made member by member in Python, and against the rule-by-rule
statement: who held an item stage in its round and phase (any assignment status), paused
members, members without the annotator role, earlier rounds and phases. On SQLite and
PostgreSQL."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import api, services
from annotation.models import Assignment, ItemStage, Membership, Role
from annotation.stranding import EXAMPLES
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


def _hold(item_stage, user, status, *, round_=None, phase=None):
    Assignment.objects.create(
        item_stage=item_stage,
        stage_id=item_stage.stage_id,
        annotator=user,
        status=status,
        expires_at=timezone.now() + timedelta(hours=1),
        round=item_stage.round if round_ is None else round_,
        phase=item_stage.phase if phase is None else phase,
    )


def _by_hand(project, stage):
    """Member by member, as the module's docstring defines it (no rules)."""
    people = set(
        Membership.objects.filter(
            project=project, role=Role.ANNOTATOR, is_paused=False
        ).values_list("user_id", flat=True)
    )
    found = []
    for row in ItemStage.objects.filter(stage=stage, state=ItemStage.State.OPEN).order_by("pk"):
        missing = row.target_count - row.submitted_count - row.leased_count
        if missing <= 0 or row.target_count >= api.EVERYONE:
            continue
        held = set(
            Assignment.objects.filter(item_stage=row, round=row.round, phase=row.phase).values_list(
                "annotator_id", flat=True
            )
        )
        eligible = len(people - held)
        if eligible < missing:
            found.append((row.pk, missing, eligible))
    return found


@pytest.fixture
def crowded():
    """Four annotators (one paused), a reviewer, six items needing three answers each, held
    in every way an item stage can be held."""
    project = make_project()
    stage = make_verify_stage(project, overlap=3)
    make_items(project, 6)
    a, b, c, d = (make_member(project) for _ in range(4))
    reviewer = make_member(project, Role.REVIEWER)
    services.membership_set_paused(project=project, user_id=d.pk, paused=True)
    rows = list(ItemStage.objects.filter(stage=stage).order_by("pk"))
    _hold(rows[0], a, Assignment.Status.SKIPPED)  # 3 people left, 3 needed
    _hold(rows[1], a, Assignment.Status.SKIPPED)
    _hold(rows[1], b, Assignment.Status.EXPIRED)  # 1 left, 3 needed
    _hold(rows[2], a, Assignment.Status.SKIPPED, round_=rows[2].round + 1)  # another round
    _hold(rows[3], reviewer, Assignment.Status.SKIPPED)  # not an annotator: no one fewer
    _hold(rows[3], d, Assignment.Status.SKIPPED)  # paused: not counted anyway
    _hold(rows[4], c, Assignment.Status.REVOKED)
    ItemStage.objects.filter(pk=rows[5].pk).update(target_count=1)  # 1 needed, 3 left
    return project, stage, rows


def test_set_based_count_matches_the_member_by_member_count(crowded):
    project, stage, rows = crowded
    expected = _by_hand(project, stage)
    assert [row.item_stage_id for row in api.item_stages_stranded(project)] == [
        pk for pk, _, _ in expected
    ]
    assert [(r.missing, r.eligible) for r in api.item_stages_stranded(project)] == [
        (missing, eligible) for _, missing, eligible in expected
    ]
    # Three annotators not paused, three answers needed: only the held ones are stranded.
    assert {pk for pk, _, _ in expected} == {rows[0].pk, rows[1].pk, rows[4].pk}
    (warning,) = api.stages_stranded(project)
    assert warning.count == 3 and [item.item_stage_id for item in warning.items] == [
        rows[0].pk,
        rows[1].pk,
        rows[4].pk,
    ]
    asked = api.item_stages_stranded(project, item_stage_ids=[rows[1].pk, rows[5].pk])
    assert [(row.item_stage_id, row.missing, row.eligible) for row in asked] == [(rows[1].pk, 3, 1)]


def test_set_based_count_matches_the_statement_with_rules(crowded):
    project, stage, _ = crowded
    without_rules = [
        (row.item_stage_id, row.missing, row.eligible) for row in api.item_stages_stranded(project)
    ]
    # A rule every member passes (nobody authored an item) takes the rule-by-rule statement.
    stage.eligibility = [{"rule": "not_author"}]
    stage.save(update_fields=["eligibility"])
    with_rules = [
        (row.item_stage_id, row.missing, row.eligible) for row in api.item_stages_stranded(project)
    ]
    assert with_rules == without_rules and len(with_rules) == 3


def test_the_warning_counts_every_stranded_item_but_lists_the_first_few():
    project = make_project()
    make_verify_stage(project, overlap=2)
    make_items(project, EXAMPLES + 5)
    make_member(project)
    (warning,) = api.stages_stranded(project)
    assert warning.count == EXAMPLES + 5 and len(warning.items) == EXAMPLES
    ordered = [item.item_stage_id for item in warning.items]
    assert ordered == sorted(ordered)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_looking_only_at_what_the_fewest_holders_held_finds_every_stranded_item(seed):
    """More members than answers needed: the statement starts from a few members'
    assignments (annotation/stranding.py); random holdings, checked member by member."""
    chooser = random.Random(seed)
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 24)
    people = [make_member(project) for _ in range(6)]
    rows = list(ItemStage.objects.filter(stage=stage).order_by("pk"))
    for row in rows:
        target = chooser.choice([2, 2, 3, 5])
        ItemStage.objects.filter(pk=row.pk).update(target_count=target)
        for user in chooser.sample(people, chooser.randint(0, 6)):
            # (one active lease per annotator and stage: assignment_one_active_per_stage)
            _hold(row, user, chooser.choice(list(Assignment.Status)[1:]))
    expected = _by_hand(project, stage)
    found = api.item_stages_stranded(project)
    assert [(r.item_stage_id, r.missing, r.eligible) for r in found] == expected
    assert expected  # the draw strands some, and leaves some
    assert len(expected) < len(rows)
    warnings = api.stages_stranded(project)
    assert [w.count for w in warnings] == [len(expected)]
