"""Models calibrated against people: how each model rater of a stage compares with the stage's
people (llm/README.md, "Calibration", says what each figure means and how to read it).

Two halves in one module, because the second is a thin reader of the first:

* pure statistics over pandas/numpy (no database; CONTRIBUTING.md, "Statistics are pure
  functions"): :func:`human_decisions`, :func:`kappa_bootstrap`, :func:`calibration_bins`,
  :func:`expected_calibration_error`, :func:`review_candidates` and :func:`calibrate`, which
  puts them together;
* one selector, :func:`stage_calibration`, that reads a stage's votes the way the agreement
  figures do (``agreement.votes.stage_votes``, with the advisory raters' answers: completed
  items only, so nothing here shows an answer while people are still at work on the item) and the model raters' confidences
  (``ModelVote``), and calls :func:`calibrate`.

Rules (one place each):

* a user is a model when it has a ``model_rater`` (llm.models.ModelRater.user); every other
  rater of the stage is a person;
* the human decision of an item stage is the plurality of its people's votes; items whose top
  count is shared (ties) have no decision: they are left out of every comparison with the
  decision and counted (``StageCalibration.n_ties``);
* agreement with the decision: Cohen's κ (``agreement.stats.cohen_kappa``) for nominal kinds,
  Krippendorff's α at the kind's level (``agreement.stats.krippendorff_alpha``) for ordinal and
  interval kinds (the kind's ``AgreementSpec``); intervals are seeded percentile bootstraps over
  items (κ's by :func:`kappa_bootstrap`: agreement.stats has only κ's asymptotic interval);
* a model vote is correct when it equals the decision; accuracy by confidence uses equal-width
  bins over [0, 1].
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from agreement import stats
from agreement.stats import ITEM, RATER, VALUE, AgreementResult

#: A confident model disagreeing with a unanimous human vote goes to the review queue from
#: this confidence on.
DEFAULT_THRESHOLD = 0.8
#: Equal-width confidence bins of the reliability plot and the ECE.
DEFAULT_BINS = 10
N_BOOT = 1000
SEED = 0
#: The rater key of the human decision in the two-rater tables.
DECISION = "people"
CONFIDENCE = "confidence"
#: The Krippendorff levels a kind's agreement scale maps to.
LEVELS = {"nominal": "nominal", "ordinal": "ordinal", "interval": "interval"}


# --- Pure statistics ----------------------------------------------------------------------------


def human_decisions(people: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The plurality of the people's votes per item, and how many items tie.

    ``people`` is a long table (item, rater, value) of people's votes (missing values dropped).
    Returns a frame indexed by item with ``decision`` (the most frequent value), ``n_people``
    (votes on the item), ``top`` (votes for the decision) and ``unanimous`` (every vote is the
    decision), for the items whose top count is not shared; and the number of tied items."""
    votes = people.dropna(subset=[VALUE])
    columns = ["decision", "n_people", "top", "unanimous"]
    if votes.empty:
        return pd.DataFrame(columns=columns), 0
    counts = votes.groupby([ITEM, VALUE], sort=True).size().rename("count").reset_index()
    totals = counts.groupby(ITEM)["count"].sum()
    tops = counts.groupby(ITEM)["count"].transform("max")
    leaders = counts[counts["count"] == tops]
    n_leaders = leaders.groupby(ITEM).size()
    tied = n_leaders[n_leaders > 1].index
    decided = leaders[~leaders[ITEM].isin(tied)].set_index(ITEM)
    frame = pd.DataFrame(
        {
            "decision": decided[VALUE],
            "n_people": totals.reindex(decided.index),
            "top": decided["count"],
        }
    )
    frame["unanimous"] = frame["top"] == frame["n_people"]
    return frame[columns], len(tied)


def kappa_bootstrap(
    first: np.ndarray,
    second: np.ndarray,
    n_categories: int,
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    confidence: float = 0.95,
) -> tuple[float | None, float | None, float | None]:
    """A seeded percentile bootstrap interval of Cohen's κ over items: (low, high, replicate SD).

    ``first`` and ``second`` are the two raters' category codes (0 … n_categories − 1) on the
    same items. Resampling items with replacement is a multinomial draw over the cells of the
    contingency table, so the replicates are computed as tables, not per item. Replicates whose
    chance agreement is 1 (κ undefined) are dropped; (None, None, None) when fewer than two
    items or no replicate is defined."""
    n = len(first)
    if n < 2 or n_boot <= 0:
        return None, None, None
    cells = np.bincount(first * n_categories + second, minlength=n_categories**2)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, cells / n, size=n_boot)
    tables = counts.reshape(n_boot, n_categories, n_categories) / n
    observed = np.trace(tables, axis1=1, axis2=2)
    expected = np.einsum("bi,bi->b", tables.sum(axis=2), tables.sum(axis=1))
    defined = expected < 1 - 1e-12
    if not defined.any():
        return None, None, None
    kappas = (observed[defined] - expected[defined]) / (1 - expected[defined])
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return float(low), float(high), float(kappas.std(ddof=1)) if len(kappas) > 1 else None


@dataclass(frozen=True)
class CalibrationBin:
    """One confidence bin: [low, high), the last one closed; ``confidence`` and ``accuracy`` are
    the means over its ``n`` votes (None when empty)."""

    low: float
    high: float
    n: int
    confidence: float | None
    accuracy: float | None


def calibration_bins(
    confidence: Sequence[float] | np.ndarray,
    correct: Sequence[bool] | np.ndarray,
    *,
    n_bins: int = DEFAULT_BINS,
) -> list[CalibrationBin]:
    """Equal-width bins over [0, 1] of the votes' confidences, with each bin's mean confidence
    and accuracy (the points of a reliability plot). A confidence of exactly 1 falls in the
    last bin; one on an inner edge (0.8) in the bin it opens."""
    conf = np.asarray(confidence, dtype=np.float64)
    hits = np.asarray(correct, dtype=np.float64)
    # The small epsilon keeps 0.3 (= 0.30000000000000004 / 10 · 10) on the edge it is.
    index = np.clip(np.floor(conf * n_bins + 1e-9).astype(np.int64), 0, n_bins - 1)
    counts = np.bincount(index, minlength=n_bins)
    conf_sums = np.bincount(index, weights=conf, minlength=n_bins)
    hit_sums = np.bincount(index, weights=hits, minlength=n_bins)
    bins = []
    for number in range(n_bins):
        n = int(counts[number])
        bins.append(
            CalibrationBin(
                low=number / n_bins,
                high=(number + 1) / n_bins,
                n=n,
                confidence=float(conf_sums[number] / n) if n else None,
                accuracy=float(hit_sums[number] / n) if n else None,
            )
        )
    return bins


def expected_calibration_error(bins: Sequence[CalibrationBin]) -> float | None:
    """ECE = Σ_b (n_b / N) · |accuracy_b − confidence_b| over the bins (Naeini et al. 2015;
    Guo et al. 2017); None without votes. Written here: no installed library computes it
    (scikit-learn is not a dependency and has only the bin points, not the ECE)."""
    total = sum(entry.n for entry in bins)
    if not total:
        return None
    return float(
        sum(
            entry.n / total * abs(entry.accuracy - entry.confidence)
            for entry in bins
            if entry.n and entry.accuracy is not None and entry.confidence is not None
        )
    )


def review_candidates(
    decisions: pd.DataFrame, model: pd.DataFrame, *, threshold: float = DEFAULT_THRESHOLD
) -> pd.DataFrame:
    """The items where the model, with confidence ≥ ``threshold``, votes otherwise than a
    unanimous vote of at least two people. ``decisions`` is :func:`human_decisions`' frame,
    ``model`` a frame indexed by item with ``value`` and ``confidence``. Returns a frame indexed
    by item with ``value``, ``confidence``, ``decision`` and ``n_people`` (unordered)."""
    columns = [VALUE, CONFIDENCE, "decision", "n_people"]
    if model.empty or decisions.empty:
        return pd.DataFrame(columns=columns)
    joined = model.join(decisions, how="inner")
    chosen = joined[
        joined["unanimous"]
        & (joined["n_people"] >= 2)
        & (joined[CONFIDENCE] >= threshold - 1e-12)
        & (joined[VALUE] != joined["decision"])
    ]
    return chosen[columns]


@dataclass(frozen=True)
class RaterResult:
    """One model rater against the people of its stage.

    ``against_people``: κ (nominal) or α (ordinal, interval) of the model with the human
    decision, over the items with both (bootstrap interval). ``confusion``: rows the decision,
    columns the model's vote, both in the order of ``values``. ``alpha_with_model``: α of the
    people with the model as one more rater. ``accuracy``: share of the decided items where the
    model's vote is the decision; ``bins`` and ``ece`` its calibration (votes with a confidence)."""

    rater: Any
    n_votes: int
    n_compared: int
    against_people: AgreementResult
    confusion: np.ndarray
    alpha_with_model: AgreementResult
    accuracy: float | None
    bins: list[CalibrationBin]
    ece: float | None
    review: pd.DataFrame


@dataclass(frozen=True)
class Calibration:
    """Every model rater of a stage against its people (:func:`calibrate`)."""

    scale: str
    values: list[Any]
    decisions: pd.DataFrame
    n_ties: int
    alpha_people: AgreementResult
    raters: list[RaterResult]
    threshold: float


def calibrate(
    people: pd.DataFrame,
    models: Mapping[Any, pd.DataFrame],
    *,
    scale: str,
    n_values: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    n_bins: int = DEFAULT_BINS,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> Calibration:
    """The calibration of each model rater against the people.

    ``people``: a long table (item, rater, value) of the people's votes. ``models``: per model
    rater key a frame with columns item, value, confidence (confidence may be NaN: the vote then
    counts for agreement but not for the bins). ``scale``: the kind's agreement scale (nominal,
    ordinal, interval). For nominal scales values are category codes 0 … ``n_values`` − 1 (the
    confusion matrix has every category); for the others numbers, and the confusion matrix
    covers the values seen."""
    if scale not in LEVELS:
        raise ValueError(f"scale must be one of {tuple(LEVELS)}")
    level = LEVELS[scale]
    nominal = scale == "nominal"
    people = people[[ITEM, RATER, VALUE]].dropna(subset=[VALUE])
    decisions, n_ties = human_decisions(people)
    if nominal:
        values: list[Any] = list(range(n_values or 0))
        seen = set(people[VALUE].astype(int))
        for frame in models.values():
            seen |= set(frame[VALUE].dropna().astype(int))
        if seen and max(seen) >= len(values):
            values = list(range(max(seen) + 1))
    else:
        seen_values = set(people[VALUE])
        for frame in models.values():
            seen_values |= set(frame[VALUE].dropna())
        values = sorted(seen_values)
    alpha_people = stats.krippendorff_alpha(people, level=level, n_boot=n_boot, seed=seed)
    results = []
    for key, frame in models.items():
        votes = frame.dropna(subset=[VALUE]).drop_duplicates(ITEM).set_index(ITEM)
        results.append(
            _rater_result(
                key,
                votes,
                people,
                decisions,
                level=level,
                nominal=nominal,
                values=values,
                threshold=threshold,
                n_bins=n_bins,
                n_boot=n_boot,
                seed=seed,
            )
        )
    return Calibration(
        scale=scale,
        values=values,
        decisions=decisions,
        n_ties=n_ties,
        alpha_people=alpha_people,
        raters=results,
        threshold=threshold,
    )


def _rater_result(
    key: Any,
    votes: pd.DataFrame,
    people: pd.DataFrame,
    decisions: pd.DataFrame,
    *,
    level: str,
    nominal: bool,
    values: list[Any],
    threshold: float,
    n_bins: int,
    n_boot: int,
    seed: int,
) -> RaterResult:
    compared = votes.join(decisions[["decision"]], how="inner")
    pairs = pd.concat(
        [
            pd.DataFrame({ITEM: compared.index, RATER: DECISION, VALUE: compared["decision"]}),
            pd.DataFrame({ITEM: compared.index, RATER: "model", VALUE: compared[VALUE]}),
        ],
        ignore_index=True,
    )
    if nominal:
        against = _kappa_with_bootstrap(
            pairs, compared, n_categories=len(values), n_boot=n_boot, seed=seed
        )
    else:
        against = stats.krippendorff_alpha(pairs, level=level, n_boot=n_boot, seed=seed)
    position = {value: index for index, value in enumerate(values)}
    confusion = np.zeros((len(values), len(values)), dtype=np.int64)
    for decision, vote in zip(compared["decision"], compared[VALUE], strict=True):
        confusion[position[decision], position[vote]] += 1
    # A model rater is a distinct rater key: a person's id never equals it (strings vs ids).
    with_model = pd.concat(
        [people, pd.DataFrame({ITEM: votes.index, RATER: f"model:{key}", VALUE: votes[VALUE]})],
        ignore_index=True,
    )
    alpha_with_model = stats.krippendorff_alpha(with_model, level=level, n_boot=n_boot, seed=seed)
    correct = (compared[VALUE] == compared["decision"]).to_numpy()
    with_confidence = compared[CONFIDENCE].notna().to_numpy()
    bins = calibration_bins(
        compared[CONFIDENCE].to_numpy()[with_confidence], correct[with_confidence], n_bins=n_bins
    )
    return RaterResult(
        rater=key,
        n_votes=len(votes),
        n_compared=len(compared),
        against_people=against,
        confusion=confusion,
        alpha_with_model=alpha_with_model,
        accuracy=float(correct.mean()) if len(correct) else None,
        bins=bins,
        ece=expected_calibration_error(bins),
        review=review_candidates(decisions, votes[[VALUE, CONFIDENCE]], threshold=threshold),
    )


def _kappa_with_bootstrap(
    pairs: pd.DataFrame, compared: pd.DataFrame, *, n_categories: int, n_boot: int, seed: int
) -> AgreementResult:
    """Cohen's κ of the decision and the model (agreement.stats) with its interval replaced by
    the percentile bootstrap over items (:func:`kappa_bootstrap`)."""
    if compared.empty:
        return AgreementResult(
            metric="cohen_kappa", value=None, note="No decided item has a vote of the model."
        )
    result = stats.cohen_kappa(
        pairs, raters=(DECISION, "model"), categories=list(range(n_categories))
    )
    if result.value is None:
        return result
    low, high, spread = kappa_bootstrap(
        compared["decision"].to_numpy(dtype=np.int64),
        compared[VALUE].to_numpy(dtype=np.int64),
        n_categories,
        n_boot=n_boot,
        seed=seed,
    )
    return dataclasses.replace(
        result,
        ci_low=low,
        ci_high=high,
        se=spread,
        ci_method="bootstrap" if low is not None else None,
    )


# --- The selector -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewRow:
    """An item stage where a confident model disagrees with a unanimous human vote."""

    item_stage_id: int
    item_id: int
    external_id: str
    summary: str
    rater: str
    rater_short: str
    model_value: Any
    confidence: float
    human_value: Any
    n_people: int
    voted_at: datetime | None


@dataclass(frozen=True)
class RaterRow:
    """A model rater of the stage and its figures (``result`` is None when it has no vote on a
    completed item yet). ``label``: endpoint · prompt version; ``short``: the endpoint's name,
    with the prompt version only when two raters of the stage share the endpoint (figures)."""

    rater_id: int
    label: str
    short: str
    samples: int
    result: RaterResult | None


@dataclass(frozen=True)
class StageCalibration:
    """What the "Models against people" section of a stage shows."""

    stage: Any
    scale: str
    metric: str
    value_labels: list[str]
    n_items: int
    n_decided: int
    n_ties: int
    alpha_people: AgreementResult
    raters: list[RaterRow]
    review: list[ReviewRow]
    threshold: float

    @property
    def compared(self) -> list[RaterRow]:
        return [row for row in self.raters if row.result is not None]


def _label(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def stage_calibration(
    stage: Any, *, threshold: float = DEFAULT_THRESHOLD, n_boot: int = N_BOOT
) -> StageCalibration | None:
    """The calibration of every model rater of ``stage`` against its people; None when the stage
    has no model rater or its kind has no agreement scale. Reads the votes of completed items
    only (``agreement.votes.stage_votes``). The review queue is newest first (the model's vote
    time). The caller has checked that the user may monitor the stage."""
    from django.contrib.auth import get_user_model

    from agreement.selectors import item_summary
    from agreement.votes import stage_votes
    from annotation.kinds import get_kind
    from annotation.models import ItemStage
    from llm.models import ModelRater, ModelVote

    raters = list(
        ModelRater.objects.filter(stage=stage)
        .select_related("endpoint", "prompt__template")
        .order_by("pk")
    )
    scale = get_kind(stage.kind).agreement.scale
    if not raters or scale is None:
        return None
    # Every rater's answers: the stage's own figures leave the advisory (extra model) raters out.
    votes = stage_votes(stage, include_advisory=True)
    frame = votes.frame()
    rater_keys = [int(key) for key in pd.unique(frame[RATER])] if len(frame) else []
    model_users = set(
        get_user_model()
        .objects.filter(pk__in=rater_keys, model_rater__isnull=False)
        .values_list("pk", flat=True)
    )
    is_model = frame[RATER].isin(model_users)
    people = frame[~is_model]
    by_user = {rater.user_id: rater for rater in raters}
    confidences = {
        (user_id, item_stage_id): (confidence, created_at)
        for user_id, item_stage_id, confidence, created_at in ModelVote.objects.filter(
            rater__in=raters
        ).values_list("rater__user_id", "item_stage_id", "confidence", "created_at")
    }
    models: dict[int, pd.DataFrame] = {}
    for user_id, rows in frame[is_model].groupby(RATER):
        if int(user_id) not in by_user:
            continue  # a model rater of another stage cannot vote here; never counted
        keys = [(int(user_id), int(item)) for item in rows[ITEM]]
        models[by_user[int(user_id)].pk] = pd.DataFrame(
            {
                ITEM: rows[ITEM].to_numpy(),
                VALUE: rows[VALUE].to_numpy(),
                CONFIDENCE: [confidences.get(key, (math.nan, None))[0] for key in keys],
            }
        )
    result = calibrate(
        people,
        models,
        scale=scale,
        n_values=len(votes.categories) if votes.categories is not None else None,
        threshold=threshold,
        n_boot=n_boot,
    )
    if scale == "nominal":
        categories = list(votes.categories or ())
        labels = [
            _label(categories[code]) if code < len(categories) else "?" for code in result.values
        ]
    else:
        labels = [_label(value) for value in result.values]
    by_code = dict(zip(result.values, labels, strict=True))
    results = {entry.rater: entry for entry in result.raters}
    endpoints = [rater.endpoint_id for rater in raters]
    rows = [
        RaterRow(
            rater_id=rater.pk,
            label=f"{rater.endpoint.name} · {rater.prompt}",
            short=rater.endpoint.name
            if endpoints.count(rater.endpoint_id) == 1
            else f"{rater.endpoint.name} · {rater.prompt}",
            samples=rater.samples,
            result=results.get(rater.pk),
        )
        for rater in raters
    ]
    review = _review_rows(result, rows, by_code, confidences, by_user_rater=raters)
    short_of = {row.label: row.short for row in rows}
    item_stages = {
        row.pk: row
        for row in ItemStage.objects.filter(pk__in=[entry[0] for entry in review]).select_related(
            "item"
        )
    }
    queue = [
        ReviewRow(
            item_stage_id=item_stage_id,
            item_id=item_stages[item_stage_id].item_id,
            external_id=item_stages[item_stage_id].item.external_id,
            summary=item_summary(item_stages[item_stage_id].item),
            rater=label,
            rater_short=short_of.get(label, label),
            model_value=model_value,
            confidence=confidence,
            human_value=human_value,
            n_people=n_people,
            voted_at=voted_at,
        )
        for item_stage_id, label, model_value, confidence, human_value, n_people, voted_at in review
        if item_stage_id in item_stages
    ]
    metric = "cohen_kappa" if scale == "nominal" else f"krippendorff_alpha_{scale}"
    return StageCalibration(
        stage=stage,
        scale=scale,
        metric=metric,
        value_labels=labels,
        n_items=int(pd.unique(people[ITEM]).size) if len(people) else 0,
        n_decided=len(result.decisions),
        n_ties=result.n_ties,
        alpha_people=result.alpha_people,
        raters=rows,
        review=queue,
        threshold=threshold,
    )


def _review_rows(
    result: Calibration,
    rows: list[RaterRow],
    by_code: dict[Any, str],
    confidences: Mapping[tuple[int, int], tuple[float, datetime | None]],
    *,
    by_user_rater: list[Any],
) -> list[tuple[int, str, str, float, str, int, datetime | None]]:
    """The review queue's rows, newest model vote first (ties by item stage, newest first)."""
    user_of = {rater.pk: rater.user_id for rater in by_user_rater}
    label_of = {row.rater_id: row.label for row in rows}
    found = []
    for entry in result.raters:
        for item, row in entry.review.iterrows():
            voted_at = confidences.get((user_of[entry.rater], int(item)), (0.0, None))[1]
            found.append(
                (
                    int(item),
                    label_of[entry.rater],
                    by_code.get(row[VALUE], _label(row[VALUE])),
                    float(row[CONFIDENCE]),
                    by_code.get(row["decision"], _label(row["decision"])),
                    int(row["n_people"]),
                    voted_at,
                )
            )
    found.sort(
        key=lambda row: (row[6] is not None, row[6].timestamp() if row[6] else 0.0, row[0]),
        reverse=True,
    )
    return found


# --- The Agreement page's section ---------------------------------------------------------------

#: The figures of the section (drawn by llm.figures) and its CSV table, by their URL names.
FIGURES = ("models-agreement", "models-confusion", "models-reliability")
REVIEW_TABLE = "models-review"
REVIEW_COLUMNS = (
    "item_stage_id",
    "item_id",
    "external_id",
    "item",
    "model_rater",
    "model_vote",
    "confidence",
    "human_vote",
    "people",
    "model_voted_at",
)
SECTION_TEMPLATE = "agreement/includes/models_against_people.html"


def review_table(stage: Any) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The review queue of ``stage`` as a CSV table (``REVIEW_COLUMNS``), newest first."""
    calibration = stage_calibration(stage)
    rows = [] if calibration is None else calibration.review
    return REVIEW_COLUMNS, [
        (
            row.item_stage_id,
            row.item_id,
            row.external_id,
            row.summary,
            row.rater,
            row.model_value,
            round(row.confidence, 4),
            row.human_value,
            row.n_people,
            row.voted_at,
        )
        for row in rows
    ]


def _figure(stage: Any, name: str) -> str:
    from llm.figures import stage_figure  # matplotlib only when a figure is drawn

    return stage_figure(stage, name)


def stage_section() -> Any:
    """The "Models against people" section of the stages' Agreement pages (declared in
    llm/apps.py's Plugin ``stage_sections``): shown on every stage with a model rater, with its
    figures and review CSV."""
    from agreement.sections import StageSection

    return StageSection(
        key="models",
        template=SECTION_TEMPLATE,
        context=stage_calibration,
        figures=dict.fromkeys(FIGURES, _figure),
        tables={REVIEW_TABLE: review_table},
    )
