"""The database's per-item vote counts (agreement/vote_counts.py) hold exactly the votes
``stage_votes`` reads, and the figures from them equal the figures from every vote: on every
demo project's stages (categorical and numeric kinds, phases, imported raters), over the
released items and over all items."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.stage_statistics import (
    VoteCounts,
    stage_agreement,
    stage_agreement_counts,
)
from agreement.vote_counts import stage_vote_counts
from agreement.votes import stage_votes
from annotation.fixtures.demo_users import DEMO_ROLES
from annotation.kinds import get_kind
from annotation.management.commands.seed_demo import demo_projects_seed
from annotation.models import Item, ItemStage, Stage
from ratings import services as ratings_services
from ratings.models import RatingsSetup
from tests.factories import make_user
from tests.ratings.conftest import csv_text, make_ratings_project, pairs_csv

pytestmark = pytest.mark.django_db

RELEASED = (Item.Status.ACCEPTED, Item.Status.REJECTED)
EVERY_STATUS = tuple(Item.Status.values)


def expected_counts(stage: Stage, statuses) -> VoteCounts:
    ids = np.fromiter(
        ItemStage.objects.filter(stage=stage, item__status__in=list(statuses)).values_list(
            "pk", flat=True
        ),
        dtype=np.int64,
    )
    return VoteCounts.from_votes(stage_votes(stage).only_items(ids))


def rows_of(counts: VoteCounts) -> list[tuple[tuple[int, ...], int]]:
    return sorted(
        (tuple(int(n) for n in pattern), int(frequency))
        for pattern, frequency in zip(counts.patterns, counts.frequency, strict=True)
    )


def assert_same_counts(stage: Stage, statuses) -> int:
    got = stage_vote_counts(stage, item_statuses=statuses)
    expected = expected_counts(stage, statuses)
    assert got.domain == expected.domain, stage.slug
    assert got.categories == expected.categories, stage.slug
    assert rows_of(got) == rows_of(expected), stage.slug
    assert got.n_raters == expected.n_raters, stage.slug
    if expected.n_votes:
        # The figures equal stage_agreement over the same votes (float sums aside).
        ids = np.fromiter(
            ItemStage.objects.filter(stage=stage, item__status__in=list(statuses)).values_list(
                "pk", flat=True
            ),
            dtype=np.int64,
        )
        from_votes = stage_agreement(stage_votes(stage).only_items(ids), n_boot=100)
        from_counts = stage_agreement_counts(got, n_boot=100)
        for want, have in zip(from_votes, from_counts, strict=True):
            assert (have.metric, have.n_items, have.n_raters, have.n_annotations) == (
                want.metric, want.n_items, want.n_raters, want.n_annotations
            ), stage.slug  # fmt: skip
            for name in ("value", "ci_low", "ci_high"):
                if getattr(want, name) is None:
                    assert getattr(have, name) is None, (stage.slug, want.metric, name)
                else:
                    assert getattr(have, name) == pytest.approx(
                        getattr(want, name), rel=1e-9, abs=1e-12
                    ), (stage.slug, want.metric, name)
    return expected.n_votes


def test_every_demo_stage_counts_the_votes_stage_votes_reads(django_capture_on_commit_callbacks):
    users = {name: make_user(f"counts-{name}") for name in DEMO_ROLES}
    with django_capture_on_commit_callbacks(execute=True):
        demo_projects_seed(users)
    checked = {"categorical": 0, "numeric": 0}
    for stage in Stage.objects.select_related("project").order_by("project__slug", "position"):
        if get_kind(stage.kind).agreement.scale is None:
            continue
        for statuses in (RELEASED, EVERY_STATUS):
            if assert_same_counts(stage, statuses):
                numeric = stage_vote_counts(stage, item_statuses=statuses).numeric
                checked["numeric" if numeric else "categorical"] += 1
    assert checked["categorical"] >= 2 and checked["numeric"] >= 1, checked


def test_imported_raters_named_and_anonymous_count_as_stage_votes_counts_them():
    ratings_project = make_ratings_project()
    ratings_services.pairs_import(
        project=ratings_project, content=pairs_csv(), filename="pairs.csv"
    )
    rows = [
        ["p1", "AB", "so", "", "9"],
        ["p1", "AB", "so", "", "8"],
        ["p1", "AB", "because", "", "2"],
        ["p1", "AB", "because", "r1", "1"],
        ["p1", "AB", "so", "r1", "10"],
        ["p1", "AB", "so", "r2", "9"],
    ]
    ratings_services.historic_ratings_import(
        project=ratings_project,
        content=csv_text(["pair_id", "order", "connective", "rater", "rating"], rows),
        filename="old.csv",
    )
    stage = RatingsSetup.objects.get(project=ratings_project).historic_stage
    counts = stage_vote_counts(stage, item_statuses=EVERY_STATUS)
    assert counts.numeric and counts.n_votes == 6
    assert counts.n_raters == 5  # three anonymous answers, r1 and r2
    assert counts.domain == (1.0, 2.0, 8.0, 9.0, 10.0)
    assert_same_counts(stage, EVERY_STATUS)
