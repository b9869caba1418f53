"""Practice feedback (annotation/practice.py): the known answer from the item stage's gold (a
value, or a range) or the item's expected range, the vote the kind reads, the explanation."""

from __future__ import annotations

import pytest

from annotation.kinds import get_kind
from annotation.practice import practice_feedback


@pytest.fixture
def verify():
    return get_kind("verify")


def test_a_vote_equal_to_the_gold_matches_and_the_explanation_comes_along(verify):
    said = practice_feedback(
        verify,
        answer_payload={"value": "keep", "comment": "fine"},
        gold="keep",
        item_payload={"text": "T.", "explanation": "The storm caused the outage."},
    )
    assert (said.answer, said.known, said.matched) == ("keep", "keep", True)
    assert said.explanation == "The storm caused the outage."


def test_another_vote_misses_and_an_item_without_a_known_answer_only_explains(verify):
    missed = practice_feedback(
        verify, answer_payload={"value": "reject"}, gold="keep", item_payload={}
    )
    assert (missed.known, missed.matched, missed.explanation) == ("keep", False, "")
    unknown = practice_feedback(
        verify, answer_payload={"value": "reject"}, gold=None, item_payload={"feedback": "Why."}
    )
    assert (unknown.known, unknown.matched, unknown.explanation) == ("", None, "Why.")


@pytest.mark.parametrize(
    ("value", "matched"), [(7, True), (10, True), (6, False), (11, False), (None, False)]
)
def test_a_number_is_checked_against_a_range_from_the_gold_or_the_items_expected_bounds(
    value, matched
):
    rate = get_kind("rate")
    from_gold = practice_feedback(
        rate, answer_payload={"value": value}, gold={"min": 7, "max": 10}, item_payload={}
    )
    from_item = practice_feedback(
        rate,
        answer_payload={"value": value},
        gold=None,
        item_payload={"expected_min": 7, "expected_max": 10.0, "feedback": "Falling breaks."},
    )
    assert from_gold.matched is from_item.matched is matched
    assert from_gold.known == from_item.known == "from 7 to 10"
    assert from_item.explanation == "Falling breaks."
    only_high = practice_feedback(
        rate, answer_payload={"value": 2}, gold=None, item_payload={"expected_max": 3}
    )
    assert (only_high.known, only_high.matched) == ("3 or less", True)
