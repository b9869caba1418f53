"""The stage's votes (agreement/votes.py) for imported answers: a named external rater is one
rater across items; answers imported without a rater name (historic ratings released without
rater ids, as ExpliCa's are) are each a rater of their own, on both reading paths (the COPY on
PostgreSQL, the ORM elsewhere) — never one rater answering an item many times, which the
agreement statistics refuse."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.stage_statistics import stage_agreement
from agreement.votes import stage_skips, stage_votes
from ratings import services
from ratings.models import RatingsSetup
from tests.ratings.conftest import csv_text, make_ratings_project, pairs_csv

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("fast", [True, False])
def test_anonymous_imported_answers_are_raters_of_their_own(fast):
    ratings_project = make_ratings_project()
    services.pairs_import(project=ratings_project, content=pairs_csv(), filename="pairs.csv")
    rows = [
        ["p1", "AB", "so", "", "9"],
        ["p1", "AB", "so", "", "8"],
        ["p1", "AB", "because", "", "2"],
        ["p1", "AB", "because", "", "3"],
        ["p1", "AB", "so", "r1", "10"],
        ["p1", "AB", "because", "r1", "1"],
    ]
    services.historic_ratings_import(
        project=ratings_project,
        content=csv_text(["pair_id", "order", "connective", "rater", "rating"], rows),
        filename="old.csv",
    )
    stage = RatingsSetup.objects.get(project=ratings_project).historic_stage
    votes = stage_votes(stage, fast=fast)
    assert len(votes.raters) == 6
    named = [
        rater for rater, value in zip(votes.raters, votes.values, strict=True) if value in (10, 1)
    ]
    assert len(set(named)) == 1  # r1 is one rater on both items
    assert len(np.unique(votes.raters)) == 5  # four anonymous answers, four raters, and r1
    # the statistics accept the table (they refuse a rater answering an item twice)
    assert stage_agreement(votes, n_boot=10, seed=1)


@pytest.mark.parametrize("fast", [True, False])
def test_a_case_reviewed_again_after_its_author_counts_one_vote_per_reviewer(fast):
    """A CausalT5k case sent back to its author (round 1) and reviewed again (round 2) by the
    same reviewer: the current round's review is the vote; with both, the statistics refuse
    the stage (one rater, two votes on one item) and its agreement never refreshed."""
    from agreement.stage_statistics import annotator_quality
    from annotation import services as engine
    from annotation.models import Item
    from review.causalt5k.demo import CASES
    from review.causalt5k.pipeline import causalt5k_project_create, causalt5k_review_open
    from review.meter.demo import drive
    from tests.factories import make_member

    project = causalt5k_project_create(slug="ct5k-rounds", name="CT5k", seed=5)
    case = next(case for case in CASES if case["case_id"] == "T2-W4-SPT-001")
    engine.items_create(
        project=project,
        rows=[{"external_id": case["case_id"], "payload": dict(case, author="")}],
        open_first_stage=False,
    )
    stages = {stage.slug: stage for stage in project.stages.all()}
    reviewer, author = make_member(project), make_member(project)
    causalt5k_review_open(project=project)

    def verdict(name):
        return {"verdict": name, "attacks": ["ambiguous"], "explanation": "Not one reading."}

    drive(stages["review"], [reviewer], lambda i, it, ph: verdict("major"))
    drive(stages["author"], [author], lambda i, it, ph: {"edits": {"claim": "A new claim."}})
    drive(stages["review"], [reviewer], lambda i, it, ph: verdict("remove"))
    assert Item.objects.get(project=project).status == "discarded"

    votes = stage_votes(stages["review"], fast=fast)
    assert len(votes.raters) == 1
    assert votes.categories[int(votes.values[0])] == "remove"
    assert annotator_quality(votes, gold=None, skips=None)  # no longer refused


def test_gold_answers_and_skips_count_in_no_one_s_skip_rate_or_decisions():
    """Silent gold items are never work (annotation/gold.py): the per-annotator table's skip
    rate and decisions (``stage_skips``) count regular items only."""
    from annotation import services as engine
    from annotation.services import next_item
    from tests.annotation.test_gold_queue import gold_stage, is_gold
    from tests.factories import make_member

    project, stage = gold_stage(every=2, regular=6, gold=3, overlap=1)
    person = make_member(project)
    answered = skipped = 0
    while (
        assignment := engine.assignment_next(
            annotator=person, stage=next_item.reached_by(stage, person.pk)
        )
    ) is not None:
        if is_gold(assignment):  # gold items: one skipped, the others answered
            if not skipped:
                engine.assignment_skip(
                    assignment_id=assignment.pk, annotator=person, reason="unsure"
                )
                skipped += 1
                continue
        else:
            answered += 1
        engine.annotation_submit(
            assignment_id=assignment.pk, annotator=person, payload={"value": "keep"}
        )
    assert skipped == 1 and answered == 6
    assert stage_skips(stage) == {person.pk: (0, 6)}
