"""METER's release scorer (review/meter/release_scorer.py): questions as the baseline stage
shows them, letters parsed to option indices, accuracy by level, where wrong answers went, and
the baseline stage's answers as people's."""

from __future__ import annotations

import pytest

from review.meter.release_scorer import MeterScorer
from tests.llm.releases import meter_files, release_files

SCORER = MeterScorer()


def test_questions_show_the_context_question_and_options_only(tmp_path):
    first, second = SCORER.questions(release_files(tmp_path, meter_files()))
    assert first.id == "esl-0001/L1" and first.answer == 2
    assert set(first.ask) == {"context", "question", "options"}
    assert first.groups == {"level": "L1 causal discovery"}
    assert first.humans == (2, 2) and second.humans == (1, 0)
    assert "C. Opt two" in SCORER.render(first.ask)


def test_letters_are_option_indices():
    ask = {"options": ["a", "b", "c", "d", "e"]}
    assert SCORER.parse({"answer": "c"}, ask) == 2
    assert SCORER.parse({"answer": "E)"}, ask) == 4
    for bad in ({"answer": "F"}, {"answer": "AB"}, {"answer": 2}, None):
        with pytest.raises(ValueError):
            SCORER.parse(bad, ask)


def test_accuracy_by_level_and_the_distractors_chosen(tmp_path):
    first, second = SCORER.questions(release_files(tmp_path, meter_files()))
    metrics = {(m.group, m.metric): m for m in SCORER.score([(first, 1), (second, 0)])}
    assert metrics[("all", "accuracy")].value == 0.5
    assert metrics[("level=L1 causal discovery", "accuracy")].value == 0.0
    assert metrics[("all", "chose reversal")].value == 0.5
    baseline = {
        (m.group, m.metric): m
        for m in SCORER.score([(q, h) for q in (first, second) for h in q.humans])
    }
    assert baseline[("all", "accuracy")].value == 0.75
