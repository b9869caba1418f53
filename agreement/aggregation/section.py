"""The "Beyond majority vote" section of a stage's Agreement page (agreement/sections.py): for
each fitted model (AggregationFit), how many items its decision and the plurality of the votes
differ on (with a link to each), each annotator's reliability with its bootstrap interval (a
figure), and the cost in annotations of deciding the stage by each policy.

Cost of a policy, as shown: the annotations the completed items hold now, plus one more for every
item the policy leaves undecided — a tie of the plurality, or a posterior below the threshold of
a model policy (``ModelPolicy`` routes such items to one more annotator) — over the items it
decides without one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model

from agreement.aggregation import estimators
from agreement.aggregation.policies import DEFAULT_THRESHOLD
from agreement.models import AggregationFit, ItemPosterior

SECTION_TEMPLATE = "agreement/includes/aggregation.html"
FIGURE = "aggregation-reliability"
TABLE = "aggregation-differences"
#: Items listed on the page per model (the CSV has them all).
SHOWN_DIFFERENCES = 20


@dataclass(frozen=True)
class Difference:
    item_stage_id: int
    item_id: int
    external_id: str
    majority: Any
    label: Any
    probability: float


@dataclass(frozen=True)
class RaterReliability:
    name: str
    value: float | None
    low: float | None
    high: float | None
    votes: int


@dataclass(frozen=True)
class ModelSummary:
    key: str
    label: str
    reliability_name: str
    n_items: int
    n_differ: int
    differences: list[Difference]
    raters: list[RaterReliability]
    n_uncertain: int


@dataclass(frozen=True)
class PolicyCost:
    label: str
    decided: int
    undecided: int
    annotations: int

    @property
    def per_decided_item(self) -> float | None:
        return self.annotations / self.decided if self.decided else None


@dataclass(frozen=True)
class StageAggregation:
    models: list[ModelSummary]
    costs: list[PolicyCost]
    threshold: float
    n_items: int
    n_annotations: int
    replicates: int
    seed: int
    policy: str


def _rater_names(keys: list[int]) -> dict[int, str]:
    users = get_user_model().objects.filter(pk__in=[key for key in keys if key > 0])
    names = dict(users.values_list("pk", "username"))
    return {key: names.get(key, f"imported rater {number}") for number, key in enumerate(keys, 1)}


def stage_aggregation(stage: Any) -> StageAggregation | None:
    """The section's context; None when the stage has no fit (not categorical, or too few votes
    so far)."""
    fits = {fit.model: fit for fit in AggregationFit.objects.filter(stage=stage)}
    if not fits:
        return None
    options = stage.policy_options or {}
    threshold = float(options.get("threshold", DEFAULT_THRESHOLD))
    any_fit = next(iter(fits.values()))
    names = _rater_names([int(key) for key in any_fit.raters])
    models = []
    majority_ties = 0
    for key in estimators.MODELS:
        fit = fits.get(key)
        if fit is None:
            continue
        posteriors = ItemPosterior.objects.filter(fit=fit)
        majority_ties = posteriors.filter(majority__isnull=True).count()
        rows = [
            row
            for row in posteriors.select_related("item_stage__item").order_by("item_stage_id")
            if row.majority != row.label
        ]
        models.append(
            ModelSummary(
                key=key,
                label=estimators.MODEL_LABELS[key],
                reliability_name=estimators.RELIABILITY_NAMES[key],
                n_items=fit.n_items,
                n_differ=len(rows),
                differences=[_difference(row) for row in rows[:SHOWN_DIFFERENCES]],
                raters=sorted(
                    (
                        RaterReliability(names.get(int(rater), str(rater)), *figures)
                        for rater, figures in zip(fit.raters, fit.reliability, strict=True)
                    ),
                    key=lambda row: (row.value is None, -(row.value or 0)),
                ),
                n_uncertain=posteriors.filter(probability__lt=threshold).count(),
            )
        )
    n_items, n_annotations = any_fit.n_items, any_fit.n_annotations
    costs = [_cost("Plurality (ties to one more annotator)", n_items, majority_ties, n_annotations)]
    costs += [
        _cost(f"{model.label} (threshold {threshold:g})", n_items, model.n_uncertain, n_annotations)
        for model in models
    ]
    return StageAggregation(
        models=models,
        costs=costs,
        threshold=threshold,
        n_items=n_items,
        n_annotations=n_annotations,
        replicates=any_fit.bootstrap_replicates,
        seed=any_fit.seed,
        policy=stage.resolution_policy,
    )


def _difference(row: ItemPosterior) -> Difference:
    item = row.item_stage.item
    return Difference(
        row.item_stage_id, item.pk, item.external_id, row.majority, row.label, row.probability
    )


def _cost(label: str, n_items: int, undecided: int, annotations: int) -> PolicyCost:
    return PolicyCost(label, n_items - undecided, undecided, annotations + undecided)


def differences_table(stage: Any) -> tuple[list[str], list[list[Any]]]:
    """CSV: every item stage where a model's decision differs from the plurality of its votes."""
    header = ["model", "item", "plurality", "model decision", "posterior"]
    rows = []
    for row in (
        ItemPosterior.objects.filter(fit__stage=stage)
        .select_related("fit", "item_stage__item")
        .order_by("fit__model", "item_stage_id")
    ):
        if row.majority != row.label:
            rows.append(
                [
                    estimators.MODEL_LABELS.get(row.fit.model, row.fit.model),
                    row.item_stage.item.external_id,
                    "tie" if row.majority is None else row.majority,
                    row.label,
                    round(row.probability, 4),
                ]
            )
    return header, rows


def reliability_figure(stage: Any, name: str) -> str:
    """SVG: each annotator's reliability under each model, with its bootstrap interval."""
    from agreement.aggregation.figures import reliability_svg  # matplotlib only when drawn

    return reliability_svg(stage_aggregation(stage))


def stage_section() -> Any:
    """The section, declared in agreement/apps.py's Plugin ``stage_sections``."""
    from agreement.sections import StageSection

    return StageSection(
        key="aggregation",
        template=SECTION_TEMPLATE,
        context=stage_aggregation,
        figures={FIGURE: reliability_figure},
        tables={TABLE: differences_table},
    )
