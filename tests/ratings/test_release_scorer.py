"""ExpliCa's release scorer (ratings/release_scorer.py): ordered pairs with a preferred
connective asked as a choice, ties accepting any tied connective, unrelated pairs not asked,
accuracy by relation and order; each connective's sentence for the perplexity reading."""

from __future__ import annotations

import pytest

from ratings.release_scorer import ExplicaScorer
from tests.llm.releases import explica_files, release_files

SCORER = ExplicaScorer()


def test_pairs_with_a_preferred_connective_are_asked(tmp_path):
    found = list(SCORER.questions(release_files(tmp_path, explica_files())))
    assert [q.id for q in found] == ["1/AB", "1/BA", "2/AB"]
    assert found[0].ask["connectives"] == ["so", "because", "then", "after"]
    assert found[0].answer == ["because"] and found[2].answer == ["so", "because"]
    assert found[0].groups == {"relation": "causal", "order": "anti-iconic"}
    assert SCORER.choices(found[0].ask)["because"] == (
        "The man turned up the music because he wanted to listen."
    )


def test_choices_are_parsed_and_ties_accept_either(tmp_path):
    found = list(SCORER.questions(release_files(tmp_path, explica_files())))
    assert SCORER.parse({"answer": "Because"}, found[0].ask) == "because"
    with pytest.raises(ValueError):
        SCORER.parse({"answer": "although"}, found[0].ask)
    metrics = {
        (m.group, m.metric): m.value
        for m in SCORER.score(list(zip(found, ["because", "because", "because"], strict=True)))
    }
    assert metrics[("all", "accuracy")] == pytest.approx(2 / 3)
    assert metrics[("order=iconic", "accuracy")] == 0.5
