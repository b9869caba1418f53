"""Stranded items counted set-based (annotation/stranding.py, a stage without eligibility
rules) against the same count made member by member in Python, and against the rule-by-rule
statement: who held an item stage in its round and phase (any assignment status), paused
members, members without the annotator role, earlier rounds and phases. A stage with rules
(counted over the item stages its witnesses may not take) against the rules applied member by
member in Python, and against the statement that counts every open item stage member by
member. On SQLite and PostgreSQL."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import api, services, stranding
from annotation.models import Assignment, Item, ItemStage, Membership, Role
from annotation.stranding import EXAMPLES
from tests.factories import (
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_verify_stage,
)

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


def _by_hand(project, stage, may_take=None):
    """Member by member, as the module's docstring defines it; ``may_take(user_id, row)`` the
    stage's rules in Python (none: everyone)."""
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
        eligible = len([pk for pk in people - held if may_take is None or may_take(pk, row)])
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


def _every_item_stage_member_by_member(stage):
    """The statement that counts every open item stage of a stage with rules member by member
    (no witnesses): the reference the witnesses' shortcut must agree with, for any rule."""
    statement, params = stranding._stranded_sql(stage, only_ids=False)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return [(pk, int(missing), int(eligible)) for pk, _, _, missing, eligible in cursor]


def _random_holdings(chooser, stage, people):
    rows = list(ItemStage.objects.filter(stage=stage).order_by("pk"))
    for row in rows:
        ItemStage.objects.filter(pk=row.pk).update(target_count=chooser.choice([2, 2, 3, 5]))
        for user in chooser.sample(people, chooser.randint(0, 3)):
            _hold(row, user, chooser.choice(list(Assignment.Status)[1:]))
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_witnesses_find_every_stranded_item_of_a_stage_with_rules(seed):
    """Skill tags and authors drawn at random, with random holdings: the stage's stranded
    items found through the witnesses are exactly those counted member by member in Python,
    and those of the statement over every open item stage."""
    chooser = random.Random(seed)
    project = make_project()
    stage = make_verify_stage(project, overlap=2)
    make_items(project, 30)
    people = [make_member(project) for _ in range(7)]
    services.membership_set_paused(project=project, user_id=people[-1].pk, paused=True)
    # Three with the tag at least, so that some items can be answered.
    skilled = {user.pk for user in people[:3]} | {
        user.pk for user in people[3:] if chooser.random() < 0.5
    }
    for user in people:
        Membership.objects.filter(project=project, user=user).update(
            skills="medicine law" if user.pk in skilled else "law"
        )
    authors = {}
    for item in Item.objects.filter(project=project):
        author = chooser.choice([None, *people])
        Item.objects.filter(pk=item.pk).update(author=author)
        authors[item.pk] = author.pk if author else None
    stage.eligibility = [{"rule": "not_author"}, {"rule": "skill", "tag": "medicine"}]
    stage.save(update_fields=["eligibility"])
    rows = _random_holdings(chooser, stage, people)

    def may_take(user_id, row):
        return user_id in skilled and authors[row.item_id] != user_id

    expected = _by_hand(project, stage, may_take)
    found = api.item_stages_stranded(project)
    assert [(r.item_stage_id, r.missing, r.eligible) for r in found] == expected
    assert expected == _every_item_stage_member_by_member(stage)
    assert 0 < len(expected) < len(rows)  # the draw strands some, and leaves some
    (warning,) = api.stages_stranded(project)
    assert warning.count == len(expected)
    assert [item.item_stage_id for item in warning.items] == [pk for pk, _, _ in expected][
        :EXAMPLES
    ]


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_witnesses_with_a_blind_rule_agree_with_the_statement_over_every_item(seed):
    """A blind stage after another one that random members worked in: the shortcut and the
    statement over every open item stage agree (the rule's own SQL, whatever it says)."""
    chooser = random.Random(seed)
    project = make_project()
    first = make_verify_stage(project, overlap=3)
    blind = make_label_stage(project, overlap=2, eligibility=[{"rule": "blind"}])
    make_items(project, 24)
    people = [make_member(project) for _ in range(6)]
    items = Item.objects.filter(project=project)
    services.item_stages_open(items=items, stage=blind)
    for earlier in ItemStage.objects.filter(stage=first).order_by("pk"):
        for user in chooser.sample(people, chooser.randint(0, 4)):
            _hold(earlier, user, Assignment.Status.SUBMITTED)
    _random_holdings(chooser, blind, people)
    expected = _every_item_stage_member_by_member(blind)
    found = [(r.item_stage_id, r.missing, r.eligible) for r in api.item_stages_stranded(project)]
    in_blind = set(ItemStage.objects.filter(stage=blind).values_list("pk", flat=True))
    assert [row for row in found if row[0] in in_blind] == expected
    assert expected  # the draw strands some


def test_a_skill_nobody_has_strands_every_item_and_few_members_make_every_item_a_candidate():
    project = make_project()
    stage = make_verify_stage(project, overlap=3, eligibility=[{"rule": "skill", "tag": "x"}])
    make_items(project, 5)
    first = make_member(project)
    (warning,) = api.stages_stranded(project)
    assert warning.count == 5 and {item.eligible for item in warning.items} == {0}
    # A member with the skill: still one too few for three answers (P < T: W = P, the one
    # eligible for most of the sample first).
    someone = make_member(project)
    Membership.objects.filter(project=project, user=someone).update(skills="x")
    stranded = api.item_stages_stranded(project)
    assert [(r.missing, r.eligible) for r in stranded] == [(3, 1)] * 5
    assert stranding._witnesses(stage) == [someone.pk, first.pk]
