"""Scoring answers the way CARL-GT scores models (Django-free): for yes/no questions accuracy,
F1 (of "yes") and ROC-AUC, for numbers the mean absolute error.

ROC-AUC is computed with the Mann–Whitney formula (no scikit-learn): the probability that a
question whose true answer is yes gets a higher score than one whose answer is no, ties counting
one half. For people the score of a question is the share of its annotators who said yes; with
one answer per question that is the AUC of binary predictions, (TPR + TNR) / 2, as for a model
that answers yes or no.
"""

from __future__ import annotations

from collections.abc import Sequence


def accuracy(truth: Sequence[bool], predicted: Sequence[bool]) -> float | None:
    if not truth:
        return None
    return sum(t == p for t, p in zip(truth, predicted, strict=True)) / len(truth)


def f1(truth: Sequence[bool], predicted: Sequence[bool]) -> float | None:
    """F1 of the positive class (yes); None without any yes, true or predicted."""
    tp = sum(t and p for t, p in zip(truth, predicted, strict=True))
    fp = sum((not t) and p for t, p in zip(truth, predicted, strict=True))
    fn = sum(t and (not p) for t, p in zip(truth, predicted, strict=True))
    if tp + fp + fn == 0:
        return None
    return 2 * tp / (2 * tp + fp + fn)


def roc_auc(truth: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Mann–Whitney U / (n_pos · n_neg) with average ranks for ties; None when either class is
    missing (AUC is undefined)."""
    n_pos = sum(1 for t in truth if t)
    n_neg = len(truth) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(rank for rank, t in zip(ranks, truth, strict=True) if t)
    u = rank_sum - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


def mean_absolute_error(truth: Sequence[float], predicted: Sequence[float]) -> float | None:
    if not truth:
        return None
    return sum(abs(t - p) for t, p in zip(truth, predicted, strict=True)) / len(truth)
