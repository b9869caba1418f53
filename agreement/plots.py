"""Figures of the researchers' dashboards, drawn server-side with matplotlib (Agg) as SVG.

Plain data in, SVG text out (no Django): views turn snapshots and series into the arguments.
The style is meant for a paper's appendix: white background, thin axes without the top and right
spines, a colour-blind-safe palette (Okabe & Ito), text drawn as outlines (the file looks the same
everywhere), no timestamps in the file (identical data give identical bytes).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator, PercentFormatter  # noqa: E402

#: Okabe & Ito (2008) colours, distinguishable with every common colour-vision deficiency.
BLUE, VERMILLION, GREEN, ORANGE, SKY, PURPLE, GREY = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#E69F00",
    "#56B4E9",
    "#CC79A7",
    "#6B7280",
)
SERIES_COLOURS = (BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY)

STYLE: dict[Any, Any] = {  # matplotlib rc parameters (its stubs key them by a Literal)
    # Text as outlines: the figure looks the same in every browser and in a downloaded file
    # (with text as text, a wider fallback font spilled over the figure's edges).
    "svg.fonttype": "path",
    "svg.hashsalt": "rungwise",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "axes.edgecolor": "#4B5563",
    "axes.linewidth": 0.7,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#E5E7EB",
    "grid.linewidth": 0.6,
    "xtick.color": "#374151",
    "ytick.color": "#374151",
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "lines.linewidth": 1.6,
}


@dataclass(frozen=True)
class Series:
    """One metric over time: values with their confidence bounds (None where undefined)."""

    label: str
    times: Sequence[datetime]
    values: Sequence[float | None]
    lows: Sequence[float | None]
    highs: Sequence[float | None]


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    figure.savefig(
        buffer, format="svg", bbox_inches="tight", pad_inches=0.08, metadata={"Date": None}
    )
    plt.close(figure)
    return buffer.getvalue()


def _empty(message: str, width: float, height: float) -> str:
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(width, height))
        axes.axis("off")
        axes.text(
            0.5,
            0.5,
            message,
            ha="center",
            va="center",
            color=GREY,
            fontsize=9,
            transform=axes.transAxes,
        )
        return _svg(figure)


def _time_axis(axes) -> None:
    locator = mdates.AutoDateLocator(minticks=3, maxticks=7)
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, show_offset=True))


def _nan(values: Sequence[float | None]) -> list[float]:
    return [float("nan") if value is None else float(value) for value in values]


def agreement_over_time(
    series: Sequence[Series], *, width: float = 5.6, height: float = 2.9
) -> str:
    """Each metric as a step line (figures hold until the next refresh) with its 95 % CI, on a
    shared time axis: the first metric solid with a shaded band, the others dashed with dotted
    interval edges; the legend gives each metric's latest value."""
    series = [entry for entry in series if any(value is not None for value in entry.values)]
    if not series:
        return _empty(
            "No agreement computed yet: it appears once items are complete.", width, height
        )
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(width, height))
        lowest = 0.0
        single = all(len(entry.times) == 1 for entry in series)
        for index, entry in enumerate(series):
            colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
            values, lows, highs = _nan(entry.values), _nan(entry.lows), _nan(entry.highs)
            # Datetimes: matplotlib plots them through its date converter, which its stubs
            # do not know (they type the x values as numbers).
            times: Any = list(entry.times)
            latest = next((value for value in reversed(values) if value == value), None)
            label = entry.label if latest is None else f"{entry.label}: {latest:.3f}"
            if single:
                err = (
                    [[values[0] - lows[0]], [highs[0] - values[0]]] if lows[0] == lows[0] else None
                )
                axes.errorbar(
                    times,
                    values,
                    yerr=err,
                    fmt="o",
                    color=colour,
                    capsize=3,
                    label=label,
                    markersize=4,
                    linewidth=1,
                )
            elif index == 0:
                axes.fill_between(
                    times, lows, highs, step="post", color=colour, alpha=0.16, linewidth=0
                )
                axes.step(times, values, where="post", color=colour, label=label)
            else:
                # Later metrics often track the first closely (nominal α ≈ κ): dashed, with
                # their interval as thin dotted edges, so that neither hides the other.
                dashed = (0, (5, 2))
                axes.step(
                    times,
                    values,
                    where="post",
                    color=colour,
                    label=label,
                    linestyle=dashed,
                    linewidth=1.4,
                )
                for bound in (lows, highs):
                    axes.step(
                        times,
                        bound,
                        where="post",
                        color=colour,
                        linewidth=0.6,
                        linestyle=(0, (1, 1.5)),
                    )
            finite = [value for value in lows + values if value == value]
            lowest = min([lowest, *finite])
        axes.axhline(0, color="#9CA3AF", linewidth=0.7, zorder=1)
        axes.set_ylim(min(-0.05, lowest - 0.05), 1.02)
        axes.set_ylabel("Agreement (95 % CI)")
        _time_axis(axes)
        axes.legend(loc="lower left", ncols=min(len(series), 2))
        return _svg(figure)


def progress_over_time(
    starts: Sequence[datetime],
    annotations: Sequence[int],
    cumulative_completed: Sequence[int],
    total_items: int,
    unit: str,
    *,
    width: float = 5.6,
    height: float = 3.1,
) -> str:
    """Two panels on one time axis: items completed (cumulative, with the stage's total) and
    annotations per time bucket (throughput)."""
    if not starts:
        return _empty("No annotations yet.", width, height)
    with plt.rc_context(STYLE):
        figure, (top, bottom) = plt.subplots(
            2,
            1,
            figsize=(width, height),
            sharex=True,
            height_ratios=(1.3, 1),
            gridspec_kw={"hspace": 0.12},
        )
        ends = list(starts)
        top.step(ends, cumulative_completed, where="post", color=BLUE, label="Items completed")
        top.fill_between(
            ends, 0, cumulative_completed, step="post", color=BLUE, alpha=0.10, linewidth=0
        )
        top.axhline(total_items, color=GREY, linestyle=(0, (4, 3)), linewidth=0.9)
        top.annotate(
            f"{total_items:,} items",
            (ends[0], total_items),
            xytext=(2, 3),
            textcoords="offset points",
            fontsize=7.5,
            color=GREY,
        )
        top.set_ylim(0, max(total_items, max(cumulative_completed, default=0)) * 1.12 or 1)
        top.set_ylabel("Items\ncompleted")
        top.yaxis.set_major_locator(MaxNLocator(4, integer=True))
        widths = _bar_width(unit)
        bottom.bar(
            ends, annotations, width=widths, align="edge", color=VERMILLION, alpha=0.85, linewidth=0
        )
        bottom.set_ylabel(f"Annotations\nper {unit}")
        bottom.yaxis.set_major_locator(MaxNLocator(3, integer=True))
        _time_axis(bottom)
        return _svg(figure)


def _bar_width(unit: str) -> float:
    # Widths in days (matplotlib's date unit), a little narrower than the bucket.
    return {"minute": 1 / 1440, "hour": 1 / 24, "day": 1, "week": 7}[unit] * 0.85


@dataclass(frozen=True)
class AnnotatorPoint:
    label: str
    rate: float
    low: float
    high: float
    flagged: bool


def annotator_agreement(
    points: Sequence[AnnotatorPoint], pooled: float | None, *, width: float = 6.4
) -> str:
    """A dot plot: each annotator's agreement with the leave-one-out majority and its 95 %
    Wilson interval, flagged annotators in vermillion, the pooled rate as a dashed line."""
    if not points:
        return _empty("No annotator has been compared with a majority yet.", width, 1.6)
    height = 0.6 + 0.22 * len(points)
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(width, height))
        for row, point in enumerate(points):
            colour = VERMILLION if point.flagged else BLUE
            axes.plot([point.low, point.high], [row, row], color=colour, linewidth=1.2, alpha=0.8)
            axes.plot([point.rate], [row], "o", color=colour, markersize=4.5)
        if pooled is not None:
            axes.axvline(pooled, color=GREY, linestyle=(0, (4, 3)), linewidth=0.9)
        axes.set_yticks(range(len(points)), [point.label for point in points])
        axes.invert_yaxis()
        axes.set_xlim(0, 1.02)
        axes.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        axes.set_xlabel("Agreement with the leave-one-out majority (95 % Wilson interval)")
        axes.grid(axis="y", visible=False)
        return _svg(figure)


def wilson_interval(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion (Wilson 1927)."""
    if trials <= 0:
        return 0.0, 1.0
    proportion = successes / trials
    denominator = 1 + z * z / trials
    centre = (proportion + z * z / (2 * trials)) / denominator
    half = (
        z
        * ((proportion * (1 - proportion) / trials + z * z / (4 * trials * trials)) ** 0.5)
        / denominator
    )
    return max(0.0, centre - half), min(1.0, centre + half)
