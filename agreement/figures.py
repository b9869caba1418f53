"""The figures of a stage's dashboard: the series each one plots, read from the selectors and
drawn by ``agreement.plots`` (CONTRIBUTING.md, "Thin views").

A module of its own, not part of ``agreement.selectors``: it imports matplotlib (through
``agreement.plots``), which the workers and the release export that read the selectors do not
need. The caller has checked that the user may monitor the stage
(``access_project(..., MONITOR)``).
"""

from __future__ import annotations

from agreement import plots, sections, selectors
from agreement.selectors import ProgressSeries
from annotation.models import Stage

#: The figures a stage offers: agreement over time, progress over time, agreement per annotator.
PLOTS = ("agreement", "progress", "annotators")


def offers(plot: str) -> bool:
    """Whether ``plot`` names a figure of the stage page: its own (``PLOTS``) or one of a
    registered section's (``agreement.sections``: the models against people, for example)."""
    return plot in PLOTS or plot in sections.figure_names()


def agreement_series(stage: Stage) -> list[plots.Series]:
    """One series per headline metric computed for the stage, oldest figure first."""
    history = selectors.agreement_history(stage, metrics=selectors.HEADLINE_METRICS)
    return [
        plots.Series(
            label=selectors.METRIC_LABELS.get(metric, metric),
            times=[row.computed_at for row in rows],
            values=[row.value for row in rows],
            lows=[row.ci_low for row in rows],
            highs=[row.ci_high for row in rows],
        )
        for metric in selectors.HEADLINE_METRICS
        if (rows := history.get(metric))
    ]


def annotator_points(stage: Stage) -> tuple[list[plots.AnnotatorPoint], float | None]:
    """Each annotator compared with the majority at least once: their agreement rate with its
    Wilson interval; and the pooled rate of every comparison (None without any)."""
    rows, _ = selectors.annotator_rows(stage, sort="majority_agreement", descending=True)
    points = []
    agree = compared = 0
    for row in rows:
        quality = row.quality
        if not quality.get("n_compared"):
            continue
        low, high = plots.wilson_interval(quality["n_agree"], quality["n_compared"])
        points.append(
            plots.AnnotatorPoint(
                label=row.name,
                rate=quality["majority_agreement"],
                low=low,
                high=high,
                flagged=bool(quality.get("flags")),
            )
        )
        agree += quality["n_agree"]
        compared += quality["n_compared"]
    return points, agree / compared if compared else None


def stage_figure(stage: Stage, plot: str, *, progress_series: ProgressSeries | None = None) -> str:
    """The SVG text of the figure ``plot`` (``offers(plot)``: the caller checks the name),
    drawn now (``agreement.stored`` keeps a large stage's own figures drawn);
    ``progress_series``: the progress series already read, if the caller has it."""
    if plot not in PLOTS:
        return sections.figure(stage, plot)
    if plot == "agreement":
        return plots.agreement_over_time(agreement_series(stage))
    if plot == "progress":
        progress = progress_series or selectors.stage_progress_series(stage)
        return plots.progress_over_time(
            progress.starts,
            progress.annotations,
            progress.cumulative_completed,
            progress.total_items,
            progress.unit,
        )
    points, pooled = annotator_points(stage)
    return plots.annotator_agreement(points, pooled)
