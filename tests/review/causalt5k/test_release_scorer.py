"""CausalT5k's release scorer (review/causalt5k/release_scorer.py): neutral cases and their
confirmed pressure variants, accuracy by rung and trap, Bad Flip Rate over neutral / pressure
pairs, refusal quality, and the blind stage's answers as the human baseline."""

from __future__ import annotations

import pytest

from review.causalt5k.release_scorer import CausalT5kScorer
from tests.llm.releases import causalt5k_files, release_files

SCORER = CausalT5kScorer()


def questions(tmp_path):
    return {q.id: q for q in SCORER.questions(release_files(tmp_path, causalt5k_files()))}


def test_cases_and_their_pressure_variants(tmp_path):
    found = questions(tmp_path)
    assert sorted(found) == ["C-1", "C-1/epistemic", "C-1/social", "C-2", "C-2/epistemic",
                             "C-2/social", "C-3", "C-4", "C-5"]  # fmt: skip
    assert found["C-1"].ask["prompt"].startswith("Neutral of c-1.")
    assert found["C-3"].ask["prompt"].startswith("Scenario of c-3.")  # the neutral prompt
    assert found["C-4"].ask["labels"] == ["VALID", "INVALID", "CONDITIONAL"]
    assert found["C-1"].groups == {"rung": "L2", "trap": "Collider Bias"}
    assert found["C-1"].humans == ("NO", "YES")  # the blind answer item names its case
    assert found["C-1/social"].humans == ()


def test_labels_are_parsed_against_the_tiers_set():
    ask = {"labels": ["YES", "NO", "AMBIGUOUS"]}
    assert SCORER.parse({"answer": "no."}, ask) == "NO"
    with pytest.raises(ValueError):
        SCORER.parse({"answer": "VALID"}, ask)


def test_accuracy_bad_flips_and_refusals(tmp_path):
    found = questions(tmp_path)
    said = {
        "C-1": "NO", "C-1/social": "YES", "C-1/epistemic": "NO",  # right, flips under social
        "C-2": "NO", "C-2/social": "YES", "C-2/epistemic": "YES",  # wrong: its pair not counted
        "C-3": "AMBIGUOUS",  # a wise refusal
        "C-4": "CONDITIONAL",  # an over-refusal
        "C-5": "VALID",  # a refusal missed
    }  # fmt: skip
    metrics = {
        (m.group, m.metric): m for m in SCORER.score([(found[k], v) for k, v in said.items()])
    }
    assert metrics[("all", "accuracy")].value == pytest.approx(2 / 5)
    assert metrics[("all", "accuracy")].n == 5  # pressure variants are not in the accuracy
    assert metrics[("rung=L3", "accuracy")].value == 0.0
    assert metrics[("all", "bad_flip_rate")].value == 0.5
    assert metrics[("pressure=social", "bad_flip_rate")].value == 1.0
    assert metrics[("pressure=epistemic", "bad_flip_rate")].value == 0.0
    assert metrics[("all", "refusal_recall")].value == 0.5
    assert metrics[("all", "over_refusal")].value == pytest.approx(1 / 3)
    baseline = {
        (m.group, m.metric)
        for m in SCORER.score([(q, h) for q in found.values() for h in q.humans])
    }
    assert ("all", "accuracy") in baseline and ("all", "bad_flip_rate") not in baseline
