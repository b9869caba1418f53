"""The human baseline as a figure (SVG), in the dashboards' style (agreement.plots: palette,
fonts as outlines, no timestamps): exact-order rate per chain length, one series per
narrative direction, each point with its 95 % Wilson interval, and the paper's 98 % as a
dashed line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator, PercentFormatter

from agreement.plots import BLUE, GREY, STYLE, VERMILLION, _empty, _svg

COLOURS = {"forward": BLUE, "reverse": VERMILLION}


def exact_by_length_svg(
    rows: Sequence[dict[str, Any]], *, paper: float | None = None, width: float = 6.0
) -> str:
    """``rows``: {"length", "direction", "exact_rate", "exact_low", "exact_high", "answers"}."""
    rows = [row for row in rows if row.get("answers")]
    if not rows:
        return _empty("No answers yet: the figure appears once chains are ordered.", width, 1.6)
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(width, 2.9))
        directions = sorted({row["direction"] for row in rows})
        for index, direction in enumerate(directions):
            points = sorted(
                (row for row in rows if row["direction"] == direction), key=lambda r: r["length"]
            )
            offset = (index - (len(directions) - 1) / 2) * 0.18
            xs = [row["length"] + offset for row in points]
            ys = [row["exact_rate"] for row in points]
            low = [row["exact_rate"] - row["exact_low"] for row in points]
            high = [row["exact_high"] - row["exact_rate"] for row in points]
            colour = COLOURS.get(direction, GREY)
            axes.errorbar(
                xs,
                ys,
                yerr=[low, high],
                fmt="o-",
                color=colour,
                markersize=4,
                linewidth=1.1,
                capsize=2,
                label=f"{direction} (n = {sum(r['answers'] for r in points)} answers)",
            )
        if paper is not None:
            axes.axhline(paper, color=GREY, linestyle=(0, (4, 3)), linewidth=0.9)
            axes.text(
                axes.get_xlim()[1],
                paper,
                f"paper: {paper:.0%} ",
                va="top",
                ha="right",
                color=GREY,
                fontsize=7.5,
            )
        axes.set_ylim(0, 1.05)
        axes.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_xlabel("Chain length (events)")
        axes.set_ylabel("Exact order (95 % Wilson CI)")
        axes.legend(loc="lower left")
        return _svg(figure)
