"""Everything the researcher page shows, computed from plain frames (pure pandas; no Django).

:func:`build_report` takes the long ratings table (``ratings.stats`` format, plus optional
``seconds``/``cannot_judge`` columns), the item table, the pair table, the attention-check and
practice annotations and an optional model run, and returns a :class:`Report` of named tables
(every one downloadable as CSV) and headline figures. Plots are drawn from the same report by
``ratings.plots``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agreement.stats import krippendorff_alpha as alpha_with_ci
from ratings import stats
from ratings.connectives import ConnectiveSet
from ratings.stats import LabelRule

ALPHA_BOOTSTRAP = 500
SPLITS = 200
FLAG_BELOW = 0.3
MIN_ITEMS_FOR_FLAG = 10

#: Tables a report may hold, with their titles (CSV download names are the keys).
TABLE_TITLES = {
    "items": "Item means",
    "labels": "Ordered-pair labels",
    "classes": "Label counts",
    "classes_by_subset": "Label counts by expected subset",
    "classes_by_origin": "Label counts by origin",
    "classes_by_flag": "Label counts by flag",
    "reliability": "Reliability",
    "raters": "Raters",
    "attention_checks": "Attention-check answers",
    "model_summary": "Model comparison",
    "model_by_class": "Model accuracy by human class",
    "model_by_relation": "Model accuracy by relation type",
    "model_by_order": "Model accuracy by order",
    "model_confusion": "Confusion matrix (human × model)",
    "model_by_connective": "Model–human Spearman ρ by connective",
    "model_labels": "Model labels",
}


@dataclass(frozen=True)
class Figure:
    """A headline number with its interval, for the stat cards."""

    name: str
    value: float | None
    low: float | None = None
    high: float | None = None
    note: str = ""


@dataclass
class Report:
    n_items: int = 0
    n_items_rated: int = 0
    n_ratings: int = 0
    n_cannot_judge: int = 0
    n_raters: int | None = None
    anonymous: bool = True
    figures: dict[str, Figure] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    model_name: str | None = None
    notes: list[str] = field(default_factory=list)
    # Kept for the plots:
    ratings: pd.DataFrame | None = None
    item_means: pd.DataFrame | None = None
    model_ratings: pd.DataFrame | None = None

    def table(self, name: str) -> pd.DataFrame | None:
        return self.tables.get(name)


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


def attention_check_table(checks: pd.DataFrame) -> pd.DataFrame:
    """One row per attention-check answer with ``failed``: the rating fell outside the range
    an attentive rater gives (``expected_min``/``expected_max``; either may be missing). "Can't
    judge" answers (NaN rating) are neither passed nor failed."""
    columns = ["rater", "item", "text", "rating", "expected_min", "expected_max", "failed"]
    if checks is None or checks.empty:
        return pd.DataFrame(columns=columns)
    frame = checks.copy()
    rating = pd.to_numeric(frame["rating"], errors="coerce")
    low = pd.to_numeric(frame["expected_min"], errors="coerce")
    high = pd.to_numeric(frame["expected_max"], errors="coerce")
    outside = (low.notna() & (rating < low)) | (high.notna() & (rating > high))
    frame["failed"] = outside & rating.notna()
    return frame.reindex(columns=columns)


def _rater_table(
    ratings: pd.DataFrame,
    checks: pd.DataFrame,
    practice: pd.DataFrame | None,
) -> pd.DataFrame:
    """Per rater: ratings given, leave-one-out consistency (flagging inattentive raters), attention
    checks seen/failed, practice items off the expected range, "can't judge" count, median time."""
    known = ratings.loc[ratings["rater"].notna()]
    base = known.groupby("rater", sort=True).agg(
        n_ratings=("rating", "count"),
        cannot_judge=("cannot_judge", "sum"),
        median_seconds=("seconds", "median"),
    )
    consistency = pd.DataFrame(columns=["rater", "n_items", "r", "mean_abs_deviation", "flagged"])
    if known["rating"].notna().any():
        consistency = stats.rater_consistency(
            known, min_items=MIN_ITEMS_FOR_FLAG, flag_below=FLAG_BELOW
        )
    table = base.join(
        consistency.set_index("rater")[["r", "mean_abs_deviation", "flagged"]], how="outer"
    )
    if checks is not None and not checks.empty:
        per_rater = checks.groupby("rater").agg(
            checks_seen=("failed", "size"), checks_failed=("failed", "sum")
        )
        table = table.join(per_rater, how="outer")
    if practice is not None and not practice.empty:
        off = attention_check_table(practice)
        per_rater = off.groupby("rater").agg(
            practice_done=("failed", "size"), practice_off=("failed", "sum")
        )
        table = table.join(per_rater, how="outer")
    for column in (
        "n_ratings",
        "cannot_judge",
        "checks_seen",
        "checks_failed",
        "practice_done",
        "practice_off",
    ):
        if column not in table:
            table[column] = 0
        table[column] = table[column].fillna(0).astype(int)
    table["flagged"] = table["flagged"].fillna(False).astype(bool)
    table["needs_attention"] = table["flagged"] | (table["checks_failed"] > 0)
    table.index.name = "rater"
    columns = [
        "n_ratings",
        "r",
        "mean_abs_deviation",
        "flagged",
        "checks_seen",
        "checks_failed",
        "practice_done",
        "practice_off",
        "cannot_judge",
        "median_seconds",
        "needs_attention",
    ]
    return (
        table.reindex(columns=columns)
        .reset_index()
        .sort_values(["needs_attention", "r"], ascending=[False, True], kind="stable")
    )


def build_report(
    *,
    ratings: pd.DataFrame,
    items: pd.DataFrame,
    pairs: pd.DataFrame,
    connective_set: ConnectiveSet,
    rule: LabelRule,
    scale: tuple[int, int],
    checks: pd.DataFrame | None = None,
    practice: pd.DataFrame | None = None,
    model: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> Report:
    """Compute the researcher page's tables.

    ``ratings``: long table (``item_key``, ``pair_id``, ``order``, ``connective``, ``rater``,
    ``rating``; optional ``cannot_judge`` bool and ``seconds``). ``items``: one row per regular
    item (``item_key``, ``pair_id``, ``order``, ``connective``, ``relation``,
    ``connective_order``). ``pairs``: ``pair_id``, ``subset``, ``origin``, ``flags`` (list).
    ``checks``/``practice``: answers on attention-check/practice items (``rater``, ``item``,
    ``text``, ``rating``, ``expected_min``, ``expected_max``). ``model``: ``{"name",
    "answer_kind": "ratings"|"choices", "answers": {...}}`` (see ratings.models.ModelRun).
    """
    report = Report(n_items=len(items))
    ratings = ratings.copy()
    for column, default in (("cannot_judge", False), ("seconds", np.nan), ("rater", np.nan)):
        if column not in ratings:
            ratings[column] = default
    ratings["rating"] = pd.to_numeric(ratings["rating"], errors="coerce")
    present = ratings.loc[ratings["rating"].notna()]
    report.ratings = present
    report.n_ratings = len(present)
    report.n_cannot_judge = int(ratings["cannot_judge"].fillna(False).astype(bool).sum())
    report.anonymous = bool(present["rater"].isna().all()) if len(present) else True
    report.n_raters = None if report.anonymous else int(present["rater"].nunique())
    check_table = attention_check_table(checks)
    if not check_table.empty:
        report.tables["attention_checks"] = check_table

    if present.empty:
        report.notes.append("No ratings yet from this source.")
        if checks is not None and not checks.empty:
            report.tables["raters"] = _rater_table(ratings, check_table, practice)
        return report

    # --- items and labels
    item_means = stats.item_summary(present)
    meta = items[["item_key", "relation", "connective_order"]]
    item_means = item_means.merge(meta, on="item_key", how="left")
    report.item_means = item_means
    report.n_items_rated = int((item_means["n"] > 0).sum())
    report.tables["items"] = item_means
    labels = stats.pair_labels(item_means, connective_set, rule)
    pair_meta = pairs[["pair_id", "subset", "origin", "flags"]].copy()
    labels = labels.merge(pair_meta, on="pair_id", how="left")
    report.tables["labels"] = labels.drop(columns=["flags"]).assign(
        flags=labels["flags"].map(lambda flags: "; ".join(flags) if isinstance(flags, list) else "")
    )
    report.tables["classes"] = stats.class_counts(labels, connective_set=connective_set)
    for key, column in (("classes_by_subset", "subset"), ("classes_by_origin", "origin")):
        grouped = labels.assign(**{column: labels[column].fillna("").replace("", "(none)")})
        if grouped[column].nunique() > 1 or (grouped[column] != "(none)").any():
            report.tables[key] = stats.class_counts(
                grouped, by=column, connective_set=connective_set
            )
    exploded = labels.explode("flags").dropna(subset=["flags"])
    exploded = exploded.loc[exploded["flags"] != ""]
    if len(exploded):
        report.tables["classes_by_flag"] = stats.class_counts(
            exploded.rename(columns={"flags": "flag"}), by="flag", connective_set=connective_set
        ).drop(index="all")

    # --- reliability
    domain = list(range(scale[0], scale[1] + 1))
    # Items as integer codes in first-seen order (what agreement.stats would make of the keys,
    # so the same units in the same order): the text keys are factorised once, not per level.
    item_codes, _ = pd.factorize(present["item_key"], sort=False)
    long = pd.DataFrame({"item": item_codes, "value": present["rating"].to_numpy()})
    rows = []
    for level in ("ordinal", "interval"):
        result = alpha_with_ci(
            long, level=level, value_domain=domain, n_boot=ALPHA_BOOTSTRAP, seed=seed
        )
        figure = Figure(
            f"alpha_{level}",
            _finite(result.value),
            _finite(result.ci_low),
            _finite(result.ci_high),
            result.note or "",
        )
        report.figures[figure.name] = figure
        rows.append(
            {
                "measure": f"Krippendorff's alpha ({level})",
                "value": figure.value,
                "ci_low": figure.low,
                "ci_high": figure.high,
                "method": f"bootstrap over items, {ALPHA_BOOTSTRAP} replicates, seed {seed}",
                "n_items": result.n_items,
                "n_ratings": result.n_annotations,
            }
        )
    # Ratings of items with two or more (item_means' n, counted per code: a text isin over a
    # million keys costs seconds).
    in_multi = (np.bincount(item_codes) >= 2)[item_codes]
    if int((item_means["n"] >= 2).sum()) >= 3:
        split = stats.split_half_reliability(present.loc[in_multi], n_splits=SPLITS, seed=seed)
        figure = Figure(
            "split_half",
            _finite(split.spearman_brown),
            _finite(split.interval[0]),
            _finite(split.interval[1]),
            f"r between halves {split.r_half:.3f}",
        )
        report.figures["split_half"] = figure
        rows.append(
            {
                "measure": "Split-half reliability of item means (Spearman–Brown)",
                "value": figure.value,
                "ci_low": figure.low,
                "ci_high": figure.high,
                "method": f"ratings split at random within items, {SPLITS} splits, seed {seed}; "
                f"r per half {split.r_half:.4f}",
                "n_items": split.n_items,
                "n_ratings": int(in_multi.sum()),
            }
        )
    report.tables["reliability"] = pd.DataFrame(rows)
    if not report.anonymous or not check_table.empty:
        report.tables["raters"] = _rater_table(ratings, check_table, practice)

    # --- model comparison
    if model is not None:
        _compare_model(report, model, item_means, labels, items, connective_set, rule)
    return report


def _compare_model(
    report: Report,
    model: Mapping[str, Any],
    item_means: pd.DataFrame,
    labels: pd.DataFrame,
    items: pd.DataFrame,
    connective_set: ConnectiveSet,
    rule: LabelRule,
) -> None:
    report.model_name = str(model["name"])
    answers: Mapping[str, Any] = model["answers"]
    model_ratings = None
    if model["answer_kind"] == "ratings":
        model_ratings = pd.DataFrame(
            {
                "item_key": list(answers),
                "rating": [np.nan if value is None else value for value in answers.values()],
            }
        )
        model_labels = stats.model_pair_labels(model_ratings, item_means, connective_set, rule)
        report.model_ratings = model_ratings.merge(
            item_means[["item_key", "mean", "connective", "relation"]], on="item_key", how="inner"
        ).rename(columns={"rating": "model", "mean": "human"})
    else:
        keys = [key.rsplit("|", 1) for key in answers]
        choices = pd.DataFrame(
            {
                "pair_id": [pair_id for pair_id, _ in keys],
                "order": [order for _, order in keys],
                "choice": [np.nan if value is None else value for value in answers.values()],
            }
        )
        model_labels = stats.model_choice_labels(choices, connective_set)
    comparison = stats.compare_with_humans(
        labels,
        model_labels,
        human_items=item_means if model_ratings is not None else None,
        model_ratings=model_ratings,
        connective_set=connective_set,
    )
    report.figures["model_accuracy"] = Figure("model_accuracy", _finite(comparison.accuracy))
    report.figures["model_accuracy_answered"] = Figure(
        "model_accuracy_answered", _finite(comparison.accuracy_answered)
    )
    report.figures["model_relation_accuracy"] = Figure(
        "model_relation_accuracy", _finite(comparison.relation_accuracy)
    )
    report.figures["model_spearman"] = Figure("model_spearman", _finite(comparison.spearman))
    report.tables["model_summary"] = pd.DataFrame(
        [
            {
                "model": report.model_name,
                "ordered_pairs": comparison.n_pairs,
                "no_answer": comparison.n_no_answer,
                "accuracy": comparison.accuracy,
                "accuracy_answered": comparison.accuracy_answered,
                "relation_accuracy": comparison.relation_accuracy,
                "spearman_items": comparison.spearman,
                "items_correlated": comparison.n_items_correlated,
            }
        ]
    )
    report.tables["model_by_class"] = comparison.by_class.reset_index(names="human_label")
    report.tables["model_by_relation"] = comparison.by_relation.reset_index(names="human_relation")
    report.tables["model_by_order"] = comparison.by_order.reset_index(names="human_order")
    report.tables["model_confusion"] = comparison.confusion.reset_index()
    if comparison.spearman_by_connective is not None:
        report.tables["model_by_connective"] = comparison.spearman_by_connective
    report.tables["model_labels"] = model_labels


def table_rows(
    frame: pd.DataFrame, *, limit: int | None = None
) -> tuple[list[str], list[list[Any]]]:
    """Column names and display rows of a table (floats rounded, NaN blank)."""
    shown = frame if limit is None else frame.head(limit)
    columns = [str(column) for column in shown.columns]
    rows = []
    for record in shown.itertuples(index=False):
        row = []
        for value in record:
            if isinstance(value, float | np.floating):
                row.append("" if not np.isfinite(value) else f"{value:.3f}")
            elif isinstance(value, bool | np.bool_):
                row.append("yes" if value else "")
            elif value is None or value is pd.NA:
                row.append("")
            else:
                row.append(value)
        rows.append(row)
    return columns, rows
