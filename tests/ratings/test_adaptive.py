"""Sequential stopping for ratings (ratings/adaptive.py): an ordered pair is settled when its
label (the one label rule, ratings.stats.pair_labels) cannot change within its items'
confidence intervals, or when every interval is narrower than a target; never before the
floor, always at the cap; and the replay of ExpliCa's real ratings."""

from __future__ import annotations

import pandas as pd
import pytest

from ratings import explica
from ratings.adaptive import StoppingRule, replay, settled_pairs
from tests.ratings.conftest import explica_data_dir

CONNECTIVES = ("because", "so", "after", "then")


def long_table(pairs: dict[tuple[int, str], dict[str, list[float]]]) -> pd.DataFrame:
    """A long ratings table from {(pair_id, order): {connective: [ratings]}}."""
    rows = [
        {
            "item_key": f"{pair_id}:{order}:{word}",
            "pair_id": pair_id,
            "order": order,
            "connective": word,
            "rater": None,
            "rating": value,
        }
        for (pair_id, order), items in pairs.items()
        for word, values in items.items()
        for value in values
    ]
    return pd.DataFrame(rows)


CLEAR_CAUSAL = {"because": [9, 9, 8, 9, 9], "so": [2, 3, 2, 2, 3], "after": [3, 2, 3, 2, 2],
                "then": [2, 2, 3, 3, 2]}  # fmt: skip
CLOSE_CALL = {"because": [9, 6, 8, 9, 7], "so": [8, 9, 7, 6, 9], "after": [3, 2, 3, 2, 2],
              "then": [2, 2, 3, 3, 2]}  # fmt: skip
CLEAR_UNRELATED = {word: [1, 2, 1, 2, 1] for word in CONNECTIVES}
ON_THE_EDGE = {word: [3, 8, 4, 7, 6] for word in CONNECTIVES}  # best ≈ 5.6, mean ≈ 5.6


def verdict(items, rule=None):
    table = long_table({(1, "AB"): items})
    return settled_pairs(table, rule or StoppingRule(floor=5)).iloc[0]


def test_a_clear_winner_settles_the_label_at_the_floor():
    row = verdict(CLEAR_CAUSAL)
    assert (row["label"], row["stable"], row["settled"]) == ("causal-anti-iconic", True, True)


def test_two_connectives_within_each_others_intervals_do_not_settle():
    row = verdict(CLOSE_CALL)
    assert row["label"] in ("causal-anti-iconic", "causal-iconic")
    assert not row["stable"] and not row["settled"]


def test_low_ratings_everywhere_settle_as_unrelated():
    row = verdict(CLEAR_UNRELATED)
    assert (row["label"], row["settled"]) == ("unrelated", True)


def test_means_near_the_unrelated_thresholds_do_not_settle_until_the_cap():
    assert not verdict(ON_THE_EDGE)["settled"]
    assert verdict(ON_THE_EDGE, StoppingRule(floor=2, cap=5))["settled"]  # at the cap


def test_no_pair_settles_before_the_floor_even_with_identical_ratings():
    same = {word: [10, 10] if word == "because" else [1, 1] for word in CONNECTIVES}
    assert not verdict(same, StoppingRule(floor=3))["settled"]
    assert verdict(same, StoppingRule(floor=2))["settled"]


def test_a_width_target_settles_a_close_call_once_every_interval_is_narrow_enough():
    assert not verdict(CLOSE_CALL, StoppingRule(floor=5, mean_ci_width=1.0))["settled"]
    row = verdict(CLOSE_CALL, StoppingRule(floor=5, mean_ci_width=4.0))
    assert (row["stable"], row["narrow"], row["settled"]) == (False, True, True)


@pytest.mark.parametrize(
    "arguments",
    [{"floor": 1}, {"floor": 6, "cap": 5}, {"confidence": 1.0}, {"mean_ci_width": 0}],
)
def test_stopping_rules_that_cannot_work_are_refused(arguments):
    with pytest.raises(ValueError):
        StoppingRule(**arguments)


def test_the_replay_stops_clear_pairs_at_the_floor_and_close_calls_at_the_cap():
    def fifteen(values):
        return (values * 3)[:15]

    table = long_table(
        {
            (1, "AB"): {word: fifteen(values) for word, values in CLEAR_CAUSAL.items()},
            (1, "BA"): {word: fifteen(values) for word, values in CLOSE_CALL.items()},
        }
    )
    result = replay(table, StoppingRule(floor=5, cap=15), seed=3)
    by_order = result.pairs.set_index("order")
    assert by_order.loc["AB", "n_per_item"] == 5
    assert by_order.loc["BA", "n_per_item"] == 15
    assert result.ratings_used == 4 * 5 + 4 * 15 == by_order["ratings_used"].sum()
    assert result.ratings_total == 120
    # at the cap every rating is used: the label is the full one
    assert by_order.loc["BA", "label"] == by_order.loc["BA", "full_label"]
    # the same seed replays the same
    again = replay(table, StoppingRule(floor=5, cap=15), seed=3)
    assert again.pairs.equals(result.pairs)


def test_replaying_explicas_real_ratings_saves_ratings_and_keeps_the_published_labels():
    data = explica_data_dir()
    if data is None:
        pytest.skip("ExpliCa's data are not in ../shared (or RUNGWISE_SHARED_DIR)")
    ordered = explica.read_ordered_pairs(data / "explica" / "explica_freq_4800.tsv")
    ratings = explica.read_acceptability_file(
        data / "res" / "acceptability" / "zeroshot" / "accept_res_outlines_gpt-4o_zero.tsv",
        ordered,
    ).ratings
    result = replay(ratings, StoppingRule(floor=5), seed=0)
    assert result.ratings_total == 72_000
    merged = result.pairs.merge(ordered[["pair_id", "order", "published_label"]])
    assert len(merged) == 1_200
    # every rating reproduces the published labels; stopping early changes only a few
    assert (merged["full_label"] == merged["published_label"]).all()
    differing = int((merged["label"] != merged["published_label"]).sum())
    assert differing <= 6, differing
    # and saves at least a tenth of the ratings
    assert result.ratings_used <= 0.9 * 72_000, result.ratings_used
    assert set(result.pairs["n_per_item"]) <= set(range(5, 16))
