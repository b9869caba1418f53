"""quality/stats.py: the figures against statsmodels and by hand, without a database."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import proportion_confint

from quality import stats


@pytest.mark.parametrize(("right", "total"), [(0, 5), (3, 8), (7, 7), (41, 60)])
def test_wilson_is_statsmodels_wilson_interval(right, total):
    low, high = proportion_confint(right, total, alpha=0.05, method="wilson")
    interval = stats.wilson(right, total)
    assert interval == pytest.approx(stats.Interval(low, high))
    # Not the normal approximation: at 0 of 5 Wilson's upper bound is well above zero.
    assert stats.wilson(0, 5).high == pytest.approx(0.4345, abs=1e-4)


def test_no_trials_has_no_interval():
    assert stats.wilson(0, 0) is None


def test_longest_run_and_top_share():
    answers = ["a", "a", "b", "b", "b", "a"]
    assert stats.longest_run(answers) == 3
    assert stats.top_share(answers) == pytest.approx(0.5)
    assert stats.longest_run([]) == 0 and stats.top_share([]) is None


def test_distance_is_total_variation():
    assert stats.distribution_distance(["a", "a"], {"a": 5}) == 0
    assert stats.distribution_distance(["a", "a"], {"b": 5}) == 1
    assert stats.distribution_distance(["a", "b"], {"a": 3, "b": 1}) == pytest.approx(0.25)
    assert stats.distribution_distance([], {"a": 1}) is None


def test_straight_lining_is_flagged_only_after_enough_answers():
    same = ["keep"] * 12
    flags = stats.flags(answers=same, others={"keep": 10, "reject": 10}, seconds=8, stage_seconds=9)
    assert "the same answer 12 times in a row" in flags
    assert "one answer on 100% of items" in flags
    assert (
        stats.flags(answers=same[:9], others={"keep": 10}, seconds=None, stage_seconds=None) == []
    )


def test_varied_answers_at_a_normal_pace_are_not_flagged():
    answers = ["keep", "reject"] * 8
    assert (
        stats.flags(
            answers=answers, others={"keep": 30, "reject": 34}, seconds=8.0, stage_seconds=10.0
        )
        == []
    )


def test_too_fast_against_the_stage():
    assert stats.flags(answers=[], others={}, seconds=2.0, stage_seconds=9.0) == [
        "median 2.0 s per item, stage 9.0 s"
    ]
