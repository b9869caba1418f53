"""Fitting a stage's annotator models and storing them (AggregationFit, ItemPosterior).

Called by the agreement refresh (agreement/services.py ``stage_agreement_refresh``), the Celery
task that runs, coalesced, after the engine reports resolutions — never in a request — on stages
that decide by one of the model policies (agreement/aggregation/policies.py). A stage is fitted
once it has ``MIN_ITEMS`` completed items, then refitted when they grew by a quarter (at least
``REFIT_ITEMS`` more), so a growing stage costs a handful of fits, not one per resolution. Safe
to run twice: each fit replaces the stage's previous one of the same model.
"""

from __future__ import annotations

import numpy as np
from django.db import transaction

from agreement.aggregation import estimators
from agreement.models import AggregationFit, ItemPosterior
from agreement.votes import stage_votes
from annotation.models import Stage

#: Bootstrap replicates and seed of the reliability intervals (estimators.reliability_intervals).
BOOTSTRAP_REPLICATES = 40
BOOTSTRAP_SEED = 0
#: Completed items before the first fit, and the growth that brings a refit.
MIN_ITEMS = 10
REFIT_ITEMS = 10
REFIT_GROWTH = 1.25


def stage_aggregation_due(*, stage: Stage, n_items: int) -> bool:
    """Whether a stage with ``n_items`` completed items is due a (re)fit: it decides by a model
    policy, has ``MIN_ITEMS`` and grew enough since the last fit."""
    from agreement.aggregation.policies import MODEL_POLICIES

    if stage.resolution_policy not in {policy.key for policy in MODEL_POLICIES}:
        return False
    if n_items < MIN_ITEMS:
        return False
    last = AggregationFit.objects.filter(stage=stage).values_list("n_items", flat=True).first()
    return last is None or n_items >= max(last + REFIT_ITEMS, last * REFIT_GROWTH)


def stage_aggregation_fit(
    *, stage_id: int, force: bool = True, replicates: int = BOOTSTRAP_REPLICATES
) -> list[AggregationFit]:
    """Fit every model of ``estimators.MODELS`` to the stage's completed items' votes (the
    agreement figures' votes: agreement.votes.stage_votes) and store each fit with every item
    stage's posterior and every rater's reliability interval. A stage that is not categorical,
    or has fewer than two items or two raters with votes, gets no fit (and loses a stored one).
    Without ``force``, only a stage :func:`stage_aggregation_due` is fitted. Returns the stored
    fits ([] when none was made)."""
    stage = Stage.objects.filter(pk=stage_id).first()
    if stage is None:
        return []
    votes = stage_votes(stage)
    categories = list(votes.categories) if votes.categories is not None else None
    cast = votes.values >= 0 if categories is not None else np.zeros(0, dtype=bool)
    items, raters = votes.items[cast], votes.raters[cast]
    labels = votes.values[cast].astype(np.int64) if len(cast) else np.zeros(0, dtype=np.int64)
    if (
        categories is None
        or len(categories) < 2
        or len(np.unique(items)) < 2
        or len(np.unique(raters)) < 2
    ):
        AggregationFit.objects.filter(stage_id=stage_id).delete()
        return []
    if not force and not stage_aggregation_due(stage=stage, n_items=len(np.unique(items))):
        return []
    k = len(categories)
    majority_items, majority = estimators.majority_labels(items, labels, n_categories=k)
    majority_of = dict(zip(majority_items.tolist(), majority.tolist(), strict=True))
    _, votes_per_rater = np.unique(raters, return_counts=True)
    fits = []
    for model in estimators.MODELS:
        fitted = estimators.fit(model, items, raters, labels, n_categories=k)
        _, low, high = estimators.reliability_intervals(
            model, items, raters, labels, n_categories=k, replicates=replicates,
            seed=BOOTSTRAP_SEED,
        )  # fmt: skip
        reliability = [
            [_number(value), _number(lo), _number(hi), int(count)]
            for value, lo, hi, count in zip(
                fitted.reliability, low, high, votes_per_rater, strict=True
            )
        ]
        fits.append(
            _fit_store(
                stage_id=stage_id,
                model=model,
                categories=categories,
                fitted=fitted,
                reliability=reliability,
                n_annotations=len(labels),
                replicates=replicates,
                majority_of=majority_of,
            )
        )
    return fits


@transaction.atomic
def _fit_store(
    *,
    stage_id: int,
    model: str,
    categories: list,
    fitted: estimators.Fit,
    reliability: list,
    n_annotations: int,
    replicates: int,
    majority_of: dict[int, int],
) -> AggregationFit:
    row, _ = AggregationFit.objects.update_or_create(
        stage_id=stage_id,
        model=model,
        defaults={
            "categories": categories,
            "raters": fitted.raters.tolist(),
            "params": fitted.params,
            "reliability": reliability,
            "n_items": len(fitted.items),
            "n_annotations": n_annotations,
            "bootstrap_replicates": replicates,
            "seed": BOOTSTRAP_SEED,
        },
    )
    ItemPosterior.objects.filter(fit=row).delete()
    best = fitted.labels
    posteriors = []
    for item_stage_id, posterior, code in zip(
        fitted.items.tolist(), fitted.posteriors, best.tolist(), strict=True
    ):
        plurality = majority_of.get(item_stage_id, -1)
        posteriors.append(
            ItemPosterior(
                fit=row,
                item_stage_id=item_stage_id,
                posterior=[round(float(p), 6) for p in posterior],
                label=categories[code],
                probability=float(posterior[code]),
                majority=categories[plurality] if plurality >= 0 else None,
            )
        )
    ItemPosterior.objects.bulk_create(posteriors, batch_size=2000)
    return row


def _number(value: float) -> float | None:
    return None if not np.isfinite(value) else round(float(value), 6)
