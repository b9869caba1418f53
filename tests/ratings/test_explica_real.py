"""ExpliCa's released files, read from the shared folder beside the checkout (never copied into
the repository). Skipped when that folder is absent."""

import numpy as np
import pandas as pd
import pytest

from ratings import explica, stats
from ratings.connectives import common_words, expand_pair
from ratings.stats import LabelRule
from tests.ratings.conftest import explica_data_dir

DATA = explica_data_dir()
pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(DATA is None, reason="shared ExpliCa data folder not found"),
]
ZERO_SHOT = "res/acceptability/zeroshot/accept_res_outlines_{}.tsv"


@pytest.fixture(scope="module")
def ordered_pairs():
    return explica.read_ordered_pairs(DATA / "explica" / "explica_freq_4800.tsv")


@pytest.fixture(scope="module")
def gpt4o(ordered_pairs):
    return explica.read_acceptability_file(DATA / ZERO_SHOT.format("gpt-4o_zero"), ordered_pairs)


@pytest.fixture(scope="module")
def items(gpt4o):
    return stats.item_summary(gpt4o.ratings)


def test_files_read_into_pairs_items_and_fifteen_ratings_each(ordered_pairs, gpt4o, items):
    assert len(ordered_pairs) == 1200
    assert ordered_pairs["order"].value_counts().to_dict() == {"AB": 600, "BA": 600}
    assert ordered_pairs["subset"].value_counts().to_dict() == {
        "causal": 400,
        "temporal": 400,
        "unrelated": 400,
    }
    assert set(ordered_pairs["origin"]) == {"hand-written", "DeScript", "e-CARE", "BIG-Bench"}
    assert ordered_pairs["socially_challenging"].sum() == 140
    assert len(gpt4o.ratings) == 4800 * 15
    assert gpt4o.ratings["rater"].isna().all()
    assert (items["n"] == 15).all()
    assert gpt4o.ratings["rating"].between(1, 10).all()


def test_the_small_pair_file_agrees_with_the_large_one(ordered_pairs):
    small = explica.read_ordered_pairs(DATA / "explica" / "explica.csv")
    columns = ["pair_id", "order", "first", "second", "published_so", "published_because"]
    pd.testing.assert_frame_equal(small[columns], ordered_pairs[columns])


def test_recomputed_means_and_sds_equal_the_published_ones(ordered_pairs, gpt4o, items):
    merged = items.merge(gpt4o.items, on="item_key")
    assert np.allclose(merged["mean"], merged["published_mean"], rtol=0, atol=1e-9)
    assert np.allclose(merged["sd"], merged["published_sd"], rtol=0, atol=1e-9)
    published = explica.published_items(ordered_pairs).merge(items, on="item_key")
    assert len(published) == 4800
    assert np.allclose(published["mean_x"], published["mean_y"], rtol=0, atol=1e-9)


def test_default_rule_reproduces_every_published_label(ordered_pairs, gpt4o, items):
    from_raw = stats.pair_labels(items)
    assert explica.compare_with_published(from_raw, ordered_pairs).empty
    from_published = stats.pair_labels(explica.published_items(ordered_pairs))
    assert explica.compare_with_published(from_published, ordered_pairs).empty
    assert int(from_raw["tied"].sum()) == 23


def test_other_readings_of_the_rule_do_not(ordered_pairs, items):
    def differences(**settings):
        return explica.compare_with_published(
            stats.pair_labels(items, rule=LabelRule(**settings)), ordered_pairs
        )

    not_above_six = differences(best_mean_inclusive=True)
    assert len(not_above_six) == 5
    assert np.allclose(not_above_six["best_mean"], 6.0)
    assert (not_above_six["label"] == "unrelated").all()
    best_only = differences(overall_mean_threshold=None)
    assert best_only[["pair_id", "order"]].values.tolist() == [[548, "AB"]]
    assert len(differences(overall_mean_scope="pair")) == 3
    assert len(differences(tie_priority=("so", "because", "then", "after"))) == 2
    assert len(differences(tie_break="unresolved")) == 8


def test_class_counts_match_the_published_labels(ordered_pairs, items):
    labels = stats.pair_labels(items).merge(ordered_pairs, on=["pair_id", "order"])
    counts = stats.class_counts(labels)
    published = ordered_pairs["published_label"].value_counts()
    for label, count in published.items():
        assert counts.loc["all", label] == count
    by_subset = stats.class_counts(labels, by="subset")
    assert by_subset.loc["unrelated", "total"] == 400
    assert by_subset.loc["causal", ["causal-iconic", "causal-anti-iconic"]].sum() > 300
    by_origin = stats.class_counts(labels, by="origin")
    assert by_origin.loc["all", "total"] == 1200 == by_origin.drop("all")["total"].sum()


def test_reliability_figures(gpt4o):
    ratings = gpt4o.ratings
    ordinal = stats.krippendorff_alpha(ratings, level="ordinal", value_domain=range(1, 11))
    interval = stats.krippendorff_alpha(ratings, level="interval", value_domain=range(1, 11))
    assert ordinal == pytest.approx(0.4502, abs=1e-3)
    assert interval == pytest.approx(0.4694, abs=1e-3)
    split = stats.split_half_reliability(ratings, n_splits=40, seed=0)
    assert split.n_items == 4800
    assert split.r_half == pytest.approx(0.869, abs=0.01)
    assert split.spearman_brown == pytest.approx(0.930, abs=0.01)
    with pytest.raises(ValueError, match="anonymous"):
        stats.rater_consistency(ratings)


def test_expanding_the_pairs_gives_the_released_items(ordered_pairs, gpt4o):
    pairs = explica.pairs_from_ordered(ordered_pairs)
    records = pairs.to_dict("records")
    common = common_words(s for pair in records for s in (pair["sentence_a"], pair["sentence_b"]))
    released = gpt4o.items.set_index("item_key")["text"]

    def same_as_released(common):
        variants = [variant for pair in records for variant in expand_pair(pair, common=common)]
        assert len(variants) == 4800
        texts = pd.DataFrame(variants).set_index("item_key")["text"]
        assert set(texts.index) == set(released.index)
        expected = released.reindex(texts.index)
        assert (texts.str.lower() == expected.str.lower()).sum() >= 4790
        return int((texts == expected).sum())

    # ExpliCa lower-cased with a named-entity tagger; we lower closed-class words, and common
    # words when the file itself uses them in lower case (ratings/connectives.py; FIDELITY.md).
    closed_class_only = same_as_released(frozenset())
    with_the_files_words = same_as_released(common)
    assert closed_class_only == 4524
    assert with_the_files_words == 4564


def test_model_comparison_counts_unparsed_answers_as_no_answer(gpt4o, items):
    model = gpt4o.items[["item_key", "model_rating"]].rename(columns={"model_rating": "rating"})
    assert model["rating"].isna().sum() == 1201
    human = stats.pair_labels(items)
    labels = stats.model_pair_labels(model, items)
    result = stats.compare_with_humans(human, labels, human_items=items, model_ratings=model)
    assert result.n_pairs == 1200
    assert result.n_no_answer == (labels["label"] == "no_answer").sum() > 0
    assert result.n_items_correlated == 4800 - 1201
    assert result.accuracy < result.accuracy_answered
    assert result.confusion.to_numpy().sum() == 1200
    assert 0.5 < result.spearman < 1


def test_the_constrained_model_answer_column_can_be_chosen(ordered_pairs):
    outlines = explica.read_acceptability_file(
        DATA / ZERO_SHOT.format("gpt-4o_zero"),
        ordered_pairs,
        model_column="generated_answer_outlines",
    )
    assert outlines.model == "gpt-4o_zero"
    assert outlines.items["model_rating"].notna().all()
    assert outlines.items["model_rating"].between(1, 10).all()


def test_the_split_half_gives_exactly_the_previous_figures_on_explica(gpt4o):
    """The split-half was rewritten to run at a million ratings (ratings/stats.py); on
    ExpliCa's 72,000 ratings its splits are exactly those of the previous algorithm."""
    from tests.ratings.test_stats import _previous_split_half_by_rating

    result = stats.split_half_reliability(gpt4o.ratings, n_splits=50, seed=0)
    previous = _previous_split_half_by_rating(gpt4o.ratings, 50, 0)
    assert np.array_equal(result.per_split, previous)
