"""Adaptive overlap under many annotators at once on real PostgreSQL: every item ends with
exactly the annotations the sequential rule asks for (two when the first two agree, a third
only on disagreement, more while unsure, never past the cap), no slot handed out twice, none
lost, counters equal to the rows."""

from __future__ import annotations

import random
import threading
from collections import defaultdict

import pytest

from annotation import adaptive, services
from annotation.access import access_stage_for_annotator
from annotation.models import SUBMISSION_ORDER, Annotation, Assignment, ItemStage
from annotation.resolution import decide
from tests.factories import make_items, make_label_stage, make_member, make_project
from tests.threads import run_annotators

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ANNOTATORS = 16
ITEMS = 60
START, CAP, TARGET = 2, 5, 0.85
OPTIONS = {"confidence": TARGET}


def answers_wanted(votes: list[str]) -> int:
    """How many answers the adaptive rule wants for these votes, in their order."""
    for count in range(START, CAP + 1):
        decision = decide(votes[:count], policy="majority", tie_policy="extra_annotation")
        if decision.needs_more:
            continue
        question = adaptive.ConfidenceQuestion(0, decision.value, decision.votes, 2)
        if adaptive.shortfall(question, OPTIONS) is None:
            return count
    return CAP


def test_adaptive_overlap_holds_its_slots_with_16_annotators_at_once(postgres):
    project = make_project()
    stage = make_label_stage(
        project,
        overlap=START,
        choices=("a", "b"),
        tie_policy="extra_annotation",
        policy_options=OPTIONS,
        max_overlap=CAP,
    )
    make_items(project, ITEMS)
    people = [make_member(project) for _ in range(ANNOTATORS)]
    # Each item leans to "a" by its own amount: some settle at two, others go to the cap.
    lean = {index: random.Random(index).random() for index in range(ITEMS)}
    barrier = threading.Barrier(ANNOTATORS)

    def annotator_loop(user, seed: int) -> None:
        rng = random.Random(seed)
        barrier.wait()
        for _ in range(ITEMS * CAP):  # a bound, never reached when all is well
            access = access_stage_for_annotator(user=user, stage_id=stage.pk)
            assignment = services.assignment_next(annotator=user, stage=access)
            if assignment is None:
                # An item being resolved may reopen with one more slot: stop only when
                # nothing is left that this annotator has not held.
                waiting = (
                    ItemStage.objects.filter(
                        stage=stage,
                        state__in=[ItemStage.State.OPEN, ItemStage.State.RESOLVING],
                    )
                    .exclude(assignments__annotator=user)
                    .exists()
                )
                if not waiting:
                    return
                continue
            if rng.random() < 0.05:
                services.assignment_skip(
                    assignment_id=assignment.pk, annotator=user, reason="not sure"
                )
                continue
            index = int(assignment.item_stage.item.external_id.split("-")[1])
            value = "a" if rng.random() < lean[index] else "b"
            for _ in range(2 if rng.random() < 0.25 else 1):  # retried submits
                services.annotation_submit(
                    assignment_id=assignment.pk, annotator=user, payload={"value": value}
                )

    run_annotators(annotator_loop, people, timeout=300)

    votes: dict[int, list[str]] = defaultdict(list)
    for item_stage_id, payload in (
        Annotation.objects.filter(item_stage__stage=stage)
        .order_by(*SUBMISSION_ORDER)
        .values_list("item_stage_id", "payload")
    ):
        votes[item_stage_id].append(payload["value"])
    counts = defaultdict(int)
    for item_stage in ItemStage.objects.filter(stage=stage).select_related("resolution"):
        given = votes[item_stage.pk]
        wanted = answers_wanted(given)
        # exactly what the rule wants: no over-assignment, no slot lost
        assert len(given) == wanted, (item_stage.pk, given)
        assert item_stage.submitted_count == len(given) == item_stage.target_count
        assert item_stage.leased_count == 0
        assert item_stage.state == ItemStage.State.RESOLVED
        # a third annotator only on disagreement
        assert (len(given) > 2) == (given[0] != given[1])
        counts[len(given)] += 1
    assert len(votes) == ITEMS
    assert not Assignment.objects.filter(status=Assignment.Status.ACTIVE).exists()
    # the run exercised the rule: settled at two, a third asked, and more than three
    assert counts[2] and counts[3] + counts[4] + counts[5] and counts[4] + counts[5]
