import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from ratings.connectives import EXPLICA_CONNECTIVES, Connective, ConnectiveSet, variant_key
from ratings.stats import (
    LabelRule,
    class_counts,
    compare_with_humans,
    item_summary,
    krippendorff_alpha,
    label_pairs,
    model_choice_labels,
    model_pair_labels,
    pair_labels,
    rater_consistency,
    spearman_brown,
    split_half_reliability,
    value_count_matrix,
)


def long_table(ratings_by_item, raters=None):
    """{(pair_id, order, connective): [ratings]} -> long ratings table (raters optional)."""
    rows = []
    for (pair_id, order, connective), values in ratings_by_item.items():
        for position, value in enumerate(values):
            rows.append(
                {
                    "item_key": variant_key(pair_id, order, connective),
                    "pair_id": pair_id,
                    "order": order,
                    "connective": connective,
                    "rater": raters[position] if raters else None,
                    "rating": value,
                }
            )
    return pd.DataFrame(rows)


def pair_means(pair_id, order, so, because, then, after):
    """Item table of one ordered pair with given connective means."""
    return pd.DataFrame(
        {
            "item_key": [
                variant_key(pair_id, order, w) for w in ("so", "because", "then", "after")
            ],
            "pair_id": pair_id,
            "order": order,
            "connective": ["so", "because", "then", "after"],
            "mean": [so, because, then, after],
        }
    )


def label_of(*frames, rule=None, connective_set=EXPLICA_CONNECTIVES):
    labels = pair_labels(pd.concat(frames, ignore_index=True), connective_set, rule)
    return labels.set_index(["pair_id", "order"])


# ------------------------------------------------------------------ item summary


def test_item_summary_mean_population_sd_n_and_t_interval():
    ratings = long_table({(1, "AB", "so"): [2, 4, 4, 4, 5, 5, 7, 9], (1, "AB", "because"): [10]})
    summary = item_summary(ratings).set_index("item_key")
    row = summary.loc["1:AB:so"]
    values = np.array([2, 4, 4, 4, 5, 5, 7, 9], dtype=float)
    assert row["n"] == 8
    assert row["mean"] == pytest.approx(5.0)
    assert row["sd"] == pytest.approx(2.0)  # population SD of this textbook sample
    half = scipy_stats.t.ppf(0.975, 7) * values.std(ddof=1) / np.sqrt(8)
    assert row["ci_low"] == pytest.approx(5.0 - half)
    assert row["ci_high"] == pytest.approx(5.0 + half)
    single = summary.loc["1:AB:because"]
    assert single["n"] == 1 and single["mean"] == 10 and np.isnan(single["ci_low"])


def test_item_summary_skips_missing_ratings_and_keeps_empty_items():
    ratings = long_table({(1, "AB", "so"): [3, None, 5], (1, "AB", "then"): [None, None]})
    summary = item_summary(ratings, confidence=0.9).set_index("item_key")
    assert summary.loc["1:AB:so", "n"] == 2
    assert summary.loc["1:AB:so", "mean"] == pytest.approx(4.0)
    assert summary.loc["1:AB:then", "n"] == 0
    assert np.isnan(summary.loc["1:AB:then", "mean"]) and np.isnan(summary.loc["1:AB:then", "sd"])


def test_item_summary_requires_the_columns_it_uses():
    with pytest.raises(ValueError, match="rating"):
        item_summary(
            pd.DataFrame({"item_key": ["a"], "pair_id": [1], "order": ["AB"], "connective": ["so"]})
        )


# ------------------------------------------------------------------ labels


def test_best_connective_gives_type_order_and_direction():
    labels = label_of(
        pair_means(1, "AB", 8.0, 2.0, 6.5, 3.0), pair_means(1, "BA", 2.0, 9.0, 3.0, 4.0)
    )
    assert labels.loc[(1, "AB"), "label"] == "causal-iconic"
    assert labels.loc[(1, "AB"), "direction"] == "A>B"
    assert labels.loc[(1, "BA"), "best_connective"] == "because"
    assert labels.loc[(1, "BA"), "label"] == "causal-anti-iconic"
    # B–A order with "because": the second sentence (A) causes the first (B).
    assert labels.loc[(1, "BA"), "direction"] == "A>B"
    assert labels.loc[(1, "AB"), "overall_mean"] == pytest.approx((8 + 2 + 6.5 + 3) / 4)


def test_ties_follow_the_priority_or_stay_unresolved():
    tie = pair_means(1, "AB", 7.0, 7.0, 7.0, 2.0)
    default = label_of(tie)
    assert default.loc[(1, "AB"), "best_connective"] == "because"
    assert bool(default.loc[(1, "AB"), "tied"])
    assert default.loc[(1, "AB"), "tied_connectives"] == "so,because,then"
    temporal_first = label_of(tie, rule=LabelRule(tie_priority=("then", "so")))
    assert temporal_first.loc[(1, "AB"), "label"] == "temporal-iconic"
    set_order = label_of(tie, rule=LabelRule(tie_priority=None))
    assert set_order.loc[(1, "AB"), "best_connective"] == "so"
    unresolved = label_of(tie, rule=LabelRule(tie_break="unresolved"))
    assert unresolved.loc[(1, "AB"), "label"] == "tied"
    assert pd.isna(unresolved.loc[(1, "AB"), "best_connective"])


def test_near_equal_means_tie_within_tolerance_only():
    close = pair_means(1, "AB", 7.0 + 1e-12, 7.0, 1.0, 1.0)
    assert label_of(close).loc[(1, "AB"), "best_connective"] == "because"
    strict = label_of(close, rule=LabelRule(tie_tolerance=0.0))
    assert strict.loc[(1, "AB"), "best_connective"] == "so"


def test_all_unrelated_pairs():
    frames = [pair_means(i, order, 2.0, 1.5, 3.0, 5.9) for i in range(3) for order in ("AB", "BA")]
    labels = label_of(*frames)
    assert (labels["label"] == "unrelated").all()
    assert labels["relation"].eq("unrelated").all()
    assert labels["connective_order"].isna().all() and labels["direction"].isna().all()
    counts = class_counts(labels.reset_index())
    assert counts.loc["all", "unrelated"] == 6
    assert counts.loc["all", "causal-iconic"] == 0
    assert counts.loc["all", "total"] == 6


def test_unrelated_thresholds_and_strictness():
    best_six = pair_means(1, "AB", 6.0, 1.0, 1.0, 1.0)
    assert label_of(best_six).loc[(1, "AB"), "label"] == "causal-iconic"
    inclusive = label_of(best_six, rule=LabelRule(best_mean_inclusive=True))
    assert inclusive.loc[(1, "AB"), "label"] == "unrelated"

    # Best below 6 but a high mean rating: related under ExpliCa's two-condition rule.
    high_mean = pair_means(2, "AB", 5.8, 5.0, 5.1, 4.9)
    assert label_of(high_mean).loc[(2, "AB"), "label"] == "causal-iconic"
    best_only = label_of(high_mean, rule=LabelRule(overall_mean_threshold=None))
    assert best_only.loc[(2, "AB"), "label"] == "unrelated"

    mean_five = pair_means(3, "AB", 5.5, 5.5, 4.5, 4.5)
    assert label_of(mean_five).loc[(3, "AB"), "label"] != "unrelated"
    assert (
        label_of(mean_five, rule=LabelRule(overall_mean_inclusive=True)).loc[(3, "AB"), "label"]
        == "unrelated"
    )

    never = LabelRule(best_mean_threshold=None, overall_mean_threshold=None)
    assert (
        label_of(pair_means(4, "AB", 1, 1, 1, 2), rule=never).loc[(4, "AB"), "label"]
        == "temporal-anti-iconic"
    )


def test_mean_rating_over_both_orders():
    ab = pair_means(1, "AB", 5.5, 4.0, 4.0, 4.0)  # ordered-pair mean 4.375
    ba = pair_means(1, "BA", 9.0, 9.0, 9.0, 9.0)
    assert label_of(ab, ba).loc[(1, "AB"), "label"] == "unrelated"
    both = label_of(ab, ba, rule=LabelRule(overall_mean_scope="pair"))
    assert both.loc[(1, "AB"), "overall_mean"] == pytest.approx((5.5 + 12 + 36) / 8)
    assert both.loc[(1, "AB"), "label"] == "causal-iconic"


def test_missing_ratings_are_ignored_per_connective_and_empty_pairs_have_no_data():
    ratings = long_table(
        {
            (1, "AB", "so"): [None, None],
            (1, "AB", "because"): [3, None],
            (1, "AB", "then"): [9, 8, None],
            (1, "AB", "after"): [2],
            (2, "AB", "so"): [None],
        }
    )
    labels = label_pairs(ratings).set_index(["pair_id", "order"])
    assert labels.loc[(1, "AB"), "n_rated"] == 3
    assert np.isnan(labels.loc[(1, "AB"), "mean_so"])
    assert labels.loc[(1, "AB"), "label"] == "temporal-iconic"
    assert labels.loc[(2, "AB"), "label"] == "no_data"
    assert pd.isna(labels.loc[(2, "AB"), "best_connective"])


def test_custom_connective_set_labels_and_counts():
    custom = ConnectiveSet(
        connectives=(
            Connective("so", "causal", "iconic"),
            Connective("although", "concessive", "anti-iconic"),
        )
    )
    items = pd.DataFrame(
        {
            "pair_id": [1, 1, 2, 2],
            "order": ["AB"] * 4,
            "connective": ["so", "although", "so", "although"],
            "mean": [3.0, 8.0, 2.0, 1.0],
        }
    )
    labels = pair_labels(items, custom)
    assert labels["label"].tolist() == ["concessive-anti-iconic", "unrelated"]
    counts = class_counts(labels, connective_set=custom)
    assert list(counts.columns) == ["causal-iconic", "concessive-anti-iconic", "unrelated", "total"]
    with pytest.raises(ValueError, match="outside the set"):
        pair_labels(items.assign(connective=["so", "then", "so", "although"]), custom)


def test_class_counts_by_group_have_zero_columns_and_an_all_row():
    labels = pd.DataFrame(
        {
            "label": ["causal-iconic", "unrelated", "unrelated", "temporal-iconic"],
            "subset": ["causal", "causal", "unrelated", "temporal"],
            "origin": ["x", "y", "x", "x"],
        }
    )
    by_subset = class_counts(labels, by="subset")
    assert by_subset.loc["causal", "causal-iconic"] == 1
    assert by_subset.loc["causal", "unrelated"] == 1
    assert by_subset.loc["unrelated", "temporal-anti-iconic"] == 0
    assert by_subset.loc["all", "total"] == 4
    nested = class_counts(labels, by=["subset", "origin"])
    assert nested.loc[("causal", "y"), "unrelated"] == 1
    assert nested.loc[("all", "all"), "total"] == 4


def test_pair_labels_reject_duplicates_and_bad_orders():
    items = pair_means(1, "AB", 1, 2, 3, 4)
    with pytest.raises(ValueError, match="repeat"):
        pair_labels(pd.concat([items, items]))
    with pytest.raises(ValueError, match="'AB' or 'BA'"):
        pair_labels(items.assign(order="A-B"))


# ------------------------------------------------------------------ reliability


def simulated(n_items=60, n_raters=8, noise=1.0, seed=3):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(1, 10, n_items)
    rows = []
    for item in range(n_items):
        for rater in range(n_raters):
            value = int(np.clip(np.rint(truth[item] + rng.normal(0, noise)), 1, 10))
            rows.append(
                {
                    "item_key": f"{item}:AB:so",
                    "pair_id": item,
                    "order": "AB",
                    "connective": "so",
                    "rater": f"r{rater}",
                    "rating": value,
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_from_value_counts_equals_alpha_from_rater_matrix(level):
    ratings = simulated(n_items=25, n_raters=5, noise=2.0)
    ratings.loc[ratings.index % 7 == 0, "rating"] = np.nan  # missing ratings
    matrix = ratings.pivot(index="rater", columns="item_key", values="rating").to_numpy(dtype=float)
    expected = krippendorff.alpha(
        reliability_data=matrix, level_of_measurement=level, value_domain=list(range(1, 11))
    )
    assert krippendorff_alpha(ratings, level=level, value_domain=range(1, 11)) == pytest.approx(
        expected
    )
    # Anonymous raters: the same α, since it only uses the values within each item.
    anonymous = ratings.assign(rater=None).sample(frac=1, random_state=1)
    assert krippendorff_alpha(anonymous, level=level, value_domain=range(1, 11)) == pytest.approx(
        expected
    )


def test_alpha_is_one_for_perfect_agreement_and_low_for_noise():
    agree = long_table({(i, "AB", "so"): [i % 10 + 1] * 4 for i in range(12)})
    assert krippendorff_alpha(agree, level="interval") == pytest.approx(1.0)
    assert krippendorff_alpha(simulated(noise=8.0), level="interval") < 0.3


def test_value_count_matrix_and_domain_check():
    ratings = long_table({(1, "AB", "so"): [1, 1, 3], (2, "AB", "so"): [3, None]})
    counts, domain, units = value_count_matrix(ratings, value_domain=[1, 2, 3])
    assert units == ["1:AB:so", "2:AB:so"]
    assert counts.tolist() == [[2, 0, 1], [0, 0, 1]]
    with pytest.raises(ValueError, match="outside the value domain"):
        value_count_matrix(ratings, value_domain=[1, 2])


def test_split_half_is_seeded_and_tracks_signal():
    clean = simulated(noise=0.7)
    first = split_half_reliability(clean, n_splits=30, seed=5)
    again = split_half_reliability(clean, n_splits=30, seed=5)
    other = split_half_reliability(clean, n_splits=30, seed=6)
    assert first.r_half == again.r_half
    assert first.r_half != other.r_half
    assert first.spearman_brown == pytest.approx(spearman_brown(first.r_half))
    assert first.spearman_brown > 0.95
    assert first.interval[0] <= first.spearman_brown <= first.interval[1] + 1e-9
    noisy = split_half_reliability(simulated(noise=30.0), n_splits=30, seed=5)
    assert noisy.spearman_brown < first.spearman_brown - 0.3
    by_rater = split_half_reliability(clean, n_splits=30, seed=5, split_by="rater")
    assert by_rater.spearman_brown > 0.95 and by_rater.split_by == "rater"


def test_split_half_halves_hold_half_of_each_items_ratings():
    # Two values per item: each half holds exactly one, so r equals the correlation
    # of the two ratings (or of them swapped), whatever the shuffle.
    ratings = long_table({(i, "AB", "so"): [i % 9 + 1, i % 9 + 1] for i in range(20)})
    assert split_half_reliability(ratings, n_splits=5).r_half == pytest.approx(1.0)


def test_spearman_brown_formula():
    assert spearman_brown(0.5) == pytest.approx(2 / 3)
    assert spearman_brown(0.5, factor=3) == pytest.approx(0.75)
    # Doubling a measure whose halves correlate -1 has no defined reliability.
    assert np.isnan(spearman_brown(-1.0))
    assert np.isnan(spearman_brown(np.array([0.5, -1.0]))[1])


def test_rater_consistency_flags_a_random_rater():
    ratings = simulated(n_items=40, n_raters=6, noise=0.8)
    rng = np.random.default_rng(0)
    careless = ratings["rater"] == "r2"
    ratings.loc[careless, "rating"] = rng.integers(1, 11, careless.sum())
    report = rater_consistency(ratings, min_items=10).set_index("rater")
    assert report.loc["r2", "flagged"]
    assert not report.drop("r2")["flagged"].any()
    assert report.loc["r2", "r"] < report.drop("r2")["r"].min()
    assert (report["n_items"] == 40).all()


def test_rater_consistency_needs_rater_ids_and_flags_straight_liners():
    with pytest.raises(ValueError, match="anonymous"):
        rater_consistency(simulated().assign(rater=None))
    ratings = simulated(n_items=20, n_raters=4)
    ratings.loc[ratings["rater"] == "r0", "rating"] = 5
    report = rater_consistency(ratings, min_items=10, method="spearman").set_index("rater")
    assert report.loc["r0", "flagged"] and np.isnan(report.loc["r0", "r"])


# ------------------------------------------------------------------ models


@pytest.fixture
def human():
    items = pd.concat(
        [
            pair_means(1, "AB", 9, 2, 6, 1),  # causal-iconic
            pair_means(1, "BA", 2, 9, 1, 6),  # causal-anti-iconic
            pair_means(2, "AB", 3, 2, 8, 1),  # temporal-iconic
            pair_means(2, "BA", 2, 2, 2, 2),  # unrelated
        ],
        ignore_index=True,
    )
    return items, pair_labels(items)


def test_model_ratings_with_minus_one_become_no_answer(human):
    items, human_labels = human
    model = items[["item_key"]].assign(rating=[8, 3, 5, 1, 1, 7, 2, 6, 2, 3, 9, 1, -1, 2, 2, 2])
    labels = model_pair_labels(model, items).set_index(["pair_id", "order"])
    assert labels["label"].tolist() == [
        "causal-iconic",
        "causal-anti-iconic",
        "temporal-iconic",
        "no_answer",
    ]
    ignored = model_pair_labels(model, items, missing="ignore").set_index(["pair_id", "order"])
    assert ignored.loc[(2, "BA"), "label"] == "unrelated"

    result = compare_with_humans(
        human_labels, labels.reset_index(), human_items=items, model_ratings=model
    )
    assert result.n_pairs == 4 and result.n_no_answer == 1
    assert result.accuracy == pytest.approx(0.75)
    assert result.accuracy_answered == pytest.approx(1.0)
    assert result.confusion.loc["unrelated", "no_answer"] == 1
    assert result.confusion.loc["causal-iconic", "causal-iconic"] == 1
    assert result.n_items_correlated == 15
    answered = items["item_key"] != "2:BA:so"
    expected = scipy_stats.spearmanr(
        items.loc[answered, "mean"], model.loc[answered, "rating"]
    ).statistic
    assert result.spearman == pytest.approx(expected)
    per = result.spearman_by_connective.set_index("connective")
    assert per.loc["so", "n"] == 3 and per.loc["because", "n"] == 4
    assert result.by_class.loc["unrelated", "accuracy"] == 0


def test_model_choices_with_words_indices_and_no_answers(human):
    _, human_labels = human
    choices = pd.DataFrame(
        {
            "pair_id": [1, 1, 2, 2],
            "order": ["AB", "BA", "AB", "BA"],
            "choice": ["So", 1, "-1", "unrelated"],
        }
    )
    labels = model_choice_labels(choices)
    assert labels["label"].tolist() == [
        "causal-iconic",
        "causal-anti-iconic",
        "no_answer",
        "unrelated",
    ]
    for empty in ("", None, np.nan, -1, 7, "perhaps"):
        one = model_choice_labels(
            pd.DataFrame({"pair_id": [1], "order": ["AB"], "choice": [empty]})
        )
        assert one.loc[0, "label"] == "no_answer"

    result = compare_with_humans(human_labels, labels)
    assert result.accuracy == pytest.approx(0.75)
    assert result.n_no_answer == 1
    assert result.confusion.loc["temporal-iconic", "no_answer"] == 1
    assert result.by_relation.loc["temporal", "accuracy"] == 0
    assert result.by_order.loc["iconic", "n"] == 2
    assert result.spearman is None


def test_pairs_the_model_skipped_count_as_no_answer(human):
    _, human_labels = human
    partial = human_labels.iloc[:2][["pair_id", "order", "label", "relation"]]
    result = compare_with_humans(human_labels, partial)
    assert result.accuracy == pytest.approx(0.5)
    assert result.n_no_answer == 2


# ------------------------------------------------------------------ the same figures, faster
#
# split_half_reliability and rater_consistency were rewritten to run at a million ratings
# (one sort per split instead of ranking every key twice; no text reindex of every rating).
# The previous versions are kept here, verbatim in what they compute, and the new ones must give
# the very same numbers (exact equality, not approximate) on ragged data with odd counts,
# missing ratings, single-rating items and anonymous ratings.


def _previous_row_correlation(x, y):
    valid = ~(np.isnan(x) | np.isnan(y))
    count = valid.sum(axis=0)
    x = np.where(valid, x, 0.0)
    y = np.where(valid, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_x = x.sum(axis=0) / count
        mean_y = y.sum(axis=0) / count
        dx = np.where(valid, x - mean_x, 0.0)
        dy = np.where(valid, y - mean_y, 0.0)
        return (dx * dy).sum(axis=0) / np.sqrt((dx * dx).sum(axis=0) * (dy * dy).sum(axis=0))


def _previous_split_half_by_rating(ratings, n_splits, seed):
    rng = np.random.default_rng(seed)
    present = ratings.loc[ratings["rating"].notna()].copy()
    present["rating"] = pd.to_numeric(present["rating"])
    items = pd.Index(pd.unique(present["item_key"]))
    item_codes = items.get_indexer(present["item_key"])
    values = present["rating"].to_numpy(dtype=float)
    position = present.groupby("item_key", sort=False).cumcount().to_numpy()
    matrix = np.full((len(items), int(position.max()) + 1), np.nan)
    matrix[item_codes, position] = values
    matrix = matrix[np.sum(~np.isnan(matrix), axis=1) >= 2]
    n_per_item = np.sum(~np.isnan(matrix), axis=1)
    first_size = n_per_item // 2
    first_means = np.empty((len(matrix), n_splits))
    second_means = np.empty((len(matrix), n_splits))
    filled = np.where(np.isnan(matrix), 0.0, matrix)
    for split in range(n_splits):
        keys = rng.random(matrix.shape)
        keys[np.isnan(matrix)] = np.inf
        ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
        in_first = ranks < first_size[:, None]
        first_sum = np.where(in_first, filled, 0.0).sum(axis=1)
        first_means[:, split] = first_sum / first_size
        second_means[:, split] = (filled.sum(axis=1) - first_sum) / (n_per_item - first_size)
    return _previous_row_correlation(first_means, second_means)


def _ragged(seed=11, n_items=300):
    """Items with 1 to 15 ratings (odd and even counts), some missing, raters shared."""
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(n_items):
        truth = rng.uniform(1, 10)
        for rater in rng.choice(40, size=int(rng.integers(1, 16)), replace=False):
            value = float(np.clip(np.rint(truth + rng.normal(0, 2)), 1, 10))
            rows.append(
                {
                    "item_key": f"p{item}:AB:so",
                    "pair_id": f"p{item}",
                    "order": "AB",
                    "connective": "so",
                    "rater": f"r{rater}",
                    "rating": np.nan if rng.random() < 0.05 else value,
                }
            )
    return pd.DataFrame(rows).sample(frac=1, random_state=seed).reset_index(drop=True)


@pytest.mark.parametrize("seed", [0, 7])
def test_split_half_gives_exactly_the_previous_figures(seed):
    ratings = _ragged(seed)
    result = split_half_reliability(ratings, n_splits=50, seed=seed)
    previous = _previous_split_half_by_rating(ratings, 50, seed)
    assert np.array_equal(result.per_split, previous, equal_nan=True)
    assert result.r_half == float(np.nanmean(previous))


def test_row_correlation_with_and_without_missing_values_is_the_previous_one():
    from ratings.stats import _row_correlation

    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(500, 40)), rng.normal(size=(500, 40))
    assert np.array_equal(_row_correlation(x, y), _previous_row_correlation(x, y))
    x[rng.random(x.shape) < 0.1] = np.nan
    assert np.array_equal(_row_correlation(x, y), _previous_row_correlation(x, y), equal_nan=True)


def test_rater_consistency_gives_exactly_the_previous_leave_one_out_means():
    ratings = _ragged(3)
    present = ratings.loc[ratings["rating"].notna()]
    totals = present.groupby("item_key")["rating"].agg(["sum", "count"])
    totals = totals.reindex(present["item_key"]).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        loo = np.where(
            totals[:, 1] > 1,
            (totals[:, 0] - present["rating"].to_numpy()) / (totals[:, 1] - 1),
            np.nan,
        )
    frame = present.assign(loo_mean=loo).loc[lambda frame: frame["loo_mean"].notna()]
    table = rater_consistency(ratings, min_items=5).set_index("rater")
    for rater, own in frame.groupby("rater"):
        x, y = own["rating"].to_numpy(), own["loo_mean"].to_numpy()
        assert table.loc[rater, "n_items"] == len(own)
        assert table.loc[rater, "r"] == float(np.corrcoef(x, y)[0, 1])
        assert table.loc[rater, "mean_abs_deviation"] == float(np.mean(np.abs(x - y)))
