"""Vote resolution decides every policy × tie policy the same way whatever the vote order."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.resolution import (
    OUTCOMES,
    POLICIES,
    STATUSES,
    TIE_POLICIES,
    Decision,
    decide,
    validate_policy,
)


def test_exported_names_cover_the_engine_contract():
    assert {"majority", "unanimity_keep", "mean"} <= set(POLICIES)
    assert TIE_POLICIES == ("adjudicate", "extra_annotation", "default")
    assert set(STATUSES) == {
        "unanimous",
        "majority",
        "tie",
        "needs_adjudication",
        "insufficient",
        "mean",
    }
    assert OUTCOMES == ("accept", "reject", "pending")


# --- majority -----------------------------------------------------------------------------------


def test_majority_unanimous_accept():
    decision = decide(["keep", "keep", "keep"], policy="majority", required=3)

    assert decision == Decision("keep", "unanimous", "accept", False, {"keep": 3})


def test_majority_accepts_the_strict_majority():
    decision = decide(["keep", "reject", "keep"], policy="majority", required=3)

    assert (decision.value, decision.status, decision.outcome) == ("keep", "majority", "accept")
    assert decision.votes == {"keep": 2, "reject": 1}
    assert decision.needs_more is False


def test_majority_rejects_when_the_winner_is_a_reject_value():
    decision = decide(["discard", "discard", "keep"], policy="majority", reject_values={"discard"})

    assert (decision.value, decision.status, decision.outcome) == ("discard", "majority", "reject")


@pytest.mark.parametrize(
    ("tie_policy", "expected"),
    [
        ("adjudicate", Decision(None, "needs_adjudication", "pending", False, {"a": 1, "b": 1})),
        ("extra_annotation", Decision(None, "tie", "pending", True, {"a": 1, "b": 1})),
        ("default", Decision("reject", "tie", "reject", False, {"a": 1, "b": 1})),
    ],
)
def test_majority_tie_follows_the_tie_policy(tie_policy, expected):
    decision = decide(["a", "b"], policy="majority", tie_policy=tie_policy, default="reject")

    assert decision == expected


def test_majority_needs_more_than_half_not_just_the_most_votes():
    # "a" leads 2-1-1 but holds only half of the votes.
    decision = decide(["a", "a", "b", "c"], policy="majority", tie_policy="extra_annotation")

    assert (decision.status, decision.needs_more, decision.value) == ("tie", True, None)


def test_tie_default_that_is_not_a_reject_value_accepts():
    decision = decide(["a", "b"], policy="majority", tie_policy="default", default="a")

    assert (decision.value, decision.status, decision.outcome) == ("a", "tie", "accept")


# --- plurality ----------------------------------------------------------------------------------


def test_plurality_accepts_a_unique_leader_without_a_majority():
    decision = decide(["a", "a", "b", "c"], policy="plurality")

    assert (decision.value, decision.status, decision.outcome) == ("a", "majority", "accept")


@pytest.mark.parametrize("tie_policy", TIE_POLICIES)
def test_plurality_tie_at_the_top_follows_the_tie_policy(tie_policy):
    decision = decide(
        ["a", "a", "b", "b", "c"], policy="plurality", tie_policy=tie_policy, default="c"
    )

    expected_status = "needs_adjudication" if tie_policy == "adjudicate" else "tie"
    assert decision.status == expected_status
    assert decision.needs_more is (tie_policy == "extra_annotation")
    assert decision.value == ("c" if tie_policy == "default" else None)


# --- unanimity_keep -----------------------------------------------------------------------------


def test_unanimity_keep_discards_on_any_rejection():
    decision = decide(["keep", "reject", "keep"], policy="unanimity_keep", required=3)

    assert (decision.value, decision.status, decision.outcome) == ("reject", "majority", "reject")
    assert decision.needs_more is False


def test_unanimity_keep_accepts_when_all_keep():
    decision = decide(["keep", "keep", "keep"], policy="unanimity_keep", required=3)

    assert (decision.value, decision.status, decision.outcome) == ("keep", "unanimous", "accept")


def test_unanimity_keep_with_boolean_votes():
    rejected = decide([True, False, True], policy="unanimity_keep", reject_values=(False,))
    kept = decide([True, True, True], policy="unanimity_keep", reject_values=(False,))

    assert (rejected.value, rejected.outcome) == (False, "reject")
    assert rejected.votes == {"False": 1, "True": 2}
    assert (kept.value, kept.status, kept.outcome) == (True, "unanimous", "accept")


@pytest.mark.parametrize("tie_policy", TIE_POLICIES)
def test_unanimity_keep_never_ties(tie_policy):
    decision = decide(
        ["keep", "reject"], policy="unanimity_keep", tie_policy=tie_policy, default="keep"
    )

    assert decision.outcome == "reject" and decision.needs_more is False


# --- mean ---------------------------------------------------------------------------------------


def test_mean_of_ratings():
    decision = decide([7, 8, 10], policy="mean")

    assert decision == Decision(pytest.approx(25 / 3), "mean", "accept", False, {})


def test_mean_below_the_threshold_rejects():
    assert decide([4, 5, 6], policy="mean", accept_threshold=6).outcome == "reject"
    assert decide([6, 6, 6], policy="mean", accept_threshold=6).outcome == "accept"


@pytest.mark.parametrize("vote", ["7", True, "seven"])
def test_mean_refuses_non_numeric_votes(vote):
    with pytest.raises(ValueError, match="numeric"):
        decide([5, vote], policy="mean")


# --- insufficient votes and missing values ------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_too_few_votes_is_insufficient_and_pending(policy):
    decision = decide([5, 5], policy=policy, required=3)

    assert (decision.value, decision.status, decision.outcome) == (None, "insufficient", "pending")
    assert decision.needs_more is False


def test_none_and_nan_are_not_votes():
    decision = decide(["keep", None, float("nan"), np.nan, "keep"], policy="majority", required=3)

    assert decision.status == "insufficient"
    assert decision.votes == {"keep": 2}
    assert decide([None, 4.0, np.float64("nan"), 6], policy="mean").value == 5.0


# --- value types, determinism, serialisation ----------------------------------------------------


def test_boolean_and_integer_votes_are_distinct_categories():
    decision = decide([True, 1, 1], policy="majority")

    assert decision.votes == {"1": 2, "True": 1}
    assert decision.value == 1 and decision.value is not True
    assert decide([1, 1, 0], policy="majority", reject_values=(True,)).outcome == "accept"


def test_numpy_votes_count_like_python_votes():
    decision = decide([np.int64(2), 2, np.int64(3)], policy="majority")

    assert decision.votes == {"2": 2, "3": 1}
    assert type(decision.value) is int


def test_votes_that_read_the_same_as_text_are_refused():
    with pytest.raises(ValueError, match="same as text"):
        decide([1, "1"], policy="majority")


def test_decision_serialises_to_json():
    decision = decide([np.int64(1), 1, 2], policy="majority")

    assert json.loads(json.dumps(decision.to_dict())) == {
        "value": 1,
        "status": "majority",
        "outcome": "accept",
        "needs_more": False,
        "votes": {"1": 2, "2": 1},
        "revision": None,
        "reason": "",
    }


votes_strategy = st.lists(
    st.one_of(st.sampled_from(["keep", "reject", "edit"]), st.booleans(), st.integers(0, 3)),
    max_size=7,
)


@settings(max_examples=150, deadline=None)
@given(
    votes_strategy,
    st.sampled_from(["majority", "plurality", "unanimity_keep"]),
    st.sampled_from(TIE_POLICIES),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
)
def test_decisions_do_not_depend_on_vote_order(votes, policy, tie_policy, required, random):
    shuffled = list(votes)
    random.shuffle(shuffled)
    options = {"policy": policy, "tie_policy": tie_policy, "default": "keep", "required": required}

    first = decide(votes, **options)

    assert decide(shuffled, **options) == first
    assert first.status in STATUSES and first.outcome in OUTCOMES
    assert sum(first.votes.values()) == len(votes)
    if policy == "majority" and first.status in ("unanimous", "majority"):
        assert 2 * first.votes[str(first.value)] > len(votes)
    if first.outcome == "pending":
        assert first.status in ("insufficient", "needs_adjudication", "tie")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 10), min_size=1, max_size=15), st.randoms(use_true_random=False))
def test_mean_does_not_depend_on_vote_order(ratings, random):
    shuffled = list(ratings)
    random.shuffle(shuffled)

    assert decide(shuffled, policy="mean").value == decide(ratings, policy="mean").value
    assert min(ratings) <= decide(ratings, policy="mean").value <= max(ratings)


# --- configuration errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"policy": "vote"}, "Unknown resolution policy"),
        ({"policy": "majority", "tie_policy": "coin"}, "Unknown tie policy"),
        ({"policy": "majority", "tie_policy": "default"}, "needs a default"),
        ({"policy": "majority", "required": 0}, "at least 1"),
        ({"policy": "majority", "accept_threshold": 5}, "only to the 'mean' policy"),
        ({"policy": "mean", "accept_threshold": "high"}, "must be a number"),
    ],
)
def test_bad_configuration_is_refused_with_a_message(options, message):
    with pytest.raises(ValueError, match=message):
        validate_policy(**options)
    with pytest.raises(ValueError, match=message):
        decide(["a"], **options)


def test_default_tie_policy_without_default_is_fine_where_ties_cannot_happen():
    validate_policy(policy="mean", tie_policy="default")
    validate_policy(policy="unanimity_keep", tie_policy="default")


def test_unanimity_keep_names_the_most_common_value_and_breaks_ties_by_text():
    two_reasons = decide(
        ["spam", "reject", "keep", "spam"],
        policy="unanimity_keep",
        reject_values=("reject", "spam"),
    )
    tied_reasons = decide(
        ["spam", "reject", "keep"], policy="unanimity_keep", reject_values=("reject", "spam")
    )
    tied_keeps = decide(["keep", "fine"], policy="unanimity_keep")

    assert (two_reasons.value, two_reasons.outcome) == ("spam", "reject")
    assert (tied_reasons.value, tied_reasons.outcome) == ("reject", "reject")
    assert (tied_keeps.value, tied_keeps.outcome) == ("fine", "accept")


@pytest.mark.parametrize(
    ("key", "options", "message"),
    [
        ("meter_vote", {"x": 1}, "The meter_vote policy has no option x; it takes none."),
        ("narrative_record", {"a": 1, "b": 2}, "has no option a, b; it takes none."),
        ("ct5k_gate", {"gates": 9}, "has no option gates; it takes gate and max_distance."),
        (
            "majority",
            {"threshold": 3},
            "no option threshold; it takes confidence and confidence_measure",
        ),
        ("mean", {"threshold": 3}, "has no option threshold; it takes accept_threshold."),
    ],
)
def test_every_policy_refuses_an_option_it_does_not_take_naming_it(key, options, message):
    """One rule (annotation.policies.refuse_unknown_options) for the engine's and the
    plug-ins' policies: the unknown option is named, and what the policy takes."""
    from annotation.policies import PolicySettings, get_policy

    with pytest.raises(ValueError) as refused:
        get_policy(key).validate_settings(PolicySettings(options=options))
    assert message in str(refused.value)
    get_policy(key).validate_settings(PolicySettings())  # no options: fine
