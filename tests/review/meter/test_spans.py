"""Evidence spans (review/meter/spans.py): checks, token F1, κ and the published majority."""

from __future__ import annotations

import pytest

from review.meter.spans import agreement, clean_spans, f1, majority_spans, token_marks, tokens

TEXT = "Heavy rain fell. The river rose and the school closed."


def span(words: str) -> list[int]:
    start = TEXT.index(words)
    return [start, start + len(words)]


def marking(l1: str, l2: str = "Heavy rain", l3: str = "school closed.") -> dict:
    return {"L1": [span(l1)], "L2": [span(l2)], "L3": [span(l3)]}


def test_tokens_and_marks():
    assert tokens("a  bc d") == [(0, 1), (3, 5), (6, 7)]
    assert token_marks([span("river rose")], TEXT) == [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"L1": [], "L2": [[0, 5]], "L3": [[0, 5]]}, "L1: mark at least one span"),
        ({"L1": [[0, 3]], "L2": [[0, 5]], "L3": [[0, 5]]}, "not a run of whole words"),
        ({"L1": [[0, 10], [6, 16]], "L2": [[0, 5]], "L3": [[0, 5]]}, "overlap"),
        ({"L1": [[0, 999]], "L2": [[0, 5]], "L3": [[0, 5]]}, "not a run of whole words"),
        ({"L1": [["0", 5]], "L2": [[0, 5]], "L3": [[0, 5]]}, "a span is"),
        ([], "expected"),
    ],
)
def test_bad_spans_are_refused_naming_the_level(raw, message):
    with pytest.raises(ValueError, match=message):
        clean_spans(raw, TEXT)


def test_spans_are_sorted_and_kept():
    raw = {"L1": [span("school closed."), span("river")], "L2": [[0, 5]], "L3": [[0, 10]]}
    assert clean_spans(raw, TEXT)["L1"] == [span("river"), span("school closed.")]


def test_f1_and_kappa_on_hand_worked_markings():
    a, b = token_marks([span("river rose")], TEXT), token_marks([span("The river")], TEXT)
    assert f1(a, b) == pytest.approx(0.5)  # one shared token of two each
    same = agreement([(TEXT, [marking("river rose"), marking("river rose")])])
    assert same["f1"] == 1.0 and same["kappa"] == pytest.approx(1.0)
    apart = agreement([(TEXT, [marking("Heavy rain"), marking("school closed.", "river", "The")])])
    assert apart["f1"] == 0.0 and apart["kappa"] < 0


def test_the_majority_publishes_tokens_half_marked():
    markings = [marking("The river rose"), marking("river rose and"), marking("Heavy")]
    assert majority_spans(TEXT, markings)["L1"] == [span("river rose")]
