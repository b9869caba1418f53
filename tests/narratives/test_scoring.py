"""Scoring against hand-worked examples: exact order, Kendall's τ, edge precision / recall of
a chain, structural Hamming distance with a fork and a collider, and the summaries."""

from __future__ import annotations

import pytest

from narratives import scoring

TRUTH = ["a", "b", "c", "d"]


def test_the_true_order_scores_perfectly():
    assert scoring.score_answer({"order": TRUTH}, {"order": TRUTH}) == {
        "exact": True,
        "tau": 1.0,
        "precision": 1.0,
        "recall": 1.0,
        "shd": 0,
    }


def test_one_swap_by_hand():
    # b, a, c, d: of the 6 pairs one is discordant (a, b): τ = (5 − 1) / 6.
    # Consecutive pairs b→a, a→c, c→d: only c→d is a true edge; 1 of 3 predicted, 1 of 3 true.
    # SHD: a–b reversed (1), a→c extra (1), b→c missing (1), c→d right: 3.
    scores = scoring.score_answer({"order": TRUTH}, {"order": ["b", "a", "c", "d"]})
    assert scores["exact"] is False
    assert scores["tau"] == pytest.approx(4 / 6)
    assert scores["precision"] == pytest.approx(1 / 3)
    assert scores["recall"] == pytest.approx(1 / 3)
    assert scores["shd"] == 3


def test_the_reversed_chain():
    scores = scoring.score_answer({"order": TRUTH}, {"order": TRUTH[::-1]})
    assert scores["tau"] == pytest.approx(-1.0)
    assert scores["precision"] == 0 and scores["recall"] == 0
    assert scores["shd"] == 3  # every edge reversed, each counted once


def test_tau_refuses_what_is_not_a_permutation():
    with pytest.raises(ValueError, match="permutation"):
        scoring.kendall_tau(["a", "b", "x"], ["a", "b", "c"])


FORK = {"nodes": ["h", "w", "p"], "edges": [["h", "w"], ["h", "p"]]}  # h → w, h → p
COLLIDER = {"nodes": ["i", "s", "c"], "edges": [["i", "c"], ["s", "c"]]}  # i → c ← s


def test_shd_of_a_fork_read_as_a_chain_and_as_a_collider():
    # Fork h → w, h → p answered as the chain w → h → p: h–w reversed, h→p right → SHD 1.
    chain = scoring.score_answer(FORK, {"edges": [["w", "h"], ["h", "p"]]})
    assert chain["shd"] == 1 and chain["precision"] == 0.5 and chain["recall"] == 0.5
    # Answered as the collider w → h ← p: both reversed → 2.
    collider = scoring.score_answer(FORK, {"edges": [["w", "h"], ["p", "h"]]})
    assert collider["shd"] == 2 and collider["precision"] == 0
    assert collider["exact"] is False and collider["tau"] is None


def test_shd_of_a_collider_with_a_missing_and_an_extra_edge():
    # Truth i → c ← s; answer i → c, i → s: s→c missing (1), i→s extra (1) → SHD 2;
    # precision 1/2, recall 1/2.
    scores = scoring.score_answer(COLLIDER, {"edges": [["i", "c"], ["i", "s"]]})
    assert scores["shd"] == 2
    assert (scores["precision"], scores["recall"]) == (0.5, 0.5)
    assert scoring.score_answer(COLLIDER, {"edges": COLLIDER["edges"]})["exact"] is True


def test_summaries_carry_a_wilson_interval():
    rows = [scoring.score_answer({"order": TRUTH}, {"order": TRUTH})] * 49 + [
        scoring.score_answer({"order": TRUTH}, {"order": TRUTH[::-1]})
    ]
    summary = scoring.summarise(rows)
    assert summary["answers"] == 50 and summary["exact"] == 49
    assert summary["exact_rate"] == pytest.approx(0.98)
    # Wilson 95 % for 49 / 50, worked by hand: 0.8950 – 0.9965.
    assert summary["exact_low"] == pytest.approx(0.8950, abs=5e-4)
    assert summary["exact_high"] == pytest.approx(0.9965, abs=5e-4)
    assert summary["tau"] == pytest.approx((49 - 1) / 50)
    assert scoring.summarise([])["exact_rate"] is None
