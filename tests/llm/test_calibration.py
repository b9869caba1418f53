"""Models against people (llm/calibration.py): the statistics on small hand-computed cases,
without a database, and the selector on a stage built through the engine's services."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest

from llm import calibration
from llm.calibration import (
    calibrate,
    calibration_bins,
    expected_calibration_error,
    human_decisions,
    kappa_bootstrap,
    review_candidates,
    stage_calibration,
)
from tests.llm import calibration_study
from tests.llm.calibration_study import ECE, KAPPA, LABELS, MODEL_VOTES, PEOPLE_VOTES


def long_table(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["item", "rater", "value"])


# --- Pure statistics ----------------------------------------------------------------------------


def test_the_decision_is_the_plurality_and_ties_are_left_out_and_counted():
    people = long_table(
        [
            (1, "a", "x"), (1, "b", "x"), (1, "c", "y"),  # x by 2 of 3
            (2, "a", "x"), (2, "b", "y"),  # tie
            (3, "a", "z"), (3, "b", "z"),  # unanimous
            (4, "a", "y"),  # one person: a decision, unanimous
            (5, "a", "x"), (5, "b", "y"), (5, "c", "z"),  # three-way tie
        ]
    )  # fmt: skip
    decisions, ties = human_decisions(people)
    assert ties == 2
    assert decisions["decision"].to_dict() == {1: "x", 3: "z", 4: "y"}
    assert decisions["n_people"].to_dict() == {1: 3, 3: 2, 4: 1}
    assert decisions["unanimous"].to_dict() == {1: False, 3: True, 4: True}


def test_no_people_no_decision():
    decisions, ties = human_decisions(long_table([]))
    assert decisions.empty and ties == 0


def test_bins_put_inner_edges_in_the_bin_they_open_and_one_in_the_last():
    bins = calibration_bins([0.3, 0.8, 0.8, 1.0, 0.05], [True, True, False, True, False])
    by_bin = {number: entry for number, entry in enumerate(bins) if entry.n}
    assert sorted(by_bin) == [0, 3, 8, 9]
    assert (by_bin[8].n, by_bin[8].accuracy, by_bin[8].confidence) == (2, 0.5, 0.8)
    assert by_bin[9].accuracy == 1.0 and by_bin[0].accuracy == 0.0
    assert sum(entry.n for entry in bins) == 5


def test_ece_weights_each_bins_gap_by_its_share_of_votes():
    confidence = [1.0, 0.8, 0.8, 0.6, 0.6]
    correct = [True, True, False, True, False]
    ece = expected_calibration_error(calibration_bins(confidence, correct))
    assert ece == pytest.approx(ECE)  # 2/5·0.3 + 2/5·0.1
    # A model right exactly as often as it is sure is perfectly calibrated.
    assert expected_calibration_error(
        calibration_bins([0.5, 0.5, 1.0], [True, False, True])
    ) == pytest.approx(0.0)
    assert expected_calibration_error(calibration_bins([], [])) is None


def test_kappa_bootstrap_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(3)
    first = rng.integers(0, 3, 200)
    second = np.where(rng.random(200) < 0.7, first, rng.integers(0, 3, 200))
    low, high, spread = kappa_bootstrap(first, second, 3, seed=1)
    again = kappa_bootstrap(first, second, 3, seed=1)
    assert (low, high, spread) == again
    observed = np.mean(first == second)
    expected = sum(np.mean(first == k) * np.mean(second == k) for k in range(3))
    kappa = (observed - expected) / (1 - expected)
    assert low < kappa < high
    assert 0 < spread < 0.1
    # Perfect agreement on two categories: every defined replicate is 1.
    assert kappa_bootstrap(np.array([0, 1, 0, 1]), np.array([0, 1, 0, 1]), 2)[:2] == (1.0, 1.0)
    assert kappa_bootstrap(np.array([0]), np.array([0]), 2) == (None, None, None)


def test_review_candidates_need_a_confident_model_against_two_or_more_unanimous_people():
    decisions, _ = human_decisions(
        long_table(
            [
                (1, "a", 0),
                (1, "b", 0),  # unanimous, two people
                (2, "a", 0),  # unanimous, one person
                (3, "a", 0),
                (3, "b", 0),
                (3, "c", 1),  # not unanimous
                (4, "a", 2),
                (4, "b", 2),
                (5, "a", 1),
                (5, "b", 1),
            ]
        )  # fmt: skip
    )
    model = pd.DataFrame(
        {"value": [1, 1, 1, 2, 0], "confidence": [0.8, 1.0, 1.0, 1.0, 0.79]},
        index=pd.Index([1, 2, 3, 4, 5], name="item"),
    )
    found = review_candidates(decisions, model, threshold=0.8)
    assert list(found.index) == [1]  # 2: one person; 3: split; 4: agrees; 5: below threshold
    assert found.loc[1, "decision"] == 0 and found.loc[1, "n_people"] == 2


def study_frames() -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    code = {label: number for number, label in enumerate(LABELS)}
    people = long_table(
        [
            (item, rater, code[value])
            for item, votes in enumerate(PEOPLE_VOTES)
            for rater, value in enumerate(votes)
        ]
    )
    model = pd.DataFrame(
        {
            "item": range(len(MODEL_VOTES)),
            "value": [code[value] for value, _ in MODEL_VOTES],
            "confidence": [confidence for _, confidence in MODEL_VOTES],
        }
    )
    return people, {"m": model}


def test_calibrate_matches_the_hand_computed_study():
    people, models = study_frames()
    result = calibrate(people, models, scale="nominal", n_values=3)
    assert result.n_ties == 1 and len(result.decisions) == 5
    (rater,) = result.raters
    assert rater.n_votes == 6 and rater.n_compared == 5
    assert rater.against_people.metric == "cohen_kappa"
    assert rater.against_people.value == pytest.approx(KAPPA)
    assert rater.against_people.ci_method == "bootstrap"
    assert rater.against_people.ci_low < KAPPA < rater.against_people.ci_high
    assert rater.confusion.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 1]]
    assert rater.accuracy == pytest.approx(0.6)
    assert rater.ece == pytest.approx(ECE)
    assert list(rater.review.index) == [4]
    # α of the people, and with the model as a fourth rater: the krippendorff package on the
    # raters × items matrix, built here independently of the selector's long tables.
    reliability = np.array(
        [[LABELS.index(votes[rank]) for votes in PEOPLE_VOTES] for rank in range(3)], dtype=float
    )
    with_model = np.vstack([reliability, [[LABELS.index(v) for v, _ in MODEL_VOTES]]])
    assert result.alpha_people.value == pytest.approx(
        krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal")
    )
    assert rater.alpha_with_model.value == pytest.approx(
        krippendorff.alpha(reliability_data=with_model, level_of_measurement="nominal")
    )
    assert rater.alpha_with_model.ci_low <= rater.alpha_with_model.value


def test_calibrate_ordinal_uses_krippendorff_alpha_with_the_decision():
    people = long_table(
        [
            (item, rater, float(1 + (item + (rater == 2)) % 5))
            for item in range(12)
            for rater in range(3)
        ]
    )
    decisions = [float(1 + item % 5) for item in range(12)]
    model_values = [
        value if item % 4 else min(value + 1, 5.0) for item, value in enumerate(decisions)
    ]
    model = pd.DataFrame({"item": range(12), "value": model_values, "confidence": [1.0] * 12})
    result = calibrate(people, {"m": model}, scale="ordinal")
    (rater,) = result.raters
    assert rater.against_people.metric == "krippendorff_alpha_ordinal"
    pairs = np.array([decisions, model_values])
    assert rater.against_people.value == pytest.approx(
        krippendorff.alpha(
            reliability_data=pairs,
            level_of_measurement="ordinal",
            value_domain=sorted(set(pairs.ravel())),
        )
    )
    assert result.values == [1.0, 2.0, 3.0, 4.0, 5.0]
    # Items 0 and 8 are one step up; item 4 (a 5) cannot go higher.
    assert rater.confusion.sum() == 12 and np.trace(rater.confusion) == 10


def test_a_model_without_decided_items_has_no_kappa_and_no_bins():
    people = long_table([(1, "a", 0), (1, "b", 1)])  # a tie: nothing decided
    model = pd.DataFrame({"item": [1], "value": [0], "confidence": [1.0]})
    (rater,) = calibrate(people, {"m": model}, scale="nominal", n_values=2).raters
    assert rater.n_compared == 0 and rater.against_people.value is None
    assert rater.accuracy is None and rater.ece is None


def test_an_unknown_scale_is_refused():
    with pytest.raises(ValueError, match="scale"):
        calibrate(long_table([]), {}, scale="ratio")


# --- The selector -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_stage_calibration_reads_people_and_the_model_from_the_engine(
    django_capture_on_commit_callbacks,
):
    study = calibration_study.build(django_capture_on_commit_callbacks)
    found = stage_calibration(study.stage)
    assert found is not None
    assert (found.n_items, found.n_decided, found.n_ties) == (6, 5, 1)
    assert found.value_labels == list(LABELS)
    (row,) = found.raters
    assert row.rater_id == study.rater.pk and row.samples == 5
    assert row.result is not None
    assert row.result.against_people.value == pytest.approx(KAPPA)
    assert row.result.ece == pytest.approx(ECE)
    # The model is not one of the people: α of the people is the three people's.
    people, _ = study_frames()
    assert found.alpha_people.value == pytest.approx(
        calibration.stats.krippendorff_alpha(people, level="nominal").value
    )
    (queued,) = found.review
    assert (queued.external_id, queued.model_value, queued.human_value) == (
        "item-4",
        "temporal",
        "causal",
    )
    assert (queued.confidence, queued.n_people) == (0.8, 3)


@pytest.mark.django_db
def test_items_still_open_are_not_read(django_capture_on_commit_callbacks):
    """Only completed items count: while people are at work, nothing of the item is shown."""
    study = calibration_study.build(django_capture_on_commit_callbacks, slug="open")
    from annotation.models import ItemStage

    item_stage = ItemStage.objects.get(stage=study.stage, item__external_id="item-4")
    ItemStage.objects.filter(pk=item_stage.pk).update(state=ItemStage.State.OPEN)
    found = stage_calibration(study.stage)
    assert found is not None and found.review == []
    assert found.n_decided == 4


@pytest.mark.django_db
def test_a_stage_without_model_raters_has_no_calibration(django_capture_on_commit_callbacks):
    study = calibration_study.build(django_capture_on_commit_callbacks, with_model=False)
    assert stage_calibration(study.stage) is None


@pytest.mark.django_db
def test_the_review_queue_is_newest_first(django_capture_on_commit_callbacks):
    study = calibration_study.build(django_capture_on_commit_callbacks, slug="newest")
    from datetime import timedelta

    from django.utils import timezone

    from llm.models import ModelVote

    # Make item 5's disagreement confident too; then date the two votes both ways round.
    votes = ModelVote.objects.filter(rater=study.rater)
    votes.filter(item_stage__item__external_id="item-5").update(confidence=0.9)
    now = timezone.now()
    for newer, older in (("item-5", "item-4"), ("item-4", "item-5")):
        votes.filter(item_stage__item__external_id=newer).update(created_at=now)
        votes.filter(item_stage__item__external_id=older).update(
            created_at=now - timedelta(hours=1)
        )
        found = stage_calibration(study.stage)
        assert found is not None
        assert [row.external_id for row in found.review] == [newer, older]
    header, rows = calibration.review_table(study.stage)
    assert header == calibration.REVIEW_COLUMNS
    assert [row[2] for row in rows] == ["item-4", "item-5"]
    assert rows[0][5:8] == ("temporal", 0.8, "causal")
