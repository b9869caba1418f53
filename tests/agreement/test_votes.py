"""The stage's votes (agreement/votes.py) for imported answers: a named external rater is one
rater across items; answers imported without a rater name (historic ratings released without
rater ids, as ExpliCa's are) are each a rater of their own, on both reading paths (the COPY on
PostgreSQL, the ORM elsewhere) — never one rater answering an item many times, which the
agreement statistics refuse."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.stage_statistics import stage_agreement
from agreement.votes import stage_votes
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
