"""Dawid–Skene, MACE and GLAD (agreement/aggregation/estimators.py) without a database: on planted
data (seeded) each recovers the truth better than majority vote by a stated margin and finds the
spammers; the bootstrap intervals are seeded; and each agrees with crowd-kit on crowd-kit's own
toy data (crowd-kit is a test dependency, pyproject's ``dev`` extra; those tests skip only where
it is not installed, and say so)."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.aggregation import estimators
from agreement.aggregation.planted import planted_votes

#: Eight careful annotators of known accuracy and three spammers (two always answer label 0,
#: one answers at random), five annotators per item, three labels, 400 items.
ACCURACIES = (0.9, 0.85, 0.8, 0.75, 0.7, 0.7, 0.65, 0.6, None, None, None)
SPAMMERS = (8, 9, 10)


@pytest.fixture(scope="module")
def planted():
    return planted_votes(
        n_items=400, accuracies=ACCURACIES, per_item=5, n_categories=3, seed=20261127
    )


@pytest.fixture(scope="module")
def fits(planted):
    return {
        model: estimators.fit(model, planted.items, planted.raters, planted.labels, n_categories=3)
        for model in estimators.MODELS
    }


def majority_accuracy(planted) -> float:
    """Share of items whose plurality label is the truth (a tie counts as wrong: no decision)."""
    keys, labels = estimators.majority_labels(planted.items, planted.labels, n_categories=3)
    return float((labels == planted.truth[keys]).mean())


@pytest.mark.parametrize("model", estimators.MODELS)
def test_each_model_recovers_the_truth_better_than_majority_vote(planted, fits, model):
    fit = fits[model]
    accuracy = float((fit.labels == planted.truth[fit.items]).mean())
    baseline = majority_accuracy(planted)
    # Stated margin: at least 5 percentage points above the plurality vote on this data set
    # (ties of the plurality count as misses: the rule decides nothing on them).
    assert accuracy >= baseline + 0.05, (model, accuracy, baseline)
    assert accuracy >= 0.85


@pytest.mark.parametrize("model", estimators.MODELS)
def test_the_spammers_rank_below_every_careful_annotator(fits, model):
    fit = fits[model]
    reliability = dict(zip(fit.raters.tolist(), fit.reliability.tolist(), strict=True))
    worst_careful = min(value for rater, value in reliability.items() if rater not in SPAMMERS)
    assert all(reliability[spammer] < worst_careful for spammer in SPAMMERS), reliability


def test_dawid_skene_accuracy_estimates_are_near_the_planted_ones(fits):
    fit = fits["dawid_skene"]
    for rater, estimate in zip(fit.raters.tolist(), fit.reliability.tolist(), strict=True):
        if ACCURACIES[rater] is not None:
            assert estimate == pytest.approx(ACCURACIES[rater], abs=0.08), rater


def test_posteriors_are_distributions(fits):
    for fit in fits.values():
        assert fit.posteriors.shape == (400, 3)
        assert np.allclose(fit.posteriors.sum(axis=1), 1)
        assert (fit.posteriors >= 0).all()


@pytest.mark.parametrize("model", estimators.MODELS)
def test_a_new_items_posterior_from_the_fitted_parameters(planted, fits, model):
    fit = fits[model]
    rater_index = {int(key): row for row, key in enumerate(fit.raters)}
    # Two careful annotators say 2, one spammer that always says 0 says 0: the model follows
    # the careful ones.
    posterior = estimators.item_posterior(
        model, fit.params, rater_index=rater_index, votes=[(0, 2), (1, 2), (8, 0)], n_categories=3
    )
    assert posterior.argmax() == 2
    assert posterior.sum() == pytest.approx(1)
    # An unknown rater counts as the average one; no vote at all gives a distribution too.
    unknown = estimators.item_posterior(
        model, fit.params, rater_index=rater_index, votes=[(999, 1)], n_categories=3
    )
    assert unknown.argmax() == 1


def test_the_spammers_vote_alone_is_not_trusted_by_dawid_skene(fits):
    fit = fits["dawid_skene"]
    rater_index = {int(key): row for row, key in enumerate(fit.raters)}
    alone = estimators.item_posterior(
        "dawid_skene", fit.params, rater_index=rater_index, votes=[(8, 0)], n_categories=3
    )
    careful = estimators.item_posterior(
        "dawid_skene", fit.params, rater_index=rater_index, votes=[(0, 0)], n_categories=3
    )
    assert alone.max() < careful.max()


def test_bootstrap_intervals_are_seeded_and_hold_the_estimate(planted, fits):
    small = planted_votes(n_items=120, accuracies=ACCURACIES, per_item=5, n_categories=3, seed=3)
    first = estimators.reliability_intervals(
        "dawid_skene", small.items, small.raters, small.labels, n_categories=3, replicates=30
    )
    again = estimators.reliability_intervals(
        "dawid_skene", small.items, small.raters, small.labels, n_categories=3, replicates=30
    )
    other_seed = estimators.reliability_intervals(
        "dawid_skene",
        small.items,
        small.raters,
        small.labels,
        n_categories=3,
        replicates=30,
        seed=1,
    )
    for mine, same in zip(first, again, strict=True):
        assert np.array_equal(mine, same)
    assert not np.array_equal(first[1], other_seed[1])
    fit = estimators.dawid_skene(small.items, small.raters, small.labels, n_categories=3)
    keys, low, high = first
    assert np.array_equal(keys, fit.raters)
    assert (low <= high).all()
    inside = (low - 0.02 <= fit.reliability) & (fit.reliability <= high + 0.02)
    assert inside.mean() >= 0.9


def test_labels_out_of_range_are_refused():
    with pytest.raises(ValueError):
        estimators.dawid_skene([0, 1], [0, 1], [0, 3], n_categories=3)


# --- Against crowd-kit ---------------------------------------------------------------------------

#: crowd-kit's toy data set (its tests' ``toy_answers_df``): worker, task, label.
TOY = [
    ("w1", "t1", "no"), ("w1", "t2", "yes"), ("w1", "t3", "yes"), ("w1", "t4", "yes"),
    ("w1", "t5", "yes"), ("w2", "t1", "yes"), ("w2", "t2", "yes"), ("w2", "t3", "no"),
    ("w2", "t4", "yes"), ("w2", "t5", "no"), ("w3", "t2", "yes"), ("w3", "t3", "no"),
    ("w3", "t4", "yes"), ("w3", "t5", "no"), ("w4", "t1", "yes"), ("w4", "t2", "no"),
    ("w4", "t3", "yes"), ("w4", "t4", "yes"), ("w4", "t5", "no"), ("w5", "t1", "no"),
    ("w5", "t2", "no"), ("w5", "t3", "no"), ("w5", "t4", "yes"), ("w5", "t5", "no"),
]  # fmt: skip


@pytest.fixture(scope="module")
def crowdkit():
    return pytest.importorskip(
        "crowdkit.aggregation",
        reason="crowd-kit is not installed (pip install -e '.[dev]' installs it; CI has it)",
    )


def _frame(rows):
    import pandas as pd

    return pd.DataFrame(rows, columns=["worker", "task", "label"])


def _ours(model, frame, **options):
    categories = sorted(frame.label.unique())
    items, item_keys = frame.task.factorize()
    raters, _ = frame.worker.factorize()
    labels = np.array([categories.index(label) for label in frame.label])
    fit = estimators.FITTERS[model](items, raters, labels, n_categories=len(categories), **options)
    import pandas as pd

    return pd.DataFrame(fit.posteriors, index=item_keys[fit.items], columns=categories)


def test_dawid_skene_matches_crowd_kit_on_its_toy_data(crowdkit):
    frame = _frame(TOY)
    theirs = crowdkit.DawidSkene(n_iter=100).fit_predict_proba(frame)
    ours = _ours("dawid_skene", frame)
    theirs = theirs[ours.columns].loc[ours.index]
    # The same EM from the same start: the posteriors agree to 1e-6.
    assert np.allclose(ours.to_numpy(), theirs.to_numpy(), atol=1e-6)


#: crowd-kit's "simple" data set (its tests' ``simple_answers_df``, worker ids shortened): three
#: careful workers, one that always answers "parrot", one careless; and its ground truth.
SIMPLE = [
    ("good1", "eec", "goose"), ("good1", "efb", "parrot"), ("good1", "f03", "goose"),
    ("good1", "f05", "goose"), ("good1", "f02", "parrot"), ("good1", "f08", "parrot"),
    ("good2", "efb", "parrot"), ("good2", "ee8", "chicken"), ("good2", "f07", "parrot"),
    ("good2", "efd", "chicken"), ("good2", "ee4", "chicken"), ("good2", "f03", "goose"),
    ("good3", "ee8", "chicken"), ("good3", "eec", "goose"), ("good3", "f05", "goose"),
    ("good3", "f02", "parrot"), ("good3", "f08", "parrot"),
    ("good4", "eec", "goose"), ("good4", "ee8", "chicken"), ("good4", "f03", "goose"),
    ("good4", "ee4", "chicken"),
    ("fraud", "eec", "parrot"), ("fraud", "efb", "parrot"), ("fraud", "f07", "parrot"),
    ("fraud", "efd", "parrot"), ("fraud", "ee4", "parrot"), ("fraud", "f05", "parrot"),
    ("careless", "efb", "parrot"), ("careless", "ee8", "goose"), ("careless", "f02", "parrot"),
    ("careless", "f08", "parrot"), ("careless", "f07", "parrot"), ("careless", "efd", "goose"),
]  # fmt: skip
SIMPLE_TRUTH = {
    "eec": "goose", "f03": "goose", "f05": "goose", "efb": "parrot", "f02": "parrot",
    "f08": "parrot", "f07": "parrot", "ee8": "chicken", "efd": "chicken", "ee4": "chicken",
}  # fmt: skip


@pytest.mark.parametrize(
    ("model", "theirs_factory"),
    [
        ("dawid_skene", lambda ck: ck.DawidSkene(n_iter=100)),
        ("mace", lambda ck: ck.MACE(n_restarts=2, random_state=0)),
        ("glad", lambda ck: ck.GLAD()),
    ],
)
def test_labels_agree_with_crowd_kit_on_its_examples(crowdkit, model, theirs_factory):
    """Every label agrees on the toy data; on the "simple" data (a fraudster, a careless
    worker) at most one of ten differs (crowd-kit's MACE is variational Bayes, its GLAD has other
    priors; its MACE here with 2 restarts, for time), and ours finds the ground truth at least as often as crowd-kit's."""
    toy = _frame(TOY)
    ours = _ours(model, toy)
    theirs = theirs_factory(crowdkit).fit_predict(toy).loc[ours.index]
    assert (ours.idxmax(axis=1) == theirs).all()
    simple = _frame(SIMPLE)
    ours = _ours(model, simple).idxmax(axis=1)
    theirs = theirs_factory(crowdkit).fit_predict(simple).loc[ours.index]
    assert (ours == theirs).sum() >= len(ours) - 1
    truth = ours.index.map(SIMPLE_TRUTH)
    assert (ours == truth).sum() >= (theirs == truth).sum()
