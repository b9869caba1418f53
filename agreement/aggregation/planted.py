"""Planted crowd data: simulated annotators of known accuracy and spammers, seeded — for the
tests of the annotator models (tests/agreement/aggregation/) and the demo's planted spammers
(agreement/aggregation/demo.py). Pure numpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Planted:
    """Votes (parallel arrays), the true label of every item, and each annotator's accuracy
    (None for a spammer)."""

    items: np.ndarray
    raters: np.ndarray
    labels: np.ndarray
    truth: np.ndarray
    accuracies: tuple[float | None, ...]


def planted_votes(
    *,
    n_items: int,
    accuracies: tuple[float | None, ...],
    per_item: int,
    n_categories: int,
    seed: int,
    prevalence: tuple[float, ...] | None = None,
) -> Planted:
    """Each item gets ``per_item`` annotators drawn without replacement; annotator ``r`` answers
    the true label with probability ``accuracies[r]``, otherwise one of the others uniformly. A
    ``None`` accuracy is a spammer: even-numbered spammers always answer label 0, odd-numbered
    ones answer uniformly at random."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(n_categories, size=n_items, p=prevalence)
    items, raters, labels = [], [], []
    for item, true in enumerate(truth):
        for rater in rng.choice(len(accuracies), size=per_item, replace=False):
            accuracy = accuracies[rater]
            if accuracy is None:
                label = 0 if rater % 2 == 0 else int(rng.integers(n_categories))
            elif rng.random() < accuracy:
                label = int(true)
            else:
                label = int(rng.choice([c for c in range(n_categories) if c != true]))
            items.append(item)
            raters.append(int(rater))
            labels.append(label)
    return Planted(np.array(items), np.array(raters), np.array(labels), truth, accuracies)
