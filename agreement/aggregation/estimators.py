"""Dawid–Skene, MACE and GLAD: annotator models fitted by EM over a stage's categorical votes.

Pure functions over numpy/scipy, no Django (CONTRIBUTING.md, "Statistics"). Written here rather
than taken from crowd-kit because crowd-kit requires transformers, nltk and scikit-learn at run
time; tests/agreement/aggregation/test_estimators.py checks these fits against crowd-kit's on its
own toy data.

Votes are parallel arrays: ``items`` and ``raters`` (any integer keys) and ``labels`` (codes
0 … n_categories − 1). Each fit returns a :class:`Fit`: the posterior of every label per item,
each rater's parameters, and a reliability figure per rater:

``dawid_skene``
    A full confusion matrix per rater (P(answer | true label)) and class priors (Dawid and
    Skene 1979). Reliability: the rater's accuracy, Σₖ prior(k)·P(k | k). The loop follows
    crowd-kit's ``DawidSkene`` (majority-vote start, 100 iterations, tolerance 1e-5).
``mace``
    Each rater either knows the label (with probability θ, the *competence*) or spams from a
    distribution of their own (Hovy et al. 2013). Uniform class priors; EM with a Beta(0.5,
    0.5) prior on θ (its posterior mean) and add-0.1 smoothing of the spam distribution, best of
    10 seeded starts.
``glad``
    P(correct) = σ(α·β) with a rater's *ability* α and an item's ease β > 0; wrong answers
    spread evenly over the other labels (Whitehill et al. 2009). Uniform class priors; priors
    α ~ N(1, 1), log β ~ N(0, 1); the M-step is L-BFGS with the exact gradient.

:func:`reliability_intervals` adds 95 % percentile intervals by a bootstrap over items, seeded
(``numpy.random.default_rng(seed)``): the same data and seed give the same intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logsumexp

MODELS = ("dawid_skene", "mace", "glad")
MODEL_LABELS = {"dawid_skene": "Dawid–Skene", "mace": "MACE", "glad": "GLAD"}
#: What each model's reliability figure is.
RELIABILITY_NAMES = {
    "dawid_skene": "accuracy",
    "mace": "competence θ",
    "glad": "ability α",
}

_EPS = np.finfo(np.float64).eps


@dataclass
class Fit:
    """A fitted model. ``items`` / ``raters``: the keys, in the order of the arrays.
    ``posteriors``: (n_items, n_categories), rows sum to 1. ``reliability``: one figure per
    rater (see the module docstring). ``params``: the rater parameters a new item's posterior
    needs (:func:`item_posterior`), as JSON-ready lists keyed by name."""

    model: str
    n_categories: int
    items: np.ndarray
    raters: np.ndarray
    posteriors: np.ndarray
    reliability: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    iterations: int = 0

    @property
    def labels(self) -> np.ndarray:
        """The most probable label code per item (ties: the lowest code)."""
        return np.asarray(self.posteriors.argmax(axis=1))


@dataclass(frozen=True)
class _Coded:
    items: np.ndarray  # keys of items, sorted
    raters: np.ndarray  # keys of raters, sorted
    item: np.ndarray  # per vote: index into items
    rater: np.ndarray  # per vote: index into raters
    label: np.ndarray  # per vote: label code
    k: int


def _code(items: Any, raters: Any, labels: Any, n_categories: int) -> _Coded:
    items = np.asarray(items)
    raters = np.asarray(raters)
    labels = np.asarray(labels, dtype=np.int64)
    if not (len(items) == len(raters) == len(labels)):
        raise ValueError("items, raters and labels must have one entry per vote")
    if len(labels) and (labels.min() < 0 or labels.max() >= n_categories):
        raise ValueError("labels must be codes 0 … n_categories − 1")
    item_keys, item = np.unique(items, return_inverse=True)
    rater_keys, rater = np.unique(raters, return_inverse=True)
    return _Coded(item_keys, rater_keys, item, rater, labels, n_categories)


def _sum_rows(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """(n, columns): the rows of ``values`` summed by ``index`` (np.add.at is far slower)."""
    return np.stack(
        [np.bincount(index, values[:, column], n) for column in range(values.shape[1])], axis=1
    )


def _vote_shares(data: _Coded) -> np.ndarray:
    counts = np.bincount(data.item * data.k + data.label, minlength=len(data.items) * data.k)
    counts = counts.reshape(len(data.items), data.k).astype(float)
    return counts / counts.sum(axis=1, keepdims=True)


def _normalise_log(log_posteriors: np.ndarray) -> np.ndarray:
    return np.asarray(np.exp(log_posteriors - logsumexp(log_posteriors, axis=1, keepdims=True)))


# --- Dawid–Skene ---------------------------------------------------------------------------------


def _ds_confusions(data: _Coded, posteriors: np.ndarray) -> np.ndarray:
    """(n_raters, k true, k answered): P(answer | true) from the expected counts."""
    # counts[r, answer, true] += posterior(item, true), then turned to [r, true, answer]
    n = len(data.raters) * data.k
    counts = _sum_rows(data.rater * data.k + data.label, posteriors[data.item], n)
    counts = counts.reshape(len(data.raters), data.k, data.k).transpose(0, 2, 1)
    counts = np.clip(counts, _EPS, None)
    return np.asarray(counts / counts.sum(axis=2, keepdims=True))


def _ds_log_posteriors(data: _Coded, priors: np.ndarray, confusions: np.ndarray) -> np.ndarray:
    log_votes = np.log(confusions[data.rater, :, data.label])
    return np.log(np.clip(priors, _EPS, None)) + _sum_rows(data.item, log_votes, len(data.items))


def dawid_skene(
    items: Any, raters: Any, labels: Any, *, n_categories: int, n_iter: int = 100, tol: float = 1e-5
) -> Fit:
    """Dawid–Skene by EM, started from the majority vote's shares (as crowd-kit's)."""
    data = _code(items, raters, labels, n_categories)
    posteriors = _vote_shares(data)
    priors = posteriors.mean(axis=0)
    confusions = _ds_confusions(data, posteriors)
    previous = -np.inf
    iterations = 0
    for step in range(1, n_iter + 1):
        iterations = step
        log = _ds_log_posteriors(data, priors, confusions)
        posteriors = _normalise_log(log)
        priors = posteriors.mean(axis=0)
        confusions = _ds_confusions(data, posteriors)
        bound = float(logsumexp(_ds_log_posteriors(data, priors, confusions), axis=1).sum())
        bound /= max(len(data.label), 1)
        if bound - previous < tol:
            break
        previous = bound
    accuracy = np.einsum("k,rkk->r", priors, confusions)
    return Fit(
        "dawid_skene",
        n_categories,
        data.items,
        data.raters,
        posteriors,
        accuracy,
        {"priors": priors.tolist(), "confusions": confusions.tolist()},
        iterations,
    )


# --- MACE ----------------------------------------------------------------------------------------


def _mace_answer_probability(data: _Coded, competence: np.ndarray, spam: np.ndarray) -> np.ndarray:
    """(n_votes, k true): P(the vote's answer | true label)."""
    theta = competence[data.rater][:, None]
    knows = (data.label[:, None] == np.arange(data.k)[None, :]).astype(float)
    return np.asarray(theta * knows + (1 - theta) * spam[data.rater, data.label][:, None])


def mace(
    items: Any,
    raters: Any,
    labels: Any,
    *,
    n_categories: int,
    n_iter: int = 50,
    tol: float = 1e-6,
    restarts: int = 10,
    seed: int = 0,
    competence_prior: tuple[float, float] = (0.5, 0.5),
    smoothing: float = 0.1,
) -> Fit:
    """MACE by MAP-EM, the best (highest log-likelihood) of ``restarts`` seeded starts, the first
    of which starts from the majority vote."""
    data = _code(items, raters, labels, n_categories)
    rng = np.random.default_rng(seed)
    a, b = competence_prior
    n_votes = np.bincount(data.rater, minlength=len(data.raters)).astype(float)
    best: tuple[float, np.ndarray, np.ndarray, np.ndarray, int] | None = None
    for start in range(max(restarts, 1)):
        if start == 0:
            competence = np.full(len(data.raters), 0.8)
            spam = np.full((len(data.raters), data.k), 1.0 / data.k)
        else:
            competence = rng.uniform(0.3, 0.95, len(data.raters))
            spam = rng.dirichlet(np.ones(data.k), len(data.raters))
        previous = -np.inf
        iterations = 0
        for step in range(1, n_iter + 1):
            iterations = step
            log_votes = np.log(_mace_answer_probability(data, competence, spam))
            log = _sum_rows(data.item, log_votes, len(data.items))
            likelihood = float(logsumexp(log, axis=1).sum())
            posteriors = _normalise_log(log)
            # The chance the vote was known rather than spammed, given the true label is its own.
            theta = competence[data.rater]
            own = spam[data.rater, data.label]
            knew = posteriors[data.item, data.label] * theta / (theta + (1 - theta) * own)
            # The Beta(a, b) posterior mean of θ: stays inside (0, 1) with few votes.
            competence = (np.bincount(data.rater, knew, len(data.raters)) + a) / (n_votes + a + b)
            spammed = np.bincount(
                data.rater * data.k + data.label, 1 - knew, len(data.raters) * data.k
            ).reshape(len(data.raters), data.k)
            spam = (spammed + smoothing) / (spammed.sum(axis=1, keepdims=True) + data.k * smoothing)
            if likelihood - previous < tol:
                break
            previous = likelihood
        if best is None or likelihood > best[0]:
            best = (likelihood, posteriors, competence, spam, iterations)
    assert best is not None
    _, posteriors, competence, spam, iterations = best
    return Fit(
        "mace",
        n_categories,
        data.items,
        data.raters,
        posteriors,
        competence,
        {"competence": competence.tolist(), "spam": spam.tolist()},
        iterations,
    )


# --- GLAD ----------------------------------------------------------------------------------------


def _glad_log_answer(data: _Coded, ability: np.ndarray, log_ease: np.ndarray) -> np.ndarray:
    """(n_votes, k true): log P(the vote's answer | true label)."""
    x = ability[data.rater] * np.exp(log_ease[data.item])
    right = -np.logaddexp(0, -x)  # log σ(x)
    wrong = -np.logaddexp(0, x) - np.log(max(data.k - 1, 1))  # log (1 − σ(x)) / (k − 1)
    knows = data.label[:, None] == np.arange(data.k)[None, :]
    return np.where(knows, right[:, None], wrong[:, None])


def glad(
    items: Any,
    raters: Any,
    labels: Any,
    *,
    n_categories: int,
    n_iter: int = 100,
    tol: float = 1e-5,
) -> Fit:
    """GLAD by EM; the M-step maximises the expected log-likelihood plus the log priors."""
    data = _code(items, raters, labels, n_categories)
    n_raters, n_items = len(data.raters), len(data.items)
    ability = np.ones(n_raters)
    log_ease = np.zeros(n_items)
    log_prior = np.full(data.k, -np.log(data.k))
    posteriors = _vote_shares(data)
    previous = -np.inf
    iterations = 0
    for step in range(1, n_iter + 1):
        iterations = step
        weight = posteriors[data.item, data.label]  # P(the vote is right)

        def objective(theta: np.ndarray, weight: np.ndarray = weight) -> tuple[float, np.ndarray]:
            alpha, log_beta = theta[:n_raters], theta[n_raters:]
            beta = np.exp(log_beta[data.item])
            x = alpha[data.rater] * beta
            s = expit(x)
            value = np.sum(weight * -np.logaddexp(0, -x) + (1 - weight) * -np.logaddexp(0, x))
            value -= 0.5 * np.sum((alpha - 1) ** 2) + 0.5 * np.sum(log_beta**2)
            slope = weight - s
            grad_alpha = np.bincount(data.rater, slope * beta, n_raters) - (alpha - 1)
            grad_beta = np.bincount(data.item, slope * x, n_items) - log_beta
            return -value, -np.concatenate([grad_alpha, grad_beta])

        # A few steps per M-step (generalised EM: each still raises the objective) keep the
        # bootstrap's refits affordable.
        result = minimize(
            objective,
            np.concatenate([ability, log_ease]),
            jac=True,
            method="CG",
            options={"maxiter": 20},
        )
        ability, log_ease = result.x[:n_raters], result.x[n_raters:]
        log = log_prior + _sum_rows(data.item, _glad_log_answer(data, ability, log_ease), n_items)
        likelihood = float(logsumexp(log, axis=1).sum()) / max(len(data.label), 1)
        posteriors = _normalise_log(log)
        if abs(likelihood - previous) < tol:
            break
        previous = likelihood
    return Fit(
        "glad",
        n_categories,
        data.items,
        data.raters,
        posteriors,
        ability,
        {"ability": ability.tolist()},
        iterations,
    )


FITTERS: dict[str, Callable[..., Fit]] = {
    "dawid_skene": dawid_skene,
    "mace": mace,
    "glad": glad,
}


def fit(model: str, items: Any, raters: Any, labels: Any, *, n_categories: int) -> Fit:
    """Fit ``model`` (one of :data:`MODELS`) with its defaults."""
    return FITTERS[model](items, raters, labels, n_categories=n_categories)


def majority_labels(items: Any, labels: Any, *, n_categories: int) -> tuple[np.ndarray, np.ndarray]:
    """The sorted item keys and, per item, the plurality label code or −1 on a tie for the top."""
    data = _code(items, np.zeros(len(np.asarray(items))), labels, n_categories)
    counts = _vote_shares(data)
    top = counts.max(axis=1, keepdims=True)
    tied = (counts == top).sum(axis=1) > 1
    return data.items, np.where(tied, -1, counts.argmax(axis=1))


# --- A new item's posterior from fitted rater parameters -----------------------------------------


def item_posterior(
    model: str,
    params: dict[str, Any],
    *,
    rater_index: dict[int, int],
    votes: Sequence[tuple[int, int]],
    n_categories: int,
) -> np.ndarray:
    """The posterior over labels of one item from its ``votes`` ((rater key, label code) pairs)
    and a fit's rater ``params`` (:attr:`Fit.params`; ``rater_index`` maps rater keys to rows).
    A rater the fit has not seen counts as the fit's average rater; GLAD takes the item's ease
    as β = 1 (the prior's median). No votes: the class priors."""
    k = n_categories
    if model == "dawid_skene":
        confusions = np.asarray(params["confusions"])
        log = np.log(np.clip(np.asarray(params["priors"]), _EPS, None))
        average = confusions.mean(axis=0)
        for rater, label in votes:
            row = rater_index.get(rater)
            matrix = confusions[row] if row is not None else average
            log = log + np.log(np.clip(matrix[:, label], _EPS, None))
    elif model == "mace":
        competence = np.asarray(params["competence"])
        spam = np.asarray(params["spam"])
        log = np.zeros(k)
        for rater, label in votes:
            row = rater_index.get(rater)
            theta = competence[row] if row is not None else competence.mean()
            spread = spam[row] if row is not None else spam.mean(axis=0)
            log = log + np.log(theta * (np.arange(k) == label) + (1 - theta) * spread[label])
    elif model == "glad":
        ability = np.asarray(params["ability"])
        log = np.zeros(k)
        for rater, label in votes:
            row = rater_index.get(rater)
            alpha = ability[row] if row is not None else ability.mean()
            right = -np.logaddexp(0, -alpha)
            wrong = -np.logaddexp(0, alpha) - np.log(max(k - 1, 1))
            log = log + np.where(np.arange(k) == label, right, wrong)
    else:
        raise ValueError(f"unknown model {model!r}")
    return np.asarray(np.exp(log - logsumexp(log)))


# --- Intervals -----------------------------------------------------------------------------------


def reliability_intervals(
    model: str,
    items: Any,
    raters: Any,
    labels: Any,
    *,
    n_categories: int,
    replicates: int = 40,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rater keys (sorted) and the low and high ends of each rater's reliability interval:
    percentiles of the refitted reliability over ``replicates`` resamples of the items with
    replacement (a resampled item brings all its votes, under a fresh key per draw). Raters
    absent from a resample are left out of it; NaN when a rater is in none. MACE's refits take
    2 starts instead of 10 (the bootstrap's cost; the interval is of the same estimator)."""
    items = np.asarray(items)
    raters = np.asarray(raters)
    labels = np.asarray(labels)
    rater_keys = np.unique(raters)
    item_keys, item_codes = np.unique(items, return_inverse=True)
    by_item = np.argsort(item_codes, kind="stable")
    starts = np.searchsorted(item_codes[by_item], np.arange(len(item_keys) + 1))
    rng = np.random.default_rng(seed)
    draws = np.full((replicates, len(rater_keys)), np.nan)
    for replicate in range(replicates):
        chosen = rng.integers(0, len(item_keys), len(item_keys))
        pieces = [by_item[starts[c] : starts[c + 1]] for c in chosen]
        sizes = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
        votes = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        fresh_items = np.repeat(np.arange(len(pieces)), sizes)
        extra = {"restarts": 2} if model == "mace" else {}
        result = FITTERS[model](
            fresh_items, raters[votes], labels[votes], n_categories=n_categories, **extra
        )
        columns = np.searchsorted(rater_keys, result.raters)
        draws[replicate, columns] = result.reliability
    tail = (1 - level) / 2 * 100
    with np.errstate(all="ignore"):
        seen = ~np.isnan(draws).all(axis=0)
        low = np.full(len(rater_keys), np.nan)
        high = np.full(len(rater_keys), np.nan)
        if seen.any():
            low[seen] = np.nanpercentile(draws[:, seen], tail, axis=0)
            high[seen] = np.nanpercentile(draws[:, seen], 100 - tail, axis=0)
    return rater_keys, low, high
