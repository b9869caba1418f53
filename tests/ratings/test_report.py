"""The researcher page's tables computed from plain frames (no database): labels and class
counts per subset/origin/flag, reliability, raters with attention checks, model comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ratings import plots, report, stats
from ratings.connectives import EXPLICA_CONNECTIVES, expand_pair
from ratings.stats import LabelRule

PAIRS = [
    {"pair_id": "c1", "sentence_a": "A.", "sentence_b": "B.", "subset": "causal", "origin": "hand-written", "flags": ["socially challenging"]},
    {"pair_id": "t1", "sentence_a": "C.", "sentence_b": "D.", "subset": "temporal", "origin": "DeScript", "flags": []},
    {"pair_id": "u1", "sentence_a": "E.", "sentence_b": "F.", "subset": "unrelated", "origin": "DeScript", "flags": []},
]  # fmt: skip
# Target means per pair and (order, connective): the label each ordered pair should get.
TARGETS = {
    "c1": {("AB", "so"): 9, ("AB", "because"): 2, ("AB", "then"): 5, ("AB", "after"): 2,
           ("BA", "so"): 2, ("BA", "because"): 8, ("BA", "then"): 2, ("BA", "after"): 5},
    "t1": {("AB", "so"): 3, ("AB", "because"): 2, ("AB", "then"): 9, ("AB", "after"): 2,
           ("BA", "so"): 2, ("BA", "because"): 2, ("BA", "then"): 3, ("BA", "after"): 8},
    "u1": {key: 2 for key in [(o, w) for o in ("AB", "BA") for w in ("so", "because", "then", "after")]},
}  # fmt: skip
EXPECTED_LABELS = {
    ("c1", "AB"): "causal-iconic",
    ("c1", "BA"): "causal-anti-iconic",
    ("t1", "AB"): "temporal-iconic",
    ("t1", "BA"): "temporal-anti-iconic",
    ("u1", "AB"): "unrelated",
    ("u1", "BA"): "unrelated",
}


def items_frame():
    rows = []
    for pair in PAIRS:
        for variant in expand_pair(pair):
            rows.append(
                {
                    key: variant[key]
                    for key in (
                        "item_key",
                        "pair_id",
                        "order",
                        "connective",
                        "relation",
                        "connective_order",
                    )
                }
            )
    return pd.DataFrame(rows)  # fmt: skip


def pairs_frame():
    return pd.DataFrame(
        [{key: pair[key] for key in ("pair_id", "subset", "origin", "flags")} for pair in PAIRS]
    )


def ratings_frame(raters=6, careless=("r6",), seed=1):
    """Attentive raters rate near the target (±1); careless ones at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for _, item in items_frame().iterrows():
        target = TARGETS[item.pair_id][(item.order, item.connective)]
        for number in range(1, raters + 1):
            rater = f"r{number}"
            value = (
                rng.integers(1, 11)
                if rater in careless
                else int(np.clip(target + rng.integers(-1, 2), 1, 10))
            )
            rows.append({"item_key": item.item_key, "pair_id": item.pair_id, "order": item.order,
                         "connective": item.connective, "rater": rater, "rating": float(value),
                         "cannot_judge": False, "seconds": 4.0})  # fmt: skip
    return pd.DataFrame(rows)


def build(ratings=None, **options):
    return report.build_report(
        ratings=ratings if ratings is not None else ratings_frame(),
        items=items_frame(),
        pairs=pairs_frame(),
        connective_set=EXPLICA_CONNECTIVES,
        rule=LabelRule(),
        scale=(1, 10),
        **options,
    )


def test_labels_and_class_counts_overall_and_by_subset_origin_and_flag():
    built = build(ratings=ratings_frame(careless=()))
    labels = built.tables["labels"]
    assert {(row.pair_id, row.order): row.label for row in labels.itertuples()} == EXPECTED_LABELS
    classes = built.tables["classes"]
    assert classes.loc["all", "unrelated"] == 2 and classes.loc["all", "total"] == 6
    by_subset = built.tables["classes_by_subset"]
    assert by_subset.loc["causal", ["causal-iconic", "causal-anti-iconic", "total"]].tolist() == [
        1,
        1,
        2,
    ]
    assert by_subset.loc["all", "total"] == 6
    by_origin = built.tables["classes_by_origin"]
    assert by_origin.loc["DeScript", "total"] == 4 and by_origin.loc["hand-written", "total"] == 2
    by_flag = built.tables["classes_by_flag"]
    assert (
        list(by_flag.index) == ["socially challenging"]
        and by_flag.loc["socially challenging", "total"] == 2
    )
    assert labels.loc[labels["pair_id"] == "c1", "flags"].tolist() == ["socially challenging"] * 2


def test_reliability_has_alpha_with_intervals_and_split_half():
    built = build()
    for name in ("alpha_ordinal", "alpha_interval", "split_half"):
        figure = built.figures[name]
        assert figure.low <= figure.value <= figure.high
    present = built.ratings
    expected = stats.krippendorff_alpha(present, level="interval", value_domain=range(1, 11))
    assert built.figures["alpha_interval"].value == pytest.approx(expected)
    assert list(built.tables["reliability"]["measure"]) == [
        "Krippendorff's alpha (ordinal)",
        "Krippendorff's alpha (interval)",
        "Split-half reliability of item means (Spearman–Brown)",
    ]
    # Seeded: the same data give the same intervals.
    again = build()
    assert again.figures["alpha_ordinal"].low == built.figures["alpha_ordinal"].low


def test_the_careless_rater_is_flagged_and_failed_checks_are_counted():
    checks = pd.DataFrame(
        [
            {"rater": "r1", "item": "check-1", "text": "x", "rating": 2, "expected_min": None, "expected_max": 3},
            {"rater": "r2", "item": "check-1", "text": "x", "rating": 9, "expected_min": None, "expected_max": 3},
            {"rater": "r3", "item": "check-1", "text": "x", "rating": np.nan, "expected_min": None, "expected_max": 3},
            {"rater": "r2", "item": "check-2", "text": "y", "rating": 8, "expected_min": 7, "expected_max": None},
        ]
    )  # fmt: skip
    practice = pd.DataFrame(
        [
            {
                "rater": "r4",
                "item": "practice-1",
                "text": "z",
                "rating": 2,
                "expected_min": 7,
                "expected_max": 10,
            }
        ]
    )
    built = build(checks=checks, practice=practice)
    raters = built.tables["raters"].set_index("rater")
    assert bool(raters.loc["r6", "flagged"]) and raters.loc["r6", "r"] < 0.3
    assert not raters.loc["r1", "flagged"] and raters.loc["r1", "r"] > 0.8
    assert (raters.loc["r2", "checks_seen"], raters.loc["r2", "checks_failed"]) == (2, 1)
    assert (raters.loc["r1", "checks_failed"], raters.loc["r3", "checks_failed"]) == (0, 0)
    assert (raters.loc["r4", "practice_done"], raters.loc["r4", "practice_off"]) == (1, 1)
    assert set(raters.index[raters["needs_attention"]]) == {"r2", "r6"}
    assert built.tables["attention_checks"]["failed"].tolist() == [False, True, False, False]


def test_anonymous_ratings_have_no_rater_table():
    ratings = ratings_frame().assign(rater=np.nan)
    built = build(ratings=ratings)
    assert built.anonymous and built.n_raters is None
    assert "raters" not in built.tables


def test_cannot_judge_answers_are_counted_but_not_rated():
    ratings = ratings_frame()
    ratings.loc[:4, "rating"] = np.nan
    ratings.loc[:4, "cannot_judge"] = True
    built = build(ratings=ratings)
    assert built.n_cannot_judge == 5 and built.n_ratings == len(ratings) - 5
    assert built.tables["raters"].set_index("rater").loc["r1", "cannot_judge"] == 1


def test_a_model_rating_each_item_is_compared_by_label_class_and_correlation():
    items = items_frame()
    answers = {}
    for row in items.itertuples():
        answers[row.item_key] = float(TARGETS[row.pair_id][(row.order, row.connective)])
    answers["t1:BA:after"] = None  # no answer: that ordered pair cannot be labelled
    built = build(model={"name": "m", "answer_kind": "ratings", "answers": answers})
    summary = built.tables["model_summary"].iloc[0]
    assert summary["no_answer"] == 1
    assert summary["accuracy"] == pytest.approx(5 / 6)
    assert summary["accuracy_answered"] == pytest.approx(1.0)
    assert built.figures["model_spearman"].value > 0.8
    confusion = built.tables["model_confusion"].set_index("human")
    assert confusion.loc["temporal-anti-iconic", "no_answer"] == 1
    assert confusion.loc["causal-iconic", "causal-iconic"] == 1
    assert set(built.tables["model_by_connective"]["connective"]) == {
        "so",
        "because",
        "then",
        "after",
    }
    assert built.model_ratings["model"].notna().sum() == 23


def test_a_model_choosing_connectives_is_compared_by_label():
    answers = {
        "c1|AB": "so",
        "c1|BA": "then",
        "t1|AB": "then",
        "t1|BA": "after",
        "u1|AB": "unrelated",
        "u1|BA": None,
    }
    built = build(model={"name": "m", "answer_kind": "choices", "answers": answers})
    summary = built.tables["model_summary"].iloc[0]
    assert summary["accuracy"] == pytest.approx(4 / 6)
    assert summary["no_answer"] == 1
    assert pd.isna(summary["spearman_items"])
    assert built.model_ratings is None


def test_no_ratings_gives_an_empty_report_with_a_note():
    built = build(ratings=ratings_frame().iloc[0:0])
    assert built.n_ratings == 0 and "labels" not in built.tables and built.notes


def test_table_rows_round_floats_and_blank_missing_values():
    frame = pd.DataFrame({"a": [0.123456, np.nan], "b": [True, False], "c": ["x", None]})
    columns, rows = report.table_rows(frame)
    assert columns == ["a", "b", "c"]
    assert rows == [["0.123", "yes", "x"], ["", "", ""]]


def test_plots_are_inline_svg_with_escaped_labels():
    built = build(model={"name": "<script>m</script>", "answer_kind": "ratings", "answers": {
        key: 5.0 for key in items_frame()["item_key"]}})  # fmt: skip
    subsets = (
        items_frame()
        .set_index("item_key")["pair_id"]
        .map(pairs_frame().set_index("pair_id")["subset"])
    )
    distributions = plots.rating_distributions(
        built.ratings, EXPLICA_CONNECTIVES, (1, 10), by_subset=subsets
    )
    assert distributions.startswith("<svg ") and distributions.rstrip().endswith("</svg>")
    for word in ("so", "because", "then", "after", "causal pairs"):
        assert word in distributions
    means = plots.mean_by_connective(built.item_means, EXPLICA_CONNECTIVES, subsets)
    assert "mean item rating" in means
    scatter = plots.model_scatter(
        built.model_ratings, EXPLICA_CONNECTIVES, (1, 10), model_name="<script>m</script>"
    )
    assert "<script>" not in scatter and "&lt;script&gt;" in scatter
    assert "<image" in scatter  # dots are rasterised


def test_dollar_signs_in_a_model_name_are_shown_as_typed_not_as_math():
    built = build(model={"name": "m", "answer_kind": "ratings", "answers": {
        key: 5.0 for key in items_frame()["item_key"]}})  # fmt: skip
    name = "llama $3$ vs $4$"
    scatter = plots.model_scatter(
        built.model_ratings, EXPLICA_CONNECTIVES, (1, 10), model_name=name
    )
    assert scatter.startswith("<svg ")
    # Drawn as plain text (mathtext would draw glyph paths and drop the dollar signs).
    assert ">llama $3$ vs $4$ rating</text>" in scatter
    assert ">llama $3$ vs $4$ · Spearman" in scatter


def test_reliability_figures_are_exactly_those_of_the_text_keys():
    """The report passes items to α as integer codes and picks the split-half's ratings by
    count (fast at a million ratings); the figures are exactly those of the item keys
    themselves, with items of a single rating left out of the split-half."""
    from agreement.stats import krippendorff_alpha as alpha_with_ci

    ratings = ratings_frame(seed=4)
    lone = ratings["item_key"] == ratings["item_key"].iloc[0]
    ratings = pd.concat([ratings.loc[~lone], ratings.loc[lone].head(1)], ignore_index=True)
    built = build(ratings=ratings, seed=3)
    long = pd.DataFrame({"item": ratings["item_key"], "value": ratings["rating"]})
    for level in ("ordinal", "interval"):
        expected = alpha_with_ci(
            long,
            level=level,
            value_domain=list(range(1, 11)),
            n_boot=report.ALPHA_BOOTSTRAP,
            seed=3,
        )
        figure = built.figures[f"alpha_{level}"]
        assert (figure.value, figure.low, figure.high) == (
            expected.value,
            expected.ci_low,
            expected.ci_high,
        )
    counts = ratings["item_key"].map(ratings["item_key"].value_counts())
    split = stats.split_half_reliability(ratings.loc[counts >= 2], n_splits=report.SPLITS, seed=3)
    assert built.figures["split_half"].value == split.spearman_brown
    row = built.tables["reliability"].iloc[2]
    assert row["n_ratings"] == len(ratings) - 1 and row["n_items"] == split.n_items


def test_distribution_panels_count_the_ratings_of_their_subset_and_connective():
    """Each panel's "n = …" is the number of rated answers of its (expected subset, connective),
    a missing or empty subset shown as "(none)", in the order subsets are listed."""
    import re

    ratings = ratings_frame(seed=5)
    ratings.loc[ratings.index % 5 == 0, "rating"] = np.nan
    items = items_frame()
    subsets = items.set_index("item_key")["pair_id"].map({"c1": "causal", "t1": "", "u1": None})
    svg = plots.rating_distributions(ratings, EXPLICA_CONNECTIVES, (1, 10), by_subset=subsets)
    rated = ratings.loc[ratings["rating"].notna()]
    subset_of = rated["item_key"].map(subsets).fillna("").replace("", "(none)")
    expected = [
        f"n = {int(((subset_of == subset) & (rated['connective'] == word)).sum()):,}"
        for subset in ("causal", "(none)")
        for word in EXPLICA_CONNECTIVES.words
    ]
    assert re.findall(r"n = [0-9,]+", svg) == expected
    assert "(none) pairs" in svg
