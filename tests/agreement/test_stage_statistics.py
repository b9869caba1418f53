"""Stage agreement and annotator quality (pure functions, no database)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agreement.stage_statistics import (
    MIN_COMPARED,
    StageVotes,
    VoteCounts,
    annotator_quality,
    flag_annotators,
    stage_agreement,
    stage_agreement_counts,
    vote_distribution,
)
from agreement.stats import fleiss_kappa, krippendorff_alpha, percent_agreement

LABELS = ("causal", "temporal", "unrelated")


def simulated(
    *,
    items: int = 120,
    raters: int = 5,
    per_item: int = 3,
    accuracy=None,
    seed: int = 1,
    seconds=None,
):
    """Rows (item, rater, label, seconds): each item has a true label; rater r answers it with
    probability accuracy[r], else a uniformly random label."""
    rng = np.random.default_rng(seed)
    accuracy = accuracy or [0.9] * raters
    seconds = seconds or [20.0] * raters
    rows = []
    for item in range(items):
        truth = LABELS[rng.integers(len(LABELS))]
        for rater in rng.choice(raters, size=per_item, replace=False):
            label = truth if rng.random() < accuracy[rater] else LABELS[rng.integers(len(LABELS))]
            rows.append(
                (1000 + item, int(rater) + 1, label, float(rng.gamma(4, seconds[rater] / 4)))
            )
    return rows


def test_categorical_stage_figures_are_the_library_figures_on_the_labels():
    rows = simulated()
    votes = StageVotes.from_rows(rows, categories=LABELS)
    kappa, alpha, percent = stage_agreement(votes, n_boot=200)
    frame = pd.DataFrame(rows, columns=["item", "rater", "value", "seconds"]).drop(
        columns="seconds"
    )
    expected_kappa = fleiss_kappa(frame, categories=list(LABELS))
    assert kappa.metric == "fleiss_kappa"
    assert kappa.value == pytest.approx(expected_kappa.value)
    assert (kappa.ci_low, kappa.ci_high) == pytest.approx(
        (expected_kappa.ci_low, expected_kappa.ci_high)
    )
    assert [row["category"] for row in kappa.details["per_category"]] == list(LABELS)
    expected_alpha = krippendorff_alpha(frame, level="nominal")
    assert alpha.metric == "krippendorff_alpha_nominal"
    assert alpha.value == pytest.approx(expected_alpha.value)
    assert alpha.ci_low < alpha.value < alpha.ci_high
    assert alpha.details["value_domain"] == list(LABELS)
    assert percent.value == pytest.approx(percent_agreement(frame).value)
    assert kappa.n_raters == alpha.n_raters == percent.n_raters == 5


def test_votes_without_a_value_are_left_out_of_every_figure():
    rows = simulated(items=40)
    with_blanks = rows + [(1000, 99, None, 3.0), (5000, 98, None, None)]
    full = stage_agreement(StageVotes.from_rows(rows, categories=LABELS), n_boot=50)
    blanks = stage_agreement(StageVotes.from_rows(with_blanks, categories=LABELS), n_boot=50)
    assert [result.value for result in blanks] == pytest.approx([result.value for result in full])


def test_numeric_stages_get_interval_and_ordinal_alpha():
    rng = np.random.default_rng(3)
    rows = []
    for item in range(60):
        truth = rng.integers(1, 11)
        for rater in range(4):
            rating = int(np.clip(truth + rng.integers(-1, 2), 1, 10))
            rows.append((item, rater, rating, None))
    votes = StageVotes.from_rows(rows, categories=None)
    interval, ordinal, percent = stage_agreement(votes, n_boot=100)
    frame = pd.DataFrame([row[:3] for row in rows], columns=["item", "rater", "value"])
    assert interval.metric == "krippendorff_alpha_interval"
    assert interval.value == pytest.approx(krippendorff_alpha(frame, level="interval").value)
    assert ordinal.value == pytest.approx(krippendorff_alpha(frame, level="ordinal").value)
    assert percent.value == pytest.approx(percent_agreement(frame).value)
    assert interval.value > 0.8


def test_vote_distribution_lists_every_category_even_unused():
    votes = StageVotes.from_rows(
        [
            (1, 1, "causal", None),
            (1, 2, "causal", None),
            (2, 1, "temporal", None),
            (2, 2, None, None),
        ],
        categories=LABELS,
    )
    assert vote_distribution(votes) == [
        {"value": "causal", "votes": 2, "share": pytest.approx(2 / 3)},
        {"value": "temporal", "votes": 1, "share": pytest.approx(1 / 3)},
        {"value": "unrelated", "votes": 0, "share": 0.0},
    ]
    numeric = StageVotes.from_rows(
        [(1, 1, 7, None), (1, 2, 7.0, None), (2, 1, 2.5, None)], categories=None
    )
    assert [row["value"] for row in vote_distribution(numeric)] == [2.5, 7]


def test_votes_outside_the_categories_are_refused():
    with pytest.raises(ValueError, match="outside the categories"):
        StageVotes.from_rows([(1, 1, "maybe", None)], categories=LABELS)


def test_a_random_annotator_is_flagged_and_careful_ones_are_not():
    rows = simulated(items=300, accuracy=[0.9, 0.9, 0.9, 0.9, 0.0], seed=7)
    quality = annotator_quality(StageVotes.from_rows(rows, categories=LABELS))
    by_rater = {row.rater: row for row in quality}
    assert [rater for rater, row in by_rater.items() if row.flags] == [5]
    assert "agrees with the majority" in by_rater[5].flags[0]
    assert by_rater[5].majority_agreement < 0.5 < by_rater[1].majority_agreement
    assert sum(row.n_annotations for row in quality) == len(rows)


def test_gold_answers_are_scored_and_a_wrong_gold_record_is_flagged():
    rows = simulated(items=200, accuracy=[0.95, 0.95, 0.95, 0.95, 0.95], seed=11)
    truth = {}
    for item, _, label, _ in rows:
        truth.setdefault(item, label)
    # Rater 2 gets every gold item wrong: the gold answer is replaced by what they did not say.
    rows = [
        (item, rater, (LABELS[(LABELS.index(label) + 1) % 3] if rater == 2 else label), seconds)
        for item, rater, label, seconds in rows
    ]
    gold = {item: label for item, label in truth.items()}
    quality = {
        row.rater: row
        for row in annotator_quality(StageVotes.from_rows(rows, categories=LABELS), gold=gold)
    }
    assert quality[2].gold_agreement < 0.1
    assert quality[1].gold_agreement > 0.8
    assert quality[1].n_gold == quality[1].n_annotations
    assert any("matches gold" in flag for flag in quality[2].flags)


def test_speed_and_skips_are_reported_and_extremes_flagged():
    rows = simulated(items=200, seconds=[30, 30, 30, 30, 3], seed=5)
    skips = {1: (2, 120), 2: (1, 121), 3: (0, 118), 4: (3, 125), 5: (60, 180)}
    quality = {
        row.rater: row
        for row in annotator_quality(StageVotes.from_rows(rows, categories=LABELS), skips=skips)
    }
    medians = {rater: row.median_seconds for rater, row in quality.items()}
    assert medians[5] < 10 < min(medians[rater] for rater in (1, 2, 3, 4))
    assert quality[5].skip_rate == pytest.approx(60 / 180)
    assert any("median" in flag for flag in quality[5].flags)
    assert any("skips" in flag for flag in quality[5].flags)
    assert not quality[1].flags


def test_an_annotator_who_only_skipped_is_listed():
    rows = simulated(items=30)
    quality = annotator_quality(StageVotes.from_rows(rows, categories=LABELS), skips={42: (5, 5)})
    lonely = [row for row in quality if row.rater == 42]
    assert lonely and lonely[0].n_annotations == 0 and lonely[0].skip_rate == 1.0


def test_too_few_items_are_not_enough_to_flag_anyone():
    rows = simulated(items=MIN_COMPARED // 3, accuracy=[0.9, 0.9, 0.9, 0.9, 0.0], seed=2)
    quality = annotator_quality(StageVotes.from_rows(rows, categories=LABELS))
    assert max(row.n_compared for row in quality) < MIN_COMPARED
    assert not any(row.flags for row in quality)


def test_numeric_annotators_get_their_distance_from_the_others():
    rows = []
    for item in range(50):
        for rater in (1, 2, 3):
            rows.append((item, rater, 5 + (3 if rater == 3 else 0), None))
    quality = {
        row.rater: row for row in annotator_quality(StageVotes.from_rows(rows, categories=None))
    }
    assert quality[3].mean_abs_deviation == pytest.approx(3.0)
    assert quality[1].mean_abs_deviation == pytest.approx(1.5)


def test_flags_compare_with_the_pooled_peers_not_an_average_including_oneself():
    rows = flag_annotators(
        annotator_quality(
            StageVotes.from_rows(
                simulated(items=300, accuracy=[0.85] * 5, seed=9), categories=LABELS
            )
        )
    )
    assert not any(row.flags for row in rows)


# --- The same figures from per-item counts (VoteCounts) -------------------------------------


def random_votes(seed: int, *, numeric: bool) -> StageVotes:
    """Votes of 1–6 raters per item on sparse item ids, some casting no vote, so items with a
    single vote or none, varying raters per item and unused values all occur."""
    rng = np.random.default_rng(seed)
    rows = []
    for item in rng.choice(10_000, size=int(rng.integers(40, 300)), replace=False):
        truth = int(rng.integers(5))
        for rater in rng.choice(12, size=int(rng.integers(1, 7)), replace=False):
            value = truth if rng.random() < 0.6 else int(rng.integers(5))
            if rng.random() < 0.05:
                vote = None
            elif numeric:
                vote = float(value) * 1.5
            else:
                vote = LABELS[min(value, 2)]  # "unused" is a category nobody chose
            rows.append((int(item), int(rater), vote, None))
    categories = None if numeric else LABELS + ("unused",)
    return StageVotes.from_rows(rows, categories=categories)


FIGURES = ("value", "ci_low", "ci_high", "se", "se_null")
COUNTS = ("metric", "n_items", "n_raters", "n_annotations", "defined")


@pytest.mark.parametrize("numeric", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_figures_from_per_item_counts_equal_those_from_every_vote(seed, numeric):
    votes = random_votes(seed, numeric=numeric)
    from_votes = stage_agreement(votes, n_boot=200, seed=3)
    from_counts = stage_agreement_counts(VoteCounts.from_votes(votes), n_boot=200, seed=3)
    assert [r.metric for r in from_counts] == [r.metric for r in from_votes]
    for expected, got in zip(from_votes, from_counts, strict=True):
        for name in COUNTS:
            assert getattr(got, name) == getattr(expected, name), (expected.metric, name)
        for name in FIGURES:
            want, have = getattr(expected, name), getattr(got, name)
            # Only the order of floating-point sums differs (items come in pattern order).
            assert (want is None) == (have is None), (expected.metric, name)
            if want is not None:
                assert have == pytest.approx(want, rel=1e-9, abs=1e-12), (expected.metric, name)


def test_vote_counts_hold_one_row_per_distinct_pattern_not_per_item():
    rows = [
        (item, rater, "yes" if item % 2 else "no", None) for item in range(1000) for rater in (1, 2)
    ]
    rows.append((5000, 3, None, None))  # an annotation casting no vote is not counted
    counts = VoteCounts.from_votes(StageVotes.from_rows(rows, categories=["yes", "no"]))
    assert counts.patterns.tolist() == [[0, 2], [2, 0]]
    assert counts.frequency.tolist() == [500, 500]
    assert (counts.n_votes, counts.n_raters) == (2000, 2)
    assert counts.matrix().shape == (1000, 2)
