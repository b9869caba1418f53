"""The CausalT5k filtering cascade as an SVG bar chart (agreement.plots' style): at each step the
share of the raw candidates still in, here and in the paper."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt

from agreement.plots import BLUE, GREY, STYLE, _empty, _svg


def cascade_svg(steps: Sequence[dict[str, Any]]) -> str:
    if not steps or not steps[0]["count"]:
        return _empty("No cases imported yet", 6.0, 1.6)
    labels = [step["step"] for step in steps][::-1]
    here = [step["percent"] or 0 for step in steps][::-1]
    paper = [step["paper_percent"] for step in steps][::-1]
    counts = [step["count"] for step in steps][::-1]
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(6.6, 0.55 * len(steps) + 0.8))
        positions = list(range(len(labels)))
        axes.barh(
            [p + 0.18 for p in positions], here, color=BLUE, height=0.34, label="this project"
        )
        axes.barh(
            [p - 0.18 for p in positions],
            [value or 0 for value in paper],
            color=GREY,
            height=0.34,
            label="CausalT5k paper",
        )
        for position, value, count in zip(positions, here, counts, strict=True):
            axes.text(
                value, position + 0.18, f"  {count:,} ({value:.1f} %)", va="center", fontsize=8
            )
        for position, value in zip(positions, paper, strict=True):
            text = f"  {value:.1f} %" if value is not None else "  (not reported)"
            axes.text(value or 0, position - 0.18, text, va="center", color=GREY, fontsize=8)
        axes.set_yticks(positions, labels)
        axes.set_xlabel("% of the raw candidates")
        axes.set_xlim(0, 135)
        axes.grid(axis="y", visible=False)
        axes.legend(loc="lower right")
        return _svg(figure)
