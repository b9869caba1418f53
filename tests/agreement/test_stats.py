"""Agreement statistics reproduce published figures and give defined answers at the edges."""

from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.stats import inter_rater

from agreement import stats as agreement
from agreement.stats import (
    annotator_agreement,
    cohen_kappa,
    count_matrix,
    fleiss_kappa,
    fleiss_kappa_codes,
    fleiss_kappa_counts,
    krippendorff_alpha,
    krippendorff_alpha_counts,
    krippendorff_alphas,
    percent_agreement,
)

# Fleiss (1971), "Measuring nominal scale agreement among many raters", Psychological Bulletin
# 76(5):378-382, Table 1: 30 patients, each diagnosed by 6 psychiatrists into 5 categories
# (depression, personality disorder, schizophrenia, neurosis, other). The same data ship as
# `diagnoses` in R's irr package; counted here by hand into items × categories.
FLEISS_1971 = np.array(
    [
        [0, 0, 0, 6, 0],
        [0, 3, 0, 0, 3],
        [0, 1, 4, 0, 1],
        [0, 0, 0, 0, 6],
        [0, 3, 0, 3, 0],
        [2, 0, 4, 0, 0],
        [0, 0, 4, 0, 2],
        [2, 0, 3, 1, 0],
        [2, 0, 0, 4, 0],
        [0, 0, 0, 0, 6],
        [1, 0, 0, 5, 0],
        [1, 1, 0, 4, 0],
        [0, 3, 3, 0, 0],
        [1, 0, 0, 5, 0],
        [0, 2, 0, 3, 1],
        [0, 0, 5, 0, 1],
        [3, 0, 0, 1, 2],
        [5, 1, 0, 0, 0],
        [0, 2, 0, 4, 0],
        [1, 0, 2, 0, 3],
        [0, 0, 0, 0, 6],
        [0, 1, 0, 5, 0],
        [0, 2, 0, 1, 3],
        [2, 0, 0, 4, 0],
        [1, 0, 0, 4, 1],
        [0, 5, 0, 1, 0],
        [4, 0, 0, 0, 2],
        [0, 2, 0, 4, 0],
        [1, 0, 5, 0, 0],
        [0, 0, 0, 0, 6],
    ]
)
DIAGNOSES = ["depression", "personality disorder", "schizophrenia", "neurosis", "other"]

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers ×
# 12 units, values 1-5, NaN = not coded. Rows are observers, columns units.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
        [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
    ]
)


def long_from_counts(counts: np.ndarray, labels=None) -> pd.DataFrame:
    """One row per rating; raters numbered within each item (Fleiss' raters differ per item)."""
    labels = list(range(counts.shape[1])) if labels is None else labels
    rows = []
    for item, row in enumerate(counts):
        values = [labels[k] for k, n in enumerate(row) for _ in range(n)]
        rows += [(item, rater, value) for rater, value in enumerate(values)]
    return pd.DataFrame(rows, columns=["item", "rater", "value"])


def long_from_reliability(matrix: np.ndarray) -> pd.DataFrame:
    """Observers × units (krippendorff's reliability_data layout) to the long table."""
    observers, units = np.indices(matrix.shape)
    return pd.DataFrame(
        {"item": units.ravel(), "rater": observers.ravel(), "value": matrix.ravel()}
    )


def long_from_contingency(table: np.ndarray, labels: list) -> pd.DataFrame:
    """Two raters' contingency table (rows rater a, columns rater b) to the long table."""
    first, second = [], []
    for i, j in np.ndindex(table.shape):
        first += [labels[i]] * int(table[i, j])
        second += [labels[j]] * int(table[i, j])
    n = len(first)
    return pd.DataFrame(
        {
            "item": np.r_[np.arange(n), np.arange(n)],
            "rater": ["a"] * n + ["b"] * n,
            "value": first + second,
        }
    )


def same_value(left, right, tolerance=1e-9) -> bool:
    if left is None or right is None:
        return left is None and right is None
    return math.isclose(left, right, abs_tol=tolerance)


# --- Published values ---------------------------------------------------------------------------


def test_fleiss_1971_table_reproduces_published_kappa_and_per_category_kappas():
    result = fleiss_kappa(pd.DataFrame(FLEISS_1971, columns=DIAGNOSES))

    # Fleiss (1971): κ = .430; irr kappam.fleiss(diagnoses, detail=TRUE): z = 17.652 and
    # per-category κ .245 .245 .520 .471 .566 with z 5.192 5.192 11.031 9.994 12.009.
    assert result.value == pytest.approx(0.430, abs=5e-4)
    assert result.details["z"] == pytest.approx(17.652, abs=5e-3)
    per_category = result.details["per_category"]
    assert [row["category"] for row in per_category] == DIAGNOSES
    assert [row["kappa"] for row in per_category] == pytest.approx(
        [0.245, 0.245, 0.520, 0.471, 0.566], abs=5e-4
    )
    assert [row["z"] for row in per_category] == pytest.approx(
        [5.192, 5.192, 11.031, 9.994, 12.009], abs=5e-3
    )
    assert result.n_items == 30 and result.n_annotations == 180
    assert result.se_null == pytest.approx(result.value / 17.652, rel=1e-3)


def test_fleiss_kappa_value_is_statsmodels_on_raw_ratings():
    # The same table as raw subject × rater codes, aggregated the statsmodels way.
    raw = np.array([[k for k, n in enumerate(row) for _ in range(n)] for row in FLEISS_1971])
    table, _ = inter_rater.aggregate_raters(raw)
    expected = inter_rater.fleiss_kappa(table)

    counts, labels = count_matrix(long_from_counts(FLEISS_1971))

    assert np.array_equal(counts, table)
    assert labels == [0, 1, 2, 3, 4]
    assert fleiss_kappa(long_from_counts(FLEISS_1971)).value == pytest.approx(expected, abs=1e-12)


def test_gwet_standard_error_matches_irrcac_for_equal_raters():
    # irrCAC README: fleiss.kappa.dist(distrib.6raters) — the first 15 rows of Fleiss' table —
    # coeff 0.4139265, stderr 0.08119291, conf.int (0.24, 0.588), pa 0.5511111, pe 0.2340741.
    result = fleiss_kappa_counts(FLEISS_1971[:15])

    assert result.value == pytest.approx(0.4139265, abs=1e-7)
    assert result.se == pytest.approx(0.08119291, abs=1e-8)
    assert (round(result.ci_low, 3), round(result.ci_high, 3)) == (0.240, 0.588)
    assert result.details["observed_agreement"] == pytest.approx(0.5511111, abs=1e-7)
    assert result.details["expected_agreement"] == pytest.approx(0.2340741, abs=1e-7)
    assert result.ci_method == "gwet_linearisation_t"
    assert result.se_null is not None and result.se_null < result.se


def test_unequal_raters_use_generalised_fleiss_as_irrcac():
    # irrCAC README: fleiss.kappa.raw(cac.raw4raters) — Krippendorff's 4 × 12 data, where units
    # have 1-4 ratings — pa 0.8181818, pe 0.2387153, κ 0.76117, se 0.15302, conf.int (0.424, 1).
    result = fleiss_kappa(long_from_reliability(KRIPPENDORFF_2011))

    assert result.value == pytest.approx(0.76117, abs=5e-6)
    assert result.se == pytest.approx(0.15302, abs=5e-6)
    assert (round(result.ci_low, 3), result.ci_high) == (0.424, 1.0)
    assert result.details["observed_agreement"] == pytest.approx(0.8181818, abs=1e-7)
    assert result.details["expected_agreement"] == pytest.approx(0.2387153, abs=1e-7)
    assert result.details["items_single_rating"] == 1
    assert result.details["annotations_dropped_missing"] == 7
    assert "generalised" in result.note
    assert result.se_null is None  # Fleiss–Nee–Landis needs a fixed number of raters
    assert result.n_raters == 4 and result.n_items == 12 and result.n_annotations == 41


def test_percent_agreement_matches_irrcac():
    # irrCAC README: pa.coeff.raw(cac.raw4raters): 0.8181818, se 0.12561, conf.int (0.542, 1).
    result = percent_agreement(long_from_reliability(KRIPPENDORFF_2011))

    assert result.value == pytest.approx(0.8181818, abs=1e-7)
    assert result.se == pytest.approx(0.12561, abs=5e-6)
    assert (round(result.ci_low, 3), result.ci_high) == (0.542, 1.0)


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_krippendorff_2011_example(level, published):
    result = krippendorff_alpha(long_from_reliability(KRIPPENDORFF_2011), level=level)

    assert round(result.value, 3) == published
    assert result.metric == f"krippendorff_alpha_{level}"
    assert result.details["units_pairable"] == 11
    assert result.n_items == 12 and result.n_raters == 4


def test_krippendorff_ordinal_labels_follow_value_domain():
    words = {1: "very low", 2: "low", 3: "mid", 4: "high", 5: "very high"}
    table = long_from_reliability(KRIPPENDORFF_2011)
    table["value"] = table["value"].map(words)

    result = krippendorff_alpha(table, level="ordinal", value_domain=list(words.values()))

    assert round(result.value, 3) == 0.815
    with pytest.raises(ValueError, match="value_domain"):
        krippendorff_alpha(table, level="ordinal")


def test_krippendorff_level_is_required():
    with pytest.raises(TypeError):
        krippendorff_alpha(long_from_reliability(KRIPPENDORFF_2011))  # type: ignore[call-arg]


def test_cohen_kappa_textbook_two_by_two():
    # 50 proposals read by two readers: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no.
    # Observed agreement .70, chance agreement .50, κ = .40 (the classic Wikipedia example).
    table = long_from_contingency(np.array([[20, 5], [10, 15]]), ["yes", "no"])

    result = cohen_kappa(table)

    assert result.value == pytest.approx(0.4, abs=1e-12)
    assert result.details["observed_agreement"] == pytest.approx(0.7)
    assert result.details["expected_agreement"] == pytest.approx(0.5)
    assert result.n_items == 50


def test_cohen_kappa_standard_errors_match_stata():
    # Statalist (2009-12, msg00320): a 2 × 2 table of 1,932 subjects. Stata's kapci gives
    # κ .3411969, analytic se .0262914 and CI (.2896668, .3927271); kap gives the null se .0220367.
    table = long_from_contingency(np.array([[1395, 118], [261, 158]]), [0, 1])

    result = cohen_kappa(table)

    assert result.value == pytest.approx(0.3411969, abs=1e-7)
    assert result.se == pytest.approx(0.0262914, abs=1e-7)
    assert result.ci_low == pytest.approx(0.2896668, abs=1e-6)
    assert result.ci_high == pytest.approx(0.3927271, abs=1e-6)
    assert result.se_null == pytest.approx(0.0220367, abs=1e-7)


# --- Edge cases ---------------------------------------------------------------------------------


def test_unused_category_leaves_kappa_unchanged_and_has_undefined_per_category_kappa():
    with_unused = np.c_[FLEISS_1971, np.zeros(30, dtype=int)]

    result = fleiss_kappa_counts(with_unused, categories=[*DIAGNOSES, "unused"])

    assert result.value == pytest.approx(fleiss_kappa_counts(FLEISS_1971).value, abs=1e-12)
    unused = result.details["per_category"][-1]
    assert unused["category"] == "unused" and unused["kappa"] is None
    assert "No rating used" in unused["note"]


def test_declared_categories_include_unused_ones_in_long_tables():
    table = long_from_counts(FLEISS_1971, DIAGNOSES)

    result = fleiss_kappa(table, categories=[*DIAGNOSES, "unused"])

    assert result.details["categories"][-1] == "unused"
    assert result.details["per_category"][-1]["kappa"] is None
    with pytest.raises(ValueError, match="outside the declared categories"):
        fleiss_kappa(table, categories=DIAGNOSES[:4])


def test_single_item_has_a_kappa_but_no_standard_error():
    result = fleiss_kappa_counts(np.array([[2, 1]]))

    # P̄ = 1/3, prevalence (2/3, 1/3), P̄e = 5/9, κ = (1/3 − 5/9) / (4/9) = −0.5.
    assert result.value == pytest.approx(-0.5)
    assert result.se is None and result.ci_low is None and result.ci_high is None
    assert "one item" in result.note


def test_all_ratings_in_one_category_makes_kappa_undefined():
    result = fleiss_kappa_counts(np.array([[3, 0], [3, 0], [3, 0]]))

    assert result.value is None
    assert "expected agreement is 1" in result.note
    assert result.details["observed_agreement"] == 1.0
    assert result.details["expected_agreement"] == 1.0


def test_perfect_agreement_across_categories_is_kappa_one():
    result = fleiss_kappa_counts(np.array([[3, 0], [0, 3], [3, 0], [0, 3]]))

    assert result.value == pytest.approx(1.0)
    assert result.se == pytest.approx(0.0)
    assert result.ci_high == 1.0
    alpha = krippendorff_alpha(long_from_counts(np.array([[3, 0], [0, 3]])), level="nominal")
    assert alpha.value == pytest.approx(1.0)


def test_items_with_a_single_rating_only_is_undefined():
    table = pd.DataFrame({"item": [1, 2, 3], "rater": ["a", "b", "c"], "value": ["x", "y", "x"]})

    for result in (fleiss_kappa(table), percent_agreement(table)):
        assert result.value is None
        assert "two or more ratings" in result.note
    alpha = krippendorff_alpha(table, level="nominal")
    assert alpha.value is None and "two or more values" in alpha.note


def test_missing_values_are_dropped_not_treated_as_a_category():
    table = long_from_counts(FLEISS_1971, DIAGNOSES)
    with_missing = pd.concat(
        [
            table,
            pd.DataFrame(
                {"item": [0, 1, 2], "rater": [90, 91, 92], "value": [None, np.nan, pd.NA]}
            ),
        ],
        ignore_index=True,
    )

    result = fleiss_kappa(with_missing)

    assert result.value == pytest.approx(fleiss_kappa(table).value, abs=1e-12)
    assert result.details["annotations_dropped_missing"] == 3
    assert result.details["categories"] == sorted(DIAGNOSES)
    assert result.note is None  # every item still has six ratings


def test_unequal_raters_never_raise():
    table = pd.DataFrame(
        {
            "item": [1, 1, 1, 2, 2, 3, 3, 3, 3],
            "rater": ["a", "b", "c", "a", "b", "a", "b", "c", "d"],
            "value": ["x", "x", "y", "y", "y", "x", "x", "x", "y"],
        }
    )

    result = fleiss_kappa(table)

    assert result.defined and "2–4 ratings" in result.note
    assert result.details["raters_per_item"] == {"min": 2, "max": 4, "mean": 3.0}


def test_empty_table_is_undefined():
    empty = pd.DataFrame({"item": [], "rater": [], "value": []})

    result = fleiss_kappa(empty)

    assert result.value is None and result.n_items == 0 and result.n_annotations == 0


def test_duplicate_rater_on_an_item_is_refused():
    table = pd.DataFrame({"item": [1, 1, 1], "rater": ["a", "a", "b"], "value": ["x", "y", "x"]})

    with pytest.raises(ValueError, match="duplicate"):
        fleiss_kappa(table)


def test_missing_columns_are_refused():
    with pytest.raises(ValueError, match="value"):
        fleiss_kappa(pd.DataFrame({"item": [1], "rater": ["a"], "label": ["x"]}))


def test_krippendorff_identical_values_are_undefined():
    table = pd.DataFrame(
        {"item": [1, 1, 2, 2], "rater": ["a", "b", "a", "b"], "value": [3, 3, 3, 3]}
    )

    result = krippendorff_alpha(table, level="interval")

    assert result.value is None and "identical" in result.note


def test_krippendorff_interval_needs_numbers():
    table = pd.DataFrame({"item": [1, 1], "rater": ["a", "b"], "value": ["x", "y"]})

    with pytest.raises(ValueError, match="numeric"):
        krippendorff_alpha(table, level="interval")


def test_cohen_kappa_needs_two_raters_and_reports_unshared_items():
    table = pd.DataFrame(
        {
            "item": [1, 1, 1, 2, 2, 3, 4],
            "rater": ["a", "b", "c", "a", "b", "a", "c"],
            "value": ["x", "x", "y", "y", "x", "x", "y"],
        }
    )

    with pytest.raises(ValueError, match="exactly two"):
        cohen_kappa(table)
    result = cohen_kappa(table, raters=("a", "b"))
    assert result.n_items == 2
    assert result.details["items_not_shared"] == 1  # item 3 was rated by a alone
    with pytest.raises(ValueError, match="no annotations"):
        cohen_kappa(table, raters=("a", "z"))


def test_cohen_kappa_with_one_shared_category_is_undefined():
    table = long_from_contingency(np.array([[4, 0], [0, 0]]), ["x", "y"])

    result = cohen_kappa(table)

    assert result.value is None and "chance agreement is 1" in result.note


def test_results_serialise_to_strict_json():
    table = long_from_reliability(KRIPPENDORFF_2011)
    results = [
        fleiss_kappa(table),
        fleiss_kappa(table, ci="bootstrap", n_boot=200, seed=1),
        fleiss_kappa_counts(np.array([[3, 0], [3, 0]])),
        percent_agreement(table),
        krippendorff_alpha(table, level="ordinal", n_boot=200),
        cohen_kappa(table, raters=(1, 3)),
    ]
    for result in results:
        payload = json.loads(json.dumps(result.to_dict(), allow_nan=False))
        assert payload["metric"] == result.metric
        assert payload["value"] == result.value


# --- Fast path and bootstrap --------------------------------------------------------------------


def test_codes_path_equals_long_table_path_with_sparse_ids_and_missing_codes():
    table = long_from_counts(FLEISS_1971)
    item_ids = table["item"].to_numpy() * 1_000_003 + 17  # database-like sparse ids
    value_codes = table["value"].to_numpy()
    item_ids = np.r_[item_ids, 5]
    value_codes = np.r_[value_codes, -1]  # a missing answer

    result = fleiss_kappa_codes(
        item_ids, value_codes, categories=DIAGNOSES, rater_codes=np.r_[table["rater"], 0]
    )

    expected = fleiss_kappa(long_from_counts(FLEISS_1971, DIAGNOSES), categories=DIAGNOSES)
    assert result.value == pytest.approx(expected.value, abs=1e-12)
    assert result.se == pytest.approx(expected.se, abs=1e-12)
    assert result.details["per_category"] == expected.details["per_category"]
    assert result.details["annotations_dropped_missing"] == 1
    assert result.n_raters == 6
    with pytest.raises(ValueError, match="outside"):
        fleiss_kappa_codes(np.array([0, 0]), np.array([0, 5]), n_categories=3)


def test_bootstrap_is_seeded_and_agrees_with_a_naive_bootstrap():
    first = fleiss_kappa_counts(FLEISS_1971, ci="bootstrap", n_boot=2000, seed=7)
    again = fleiss_kappa_counts(FLEISS_1971, ci="bootstrap", n_boot=2000, seed=7)
    other = fleiss_kappa_counts(FLEISS_1971, ci="bootstrap", n_boot=2000, seed=8)

    assert (first.ci_low, first.ci_high, first.se) == (again.ci_low, again.ci_high, again.se)
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)
    assert first.ci_low < first.value < first.ci_high
    assert first.ci_method == "bootstrap_items_percentile"
    # A plain loop resampling item indices estimates the same spread.
    rng = np.random.default_rng(123)
    naive = [inter_rater.fleiss_kappa(FLEISS_1971[rng.integers(0, 30, 30)]) for _ in range(1000)]
    assert first.se == pytest.approx(np.std(naive, ddof=1), rel=0.12)
    assert first.se == pytest.approx(first.details["se_gwet"], rel=0.2)


def test_pattern_weighted_alpha_equals_krippendorff_package(monkeypatch):
    rng = np.random.default_rng(3)
    data = rng.integers(1, 6, size=(5, 40)).astype(float)
    data[rng.random(data.shape) < 0.25] = np.nan
    table = long_from_reliability(data)
    dense = {
        level: krippendorff_alpha(table, level=level).value
        for level in ("nominal", "ordinal", "interval", "ratio")
    }
    monkeypatch.setattr(agreement, "_KRIPPENDORFF_DENSE_LIMIT", 0)

    for level, value in dense.items():
        direct = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        result = krippendorff_alpha(table, level=level)
        assert result.details["computed_with"].startswith("pattern-weighted")
        assert result.value == pytest.approx(value, abs=1e-12)
        assert result.value == pytest.approx(direct, abs=1e-12)


def test_krippendorff_bootstrap_interval_brackets_alpha():
    table = long_from_reliability(KRIPPENDORFF_2011)

    result = krippendorff_alpha(table, level="interval", n_boot=1000, seed=2)
    again = krippendorff_alpha(table, level="interval", n_boot=1000, seed=2)

    assert result.ci_low < result.value <= result.ci_high <= 1.0
    assert (result.ci_low, result.ci_high) == (again.ci_low, again.ci_high)
    assert result.se > 0


# --- Per-annotator agreement --------------------------------------------------------------------


def test_annotator_agreement_with_leave_one_out_majority_and_gold():
    table = pd.DataFrame(
        [
            ("i1", "A", "x"), ("i1", "B", "x"), ("i1", "C", "y"),
            ("i2", "A", "x"), ("i2", "B", "y"), ("i2", "C", "z"),
            ("i3", "A", "y"), ("i3", "B", "y"), ("i3", "C", "y"),
            ("i4", "A", "x"), ("i4", "B", "x"),
        ],
        columns=["item", "rater", "value"],
    )  # fmt: skip
    gold = {"i1": "y", "i2": "z", "i3": "y", "i9": "x"}

    by_rater = {row.rater: row for row in annotator_agreement(table, gold=gold)}

    # A: i1 others {x, y} tie, i2 others {y, z} tie, i3 others {y, y} agree, i4 others {x} agree.
    assert (by_rater["A"].n_compared, by_rater["A"].n_agree) == (2, 2)
    # C: i1 others {x, x} disagree, i2 others {x, y} tie, i3 agree.
    assert (by_rater["C"].n_compared, by_rater["C"].n_agree) == (2, 1)
    assert by_rater["C"].majority_agreement == 0.5
    assert (by_rater["A"].n_gold, by_rater["A"].n_gold_agree) == (3, 1)
    assert by_rater["C"].gold_agreement == 1.0
    assert by_rater["C"].n_annotations == 3 and by_rater["A"].n_annotations == 4
    assert list(by_rater) == ["A", "B", "C"]
    assert json.dumps([row.to_dict() for row in by_rater.values()])


def test_annotator_agreement_strict_majority_and_undefined_rates():
    table = pd.DataFrame(
        {
            "item": [1, 1, 1, 1, 1, 2],
            "rater": ["A", "B", "C", "D", "E", "F"],
            "value": ["w", "x", "x", "y", "z", "x"],
        }
    )

    plurality = {row.rater: row for row in annotator_agreement(table)}
    strict = {row.rater: row for row in annotator_agreement(table, strict_majority=True)}

    # For A the others are {x, x, y, z}: x is the unique mode but not more than half.
    assert (plurality["A"].n_compared, plurality["A"].n_agree) == (1, 0)
    assert strict["A"].n_compared == 0 and strict["A"].majority_agreement is None
    # F rated an item nobody else rated; no gold was given.
    assert plurality["F"].majority_agreement is None and plurality["F"].gold_agreement is None


# --- Properties ---------------------------------------------------------------------------------


@st.composite
def rating_tables(draw):
    n_items = draw(st.integers(2, 7))
    n_raters = draw(st.integers(2, 4))
    n_categories = draw(st.integers(2, 4))
    cells = draw(
        st.lists(
            st.one_of(st.none(), st.integers(0, n_categories - 1)),
            min_size=n_items * n_raters,
            max_size=n_items * n_raters,
        )
    )
    rows = [
        (item, rater, cells[item * n_raters + rater])
        for item in range(n_items)
        for rater in range(n_raters)
        if cells[item * n_raters + rater] is not None
    ]
    table = pd.DataFrame(rows, columns=["item", "rater", "value"])
    return table, n_categories


def shuffled_names(prefix: str, column: pd.Series, random) -> list[str]:
    names = [f"{prefix}-{k}" for k in range(column.nunique())]
    random.shuffle(names)
    return names


def alpha_nominal(table: pd.DataFrame) -> float | None:
    return krippendorff_alpha(table, level="nominal").value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rating_tables(), st.randoms(use_true_random=False))
def test_relabelling_and_permuting_leave_kappa_and_alpha_unchanged(drawn, random):
    table, n_categories = drawn
    kappa, alpha = fleiss_kappa(table).value, alpha_nominal(table)

    relabel = list(range(n_categories))
    random.shuffle(relabel)
    relabelled = table.assign(value=table["value"].map(lambda v: f"category-{relabel[v]}"))
    item_names = dict(
        zip(table["item"].unique(), shuffled_names("item", table["item"], random), strict=True)
    )
    rater_names = dict(
        zip(table["rater"].unique(), shuffled_names("rater", table["rater"], random), strict=True)
    )
    permuted = table.assign(
        item=table["item"].map(item_names), rater=table["rater"].map(rater_names)
    ).sample(frac=1, random_state=random.randint(0, 10_000))

    for variant in (relabelled, permuted):
        assert same_value(fleiss_kappa(variant).value, kappa)
        assert same_value(alpha_nominal(variant), alpha)
    if kappa is not None:
        assert kappa <= 1 + 1e-12
    if alpha is not None:
        assert alpha <= 1 + 1e-12


@settings(max_examples=40, deadline=None)
@given(rating_tables())
def test_perfect_agreement_is_one_or_undefined(drawn):
    table, _ = drawn
    first_value = table.groupby("item")["value"].transform("first")
    unanimous = table.assign(value=first_value)

    result = fleiss_kappa(unanimous)

    if result.value is None:
        # Only when the unanimous items all share one category or none has two ratings.
        assert result.note
    else:
        assert result.value == pytest.approx(1.0)


# Shrout & Fleiss (1979), Table 2: six targets rated by four judges.
SHROUT_FLEISS = [
    [9, 2, 5, 8],
    [6, 1, 3, 2],
    [8, 4, 6, 8],
    [7, 1, 2, 6],
    [10, 5, 6, 9],
    [6, 2, 4, 7],
]


@pytest.mark.parametrize(
    ("form", "published", "ci"),
    [("ICC1", 0.17, (-0.13, 0.72)), ("ICC2", 0.29, (0.02, 0.76)), ("ICC3", 0.71, (0.34, 0.95))],
)
def test_icc_reproduces_shrout_and_fleiss(form, published, ci):
    frame = pd.DataFrame(
        [
            {"item": i, "rater": j, "value": v}
            for i, row in enumerate(SHROUT_FLEISS)
            for j, v in enumerate(row)
        ]
    )
    result = agreement.icc(frame, form=form)
    # The published table rounds to two places; the intervals are McGraw & Wong's (1996).
    assert round(result.value, 2) == published
    assert (round(result.ci_low, 2), round(result.ci_high, 2)) == ci
    assert (result.n_items, result.n_raters) == (6, 4)


def test_icc_drops_incomplete_items_and_is_undefined_without_two_complete_ones():
    frame = pd.DataFrame(
        [
            {"item": "a", "rater": 0, "value": 8},
            {"item": "a", "rater": 1, "value": 9},
            {"item": "b", "rater": 0, "value": 3},
        ]
    )
    result = agreement.icc(frame)
    assert result.value is None and result.details["items_dropped"] == 1
    constant = pd.DataFrame(
        [{"item": i, "rater": r, "value": 5} for i in range(3) for r in range(2)]
    )
    assert agreement.icc(constant).value is None


def test_alpha_at_two_levels_draws_its_bootstrap_once_and_equals_each_level_alone(monkeypatch):
    rng = np.random.default_rng(4)
    table = pd.DataFrame(
        {
            "item": np.repeat(np.arange(300), 3),
            "rater": np.tile([1, 2, 3], 300),
            "value": rng.integers(1, 8, size=900).astype(float),
        }
    )
    alone = [
        krippendorff_alpha(table, level=level, n_boot=300, seed=7).to_dict()
        for level in ("interval", "ordinal")
    ]
    draws = []
    original = agreement._multinomial_chunks

    def counted(frequency, n_boot, seed):
        draws.append(seed)
        return original(frequency, n_boot, seed)

    monkeypatch.setattr(agreement, "_multinomial_chunks", counted)
    together = krippendorff_alphas(table, levels=("interval", "ordinal"), n_boot=300, seed=7)
    assert len(draws) == 1  # one resampling of the units for both levels
    assert [result.to_dict() for result in together] == alone  # identical, not merely close
    assert together[0].ci_low != together[1].ci_low  # two levels, two intervals


def test_alpha_from_a_count_matrix_equals_alpha_from_the_long_table():
    table = long_from_reliability(KRIPPENDORFF_2011)
    counts, labels = count_matrix(table)
    for level in ("nominal", "interval", "ordinal"):
        (from_counts,) = krippendorff_alpha_counts(
            counts, levels=(level,), value_domain=labels, n_boot=50, seed=2, n_raters=4
        )
        expected = krippendorff_alpha(table, level=level, n_boot=50, seed=2).to_dict()
        got = from_counts.to_dict()
        expected["details"].pop("annotations_dropped_missing")
        got["details"].pop("annotations_dropped_missing")
        assert got == expected
    with pytest.raises(ValueError, match="domain"):
        krippendorff_alpha_counts(counts, levels=("nominal",), value_domain=labels[:-1])


def _close(got, want):
    if isinstance(want, dict):
        assert set(got) == set(want)
        for key in want:
            _close(got[key], want[key])
    elif isinstance(want, list):
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            _close(a, b)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    else:
        assert got == want


@pytest.mark.parametrize("seed", range(5))
def test_statistics_of_distinct_rows_with_frequencies_equal_those_of_the_repeated_rows(seed):
    """``frequency=``: each distinct row stands for that many items; every figure (value, SEs,
    CIs, bootstrap included, per-category κ, counts) is that of the matrix with the rows
    repeated, up to float sums."""
    rng = np.random.default_rng(seed)
    patterns = rng.integers(0, 4, size=(25, 3))
    patterns[0] = 0  # a row with no rating
    frequency = rng.integers(0, 40, size=25)
    repeated = np.repeat(patterns, frequency, axis=0)
    for ci in ("analytic", "bootstrap"):
        _close(
            fleiss_kappa_counts(patterns, frequency=frequency, ci=ci, n_boot=300).to_dict(),
            fleiss_kappa_counts(repeated, ci=ci, n_boot=300).to_dict(),
        )
    equal = np.array([[3, 0, 0], [1, 2, 0], [0, 1, 2], [1, 1, 1]])
    weights = np.array([5, 9, 2, 4])
    _close(
        fleiss_kappa_counts(equal, frequency=weights).to_dict(),
        fleiss_kappa_counts(np.repeat(equal, weights, axis=0)).to_dict(),
    )
    _close(
        percent_agreement(patterns, frequency=frequency).to_dict(),
        percent_agreement(repeated).to_dict(),
    )
    for level in ("nominal", "ordinal", "interval"):
        (weighted,) = krippendorff_alpha_counts(
            patterns, levels=(level,), value_domain=[1, 2, 5], n_boot=200, frequency=frequency
        )
        (plain,) = krippendorff_alpha_counts(
            repeated, levels=(level,), value_domain=[1, 2, 5], n_boot=200
        )
        got, want = weighted.to_dict(), plain.to_dict()
        assert got["details"].pop("computed_with") != want["details"].pop("computed_with")
        _close(got, want)
    with pytest.raises(ValueError, match="frequency"):
        fleiss_kappa_counts(patterns, frequency=frequency[:-1])
