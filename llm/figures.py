"""The figures of the "Models against people" section (llm/README.md, "Calibration"): SVG drawn
with matplotlib in the style of the agreement dashboards (``agreement.plots``: its rc style,
palette, SVG writer and empty-figure message), from a :class:`llm.calibration.StageCalibration`.

``stage_figure(stage, name)`` reads the stage (``llm.calibration.stage_calibration``) and draws
one of ``FIGURES``; the caller has checked that the user may monitor the stage.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.ticker import PercentFormatter

from agreement import plots

# pyplot through agreement.plots, which selects the Agg backend before pyplot is imported.
from agreement.plots import BLUE, GREY, SERIES_COLOURS, STYLE, plt
from llm.calibration import FIGURES, StageCalibration, stage_calibration

__all__ = ["FIGURES", "calibration_figure", "stage_figure"]

_METRIC_NAMES = {
    "cohen_kappa": "Cohen's κ",
    "krippendorff_alpha_ordinal": "Krippendorff's α (ordinal)",
    "krippendorff_alpha_interval": "Krippendorff's α (interval)",
}
_NO_RATER = "No model rater has a vote on a completed item yet."


def metric_name(metric: str) -> str:
    return _METRIC_NAMES.get(metric, metric)


def _interval(result: Any) -> tuple[float, float, float]:
    value = float(result.value)
    low = value if result.ci_low is None else float(result.ci_low)
    high = value if result.ci_high is None else float(result.ci_high)
    return value, low, high


def _dots(axes: Any, rows: list[tuple[str, Any, str]], title: str) -> None:
    """One row per (label, AgreementResult, colour): the value and its interval."""
    lowest = 0.0
    for row, (_, result, colour) in enumerate(rows):
        if result.value is None:
            axes.text(0.02, row, "undefined", va="center", color=GREY, fontsize=7.5)
            continue
        value, low, high = _interval(result)
        axes.plot([low, high], [row, row], color=colour, linewidth=1.3, alpha=0.85)
        axes.plot([value], [row], "o", color=colour, markersize=5)
        axes.annotate(
            f"{value:.2f}",
            (value, row),
            xytext=(0, 5),
            textcoords="offset points",
            ha="center",
            fontsize=7.5,
            color=colour,
        )
        lowest = min(lowest, low)
    axes.set_yticks(range(len(rows)), [label for label, _, _ in rows])
    axes.set_ylim(len(rows) - 0.4, -0.7)
    axes.set_xlim(min(-0.05, lowest - 0.05), 1.02)
    axes.axvline(0, color="#9CA3AF", linewidth=0.7, zorder=1)
    axes.grid(axis="y", visible=False)
    axes.set_title(title, loc="left")


def agreement_figure(calibration: StageCalibration, *, width: float = 4.8) -> str:
    """Two panels on one agreement axis, one row per model rater. Top: the model against the
    human decision (κ or α with its 95 % bootstrap interval). Bottom: α of the people alone
    (grey, first row, and the dashed line) and of the people with each model as one more
    rater."""
    compared = [row for row in calibration.compared if row.result is not None]
    if not compared:
        return plots._empty(_NO_RATER, width, 1.6)
    colours = [SERIES_COLOURS[index % len(SERIES_COLOURS)] for index in range(len(compared))]
    top_rows = len(compared)
    with plt.rc_context(STYLE):
        figure, (top, bottom) = plt.subplots(
            2,
            1,
            figsize=(width, 1.5 + 0.36 * (2 * top_rows + 1)),
            sharex=True,
            height_ratios=(top_rows + 0.6, top_rows + 1.6),
            gridspec_kw={"hspace": 0.55},
        )
        _dots(
            top,
            [
                (row.short, row.result.against_people, colour)  # type: ignore[union-attr]
                for row, colour in zip(compared, colours, strict=True)
            ],
            f"Against the human decision: {metric_name(calibration.metric)}",
        )
        level = "nominal" if calibration.scale == "nominal" else calibration.scale
        _dots(
            bottom,
            [("People alone", calibration.alpha_people, GREY)]
            + [
                (f"People + {row.short}", row.result.alpha_with_model, colour)  # type: ignore[union-attr]
                for row, colour in zip(compared, colours, strict=True)
            ],
            f"Krippendorff's α ({level}) of the people",
        )
        if calibration.alpha_people.value is not None:
            bottom.axvline(
                float(calibration.alpha_people.value),
                color=GREY,
                linestyle=(0, (4, 3)),
                linewidth=0.9,
            )
        lows = [
            result.ci_low
            for result in [calibration.alpha_people]
            + [row.result.against_people for row in compared]  # type: ignore[union-attr]
            + [row.result.alpha_with_model for row in compared]  # type: ignore[union-attr]
            if result.ci_low is not None
        ]
        bottom.set_xlim(min([-0.05, *[low - 0.05 for low in lows]]), 1.02)
        bottom.set_xlabel("Agreement (95 % bootstrap CI)")
        top.tick_params(labelbottom=True)
        return plots._svg(figure)


def confusion_figure(calibration: StageCalibration, *, panel: float = 2.6) -> str:
    """One heat map per model rater: rows the human decision, columns the model's vote, each
    cell its count, shaded by its share of the row (how the model answers the items people
    decided that way). The diagonal is agreement."""
    compared = [row for row in calibration.compared if row.result is not None]
    if not compared:
        return plots._empty(_NO_RATER, 5.6, 1.6)
    labels = calibration.value_labels
    if len(labels) > 12:
        return plots._empty(
            f"{len(labels)} distinct values: too many for a confusion matrix.", 5.6, 1.6
        )
    columns = min(len(compared), 3)
    lines = -(-len(compared) // columns)
    size = max(panel, 0.9 + 0.32 * len(labels))
    with plt.rc_context(STYLE):
        figure, grid = plt.subplots(
            lines, columns, figsize=(size * columns, size * lines), squeeze=False
        )
        for index, row in enumerate(compared):
            axes = grid[index // columns][index % columns]
            assert row.result is not None
            counts = row.result.confusion
            totals = counts.sum(axis=1, keepdims=True)
            shares = np.divide(counts, totals, out=np.zeros(counts.shape), where=totals > 0)
            axes.imshow(shares, cmap="Blues", vmin=0, vmax=1, aspect="equal")
            for (line, column), count in np.ndenumerate(counts):
                axes.text(
                    column,
                    line,
                    str(count),
                    ha="center",
                    va="center",
                    fontsize=7.5,
                    color="white" if shares[line, column] > 0.6 else "#111827",
                )
            axes.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
            axes.set_yticks(range(len(labels)), labels)
            axes.set_xlabel("Model's vote")
            axes.set_ylabel("Human decision")
            axes.set_title(row.short, loc="left", fontsize=8.5)
            axes.grid(False)
            for spine in axes.spines.values():
                spine.set_visible(False)
        for index in range(len(compared), lines * columns):
            grid[index // columns][index % columns].axis("off")
        figure.tight_layout()
        return plots._svg(figure)


def reliability_figure(
    calibration: StageCalibration, *, width: float = 4.8, height: float = 3.2
) -> str:
    """The reliability plot: for each model rater, the accuracy of its votes (share equal to the
    human decision) against their mean confidence, per equal-width confidence bin; the marker's
    area is the bin's number of votes. The dashed diagonal is perfect calibration: points below
    it are over-confident. The legend gives each rater's ECE and accuracy."""
    compared = [row for row in calibration.compared if row.result is not None]
    if not any(entry.n for row in compared for entry in row.result.bins):  # type: ignore[union-attr]
        return plots._empty("No model vote with a confidence on a decided item yet.", width, 1.6)
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(width, height))
        axes.plot([0, 1], [0, 1], color=GREY, linestyle=(0, (4, 3)), linewidth=0.9)
        largest = max(entry.n for row in compared for entry in row.result.bins)  # type: ignore[union-attr]
        for index, row in enumerate(compared):
            result = row.result
            assert result is not None
            colour = SERIES_COLOURS[index % len(SERIES_COLOURS)] if len(compared) > 1 else BLUE
            shown = [entry for entry in result.bins if entry.n]
            xs = [float(entry.confidence or 0.0) for entry in shown]  # a bin with votes has both
            ys = [float(entry.accuracy or 0.0) for entry in shown]
            sizes = [18 + 160 * entry.n / largest for entry in shown]
            ece = "–" if result.ece is None else f"{result.ece:.3f}"
            accuracy = "–" if result.accuracy is None else f"{result.accuracy:.0%}"
            axes.plot(xs, ys, color=colour, linewidth=1.0, alpha=0.7)
            axes.scatter(
                xs,
                ys,
                s=sizes,
                color=colour,
                alpha=0.85,
                edgecolors="white",
                linewidths=0.6,
                label=f"{row.short}: ECE {ece}, accuracy {accuracy}",
                zorder=3,
            )
        axes.set_xlim(0, 1.02)
        axes.set_ylim(0, 1.04)
        axes.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        axes.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        axes.set_xlabel("Model's confidence (share of its samples giving its vote)")
        axes.set_ylabel("Accuracy against the\nhuman decision")
        # Below the axes: inside, it would hide points wherever they fall.
        axes.legend(
            loc="upper left", bbox_to_anchor=(0, -0.2), fontsize=7.5, ncols=1, borderaxespad=0
        )
        return plots._svg(figure)


def calibration_figure(calibration: StageCalibration, name: str) -> str:
    """The SVG of the figure ``name`` (one of ``FIGURES``)."""
    if name == "models-agreement":
        return agreement_figure(calibration)
    if name == "models-confusion":
        return confusion_figure(calibration)
    if name == "models-reliability":
        return reliability_figure(calibration)
    raise ValueError(f"no figure {name!r}")


def stage_figure(stage: Any, name: str) -> str:
    """The SVG of the figure ``name`` of ``stage``'s section (an empty figure saying so when the
    stage has no model rater)."""
    calibration = stage_calibration(stage)
    if calibration is None:
        return plots._empty("This stage has no model rater.", 5.6, 1.2)
    return calibration_figure(calibration, name)
