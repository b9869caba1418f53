"""The evaluation page's figure (Django-free): one figure of a release, every model beside the
release's people — a point and its 95 % interval per group, one row of points per series — in
agreement.plots' style (SVG, fonts as paths, deterministic output)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agreement.plots import STYLE  # noqa: E402

#: Colours of the series: the people first (dark), then the models.
PEOPLE_COLOUR = "#111827"
MODEL_COLOURS = ("#2563EB", "#D97706", "#059669", "#DC2626", "#7C3AED", "#0891B2", "#DB2777")


@dataclass(frozen=True)
class Series:
    """One model (or the people): per group, the value and its interval (None: undefined)."""

    label: str
    values: dict[str, tuple[float | None, float | None, float | None]]
    people: bool = False


def _svg(figure) -> str:
    buffer = io.StringIO()
    figure.savefig(
        buffer, format="svg", bbox_inches="tight", pad_inches=0.08, metadata={"Date": None}
    )
    plt.close(figure)
    return buffer.getvalue()


def models_vs_people(metric: str, groups: Sequence[str], series: Sequence[Series]) -> str:
    """A dot-and-interval plot of ``metric``: groups down the side, each series a colour."""
    with plt.rc_context(STYLE):
        height = 0.9 + 0.32 * max(1, len(groups)) * max(1, min(len(series), 4)) ** 0.5
        figure, axes = plt.subplots(figsize=(7.2, height))
        if not groups or not series:
            axes.axis("off")
            axes.text(0.5, 0.5, "No finished evaluation yet", ha="center", va="center",
                      transform=axes.transAxes)  # fmt: skip
            return _svg(figure)
        step = 0.7 / max(1, len(series))
        colours = iter(MODEL_COLOURS * (len(series) // len(MODEL_COLOURS) + 1))
        for index, one in enumerate(series):
            colour = PEOPLE_COLOUR if one.people else next(colours)
            ys, xs, lows, highs = [], [], [], []
            for row, group in enumerate(groups):
                value, low, high = one.values.get(group, (None, None, None))
                if value is None:
                    continue
                ys.append(row - 0.35 + step * (index + 0.5))
                xs.append(value)
                lows.append(value - low if low is not None else 0.0)
                highs.append(high - value if high is not None else 0.0)
            axes.errorbar(
                xs, ys, xerr=[lows, highs], fmt="D" if one.people else "o", color=colour,
                markersize=5, capsize=2.5, elinewidth=1.1, label=one.label,
            )  # fmt: skip
        axes.set_yticks(range(len(groups)), labels=list(groups))
        axes.set_ylim(len(groups) - 0.5, -0.5)
        axes.set_xlabel(f"{metric.replace('_', ' ')} (95 % interval)")
        axes.grid(axis="y", visible=False)
        axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1 - 0.45 / height),
                    ncol=min(3, len(series)))  # fmt: skip
        return _svg(figure)
