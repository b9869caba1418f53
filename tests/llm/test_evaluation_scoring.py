"""The scorer contract (llm/evaluation/scoring.py): intervals, groups, every workflow's scorer
registered through the plug-in field, and no answer, people's answer or bookkeeping of a
question ever reaching its prompt."""

from __future__ import annotations

import json

import pytest

from annotation.plugins import registered_plugins
from llm.evaluation.scoring import (
    SCORERS,
    Metric,
    Question,
    grouped,
    human_answers,
    mean,
    messages,
    proportion,
)
from tests.llm.releases import SAMPLES


def test_a_proportion_carries_its_wilson_interval():
    metric = proportion("all", "accuracy", 8, 10)
    assert metric.value == 0.8
    assert 0.44 < metric.low < 0.5 and 0.94 < metric.high < 0.98
    assert proportion("all", "accuracy", 0, 0) == Metric("all", "accuracy", 0, None)


def test_a_mean_has_a_seeded_bootstrap_interval_around_it():
    values = [0.1, 0.4, 0.5, 0.9, 1.0, 0.3]
    first, second = mean("all", "tau", values), mean("all", "tau", values)
    assert first == second  # seeded: the stored figures are reproducible
    assert first.low < first.value < first.high
    assert mean("all", "tau", [None, None]).n == 0
    assert mean("all", "tau", [0.5, None]) == Metric("all", "tau", 1, 0.5)


def test_answers_are_grouped_all_first_then_each_key_value():
    a = Question("a", {}, 1, groups={"level": "L1", "trap": "x"})
    b = Question("b", {}, 1, groups={"level": "L2"})
    groups = grouped([(a, 1), (b, 2)])
    assert list(groups) == ["all", "level=L1", "level=L2", "trap=x"]
    assert groups["level=L2"] == [(b, 2)]


def test_human_answers_are_every_persons_answer():
    a = Question("a", {}, 1, humans=(1, 2))
    assert human_answers([a, Question("b", {}, 1)]) == [(a, 1), (a, 2)]


def test_every_workflow_registers_a_scorer_through_the_plugin_field():
    declared = {
        kind: scorer
        for plugin in registered_plugins()
        for kind, scorer in plugin.release_scorers.items()
    }
    assert set(declared) == {"carlgt", "causal_narratives", "meter", "causalt5k", "ratings"}
    assert all(SCORERS[kind] is scorer for kind, scorer in declared.items())


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_no_gold_field_reaches_a_prompt(kind, tmp_path):
    """Each scorer's questions from a sample release: the messages depend on ``ask`` alone —
    changing the answer, the people's answers and the bookkeeping changes nothing — and no
    gold value the release holds appears in them."""
    scorer = SCORERS[kind]
    files, gold_texts = SAMPLES[kind](tmp_path)
    questions = list(scorer.questions(files))
    assert questions
    for question in questions:
        sent = messages(scorer, question)
        poisoned = Question(
            question.id, question.ask, "GOLD-X", question.groups, ("GOLD-Y",), {"z": "GOLD-Z"}
        )
        assert messages(scorer, poisoned) == sent
        text = json.dumps(sent)
        for gold in gold_texts:
            assert gold not in text, (kind, gold)
