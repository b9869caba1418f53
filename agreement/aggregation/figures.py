"""The reliability figure of the "Beyond majority vote" section (agreement/aggregation/section.py),
drawn with the dashboards' style (agreement/plots.py)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt

from agreement.plots import BLUE, GREY, STYLE, _empty, _svg


def reliability_svg(aggregation: Any) -> str:
    """One panel per model: each annotator's reliability (a dot) and its 95 % bootstrap interval
    (a line), annotators sorted by the Dawid–Skene figure, best on top."""
    if aggregation is None or not aggregation.models:
        return _empty("No annotator model fitted on this stage yet.", 5.6, 1.2)
    models = aggregation.models
    order = [row.name for row in models[0].raters]
    height = 1.0 + 0.26 * len(order)
    with plt.rc_context(STYLE):
        figure, axes_row = plt.subplots(
            1, len(models), figsize=(2.6 * len(models) + 1.2, height), sharey=True, squeeze=False
        )
        for axes, model in zip(axes_row[0], models, strict=True):
            by_name = {row.name: row for row in model.raters}
            for position, name in enumerate(reversed(order)):
                row = by_name.get(name)
                if row is None or row.value is None:
                    continue
                if row.low is not None and row.high is not None:
                    axes.plot([row.low, row.high], [position, position], color=GREY, lw=1.4)
                axes.plot([row.value], [position], "o", color=BLUE, ms=4.5)
            axes.set_title(f"{model.label}: {model.reliability_name}")
            axes.set_yticks(range(len(order)), list(reversed(order)))
            axes.set_ylim(-0.6, len(order) - 0.4)
            axes.grid(axis="y", visible=False)
            if model.key != "glad":
                axes.set_xlim(-0.02, 1.02)
        figure.tight_layout()
        return _svg(figure)
