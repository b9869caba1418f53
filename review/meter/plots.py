"""The METER cascade as a horizontal bar chart (SVG), in the agreement dashboards' style
(agreement.plots: palette, fonts as outlines, no timestamps)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt

from agreement.plots import BLUE, GREY, STYLE, VERMILLION, _empty, _svg


def cascade_svg(steps: Sequence[dict[str, Any]]) -> str:
    """Bars: how many reached each step (blue) and how many were dropped there (vermillion)."""
    if not steps or not steps[0]["count"]:
        return _empty("No pairs imported yet", 6.0, 1.6)
    labels = [step["step"] for step in steps][::-1]
    counts = [step["count"] for step in steps][::-1]
    dropped = [step["dropped"] for step in steps][::-1]
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(6.4, 0.42 * len(steps) + 0.7))
        positions = range(len(labels))
        axes.barh(positions, counts, color=BLUE, height=0.55, label="reached this step")
        axes.barh(
            positions, dropped, left=counts, color=VERMILLION, height=0.55, label="dropped here"
        )
        for position, count, lost in zip(positions, counts, dropped, strict=True):
            note = f"{count:,}" + (f"  (−{lost:,})" if lost else "")
            axes.text(count + lost, position, "  " + note, va="center", color=GREY, fontsize=8)
        axes.set_yticks(list(positions), labels)
        axes.set_xlabel("pairs or entries")
        axes.grid(axis="y", visible=False)
        axes.set_xlim(0, max(c + d for c, d in zip(counts, dropped, strict=True)) * 1.25 or 1)
        axes.legend(loc="lower right")
        return _svg(figure)
