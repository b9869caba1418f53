"""Server-side SVG plots for the researcher page (matplotlib, Agg backend; no Django).

Each function returns an SVG document as text, ready to inline in a page. Text stays text
(``svg.fonttype = "none"``) so the page's font renders it, and dense scatter points are
rasterised, so a 4,800-point plot stays small.
"""

from __future__ import annotations

import html
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats as scipy_stats  # noqa: E402

from ratings.connectives import ConnectiveSet  # noqa: E402

#: Colours per relation (others cycle through the fallback list).
RELATION_COLOURS = {"causal": "#2f6fdb", "temporal": "#d9822b", "unrelated": "#8a94a6"}
FALLBACK_COLOURS = ["#2a9d8f", "#9b5de5", "#e76f51", "#588157"]
TEXT = "#1f2937"
MUTED = "#6b7280"
GRID = "#e5e7eb"

_STYLE: dict[Any, Any] = {  # matplotlib rc parameters (its stubs key them by a Literal)
    "svg.fonttype": "none",
    "svg.hashsalt": "rungwise",
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.edgecolor": GRID,
    "axes.labelcolor": TEXT,
    "axes.titlesize": 9.5,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "figure.dpi": 100,
}


def relation_colour(relation: str, relations: list[str]) -> str:
    if relation in RELATION_COLOURS:
        return RELATION_COLOURS[relation]
    others = [name for name in relations if name not in RELATION_COLOURS]
    index = others.index(relation) if relation in others else 0
    return FALLBACK_COLOURS[index % len(FALLBACK_COLOURS)]


def _svg(figure, title: str) -> str:
    buffer = io.StringIO()
    figure.savefig(
        buffer, format="svg", bbox_inches="tight", dpi=150, metadata={"Title": title, "Date": None}
    )
    plt.close(figure)
    text = buffer.getvalue()
    # Inline in HTML: drop the XML prolog and DOCTYPE, keep <svg …>; let CSS size it.
    text = text[text.index("<svg") :]
    label = html.escape(title, quote=True)
    return text.replace("<svg ", f'<svg role="img" aria-label="{label}" class="plot" ', 1)


def rating_distributions(
    ratings: pd.DataFrame,
    connective_set: ConnectiveSet,
    scale: tuple[int, int],
    *,
    by_subset: pd.Series | None = None,
) -> str:
    """Histograms of the ratings of each connective (columns), per expected subset (rows) when
    ``by_subset`` maps item keys to subsets; bars coloured by the connective's relation, with the
    mean marked."""
    low, high = scale
    points = np.arange(low, high + 1)
    frame = ratings.loc[ratings["rating"].notna(), ["item_key", "connective", "rating"]].copy()
    if by_subset is not None:
        # Each distinct item key looked up once (a million text lookups cost seconds).
        codes, keys = pd.factorize(frame["item_key"], sort=False)
        subset_of_key = pd.Series(keys).map(by_subset).fillna("").replace("", "(none)")
        frame["subset"] = subset_of_key.to_numpy(dtype=object)[codes]
        # Every key of the frame has its subset in subset_of_key: the subsets shown are its
        # distinct values (a set of the frame's million cells would cost seconds).
        present = set(subset_of_key)
        subsets = [name for name in ("causal", "temporal", "unrelated") if name in present]
        subsets += sorted(present - set(subsets))
    else:
        frame["subset"] = "all"
        subsets = ["all"]
    if len(subsets) > 6:
        frame["subset"], subsets = "all", ["all"]
    words = list(connective_set.words)
    relations = list(connective_set.relations)
    # The rows of each (subset, connective) panel, in frame order (what a boolean mask per
    # panel selects), grouped in one pass instead of a pass over every rating per panel.
    ratings_of = frame["rating"].to_numpy(dtype=float)
    panel_rows = frame.groupby(["subset", "connective"], sort=False).indices
    no_rows = np.array([], dtype=np.intp)
    with plt.rc_context(_STYLE):
        figure, axes = plt.subplots(
            len(subsets),
            len(words),
            figsize=(2.15 * len(words), 1.55 * len(subsets) + 0.5),
            sharex=True,
            sharey=True,
            squeeze=False,
        )
        for row, subset in enumerate(subsets):
            for column, word in enumerate(words):
                axis = axes[row][column]
                connective = connective_set.get(word)
                values = ratings_of[panel_rows.get((subset, word), no_rows)]
                counts = np.array([(values == point).sum() for point in points], dtype=float)
                share = counts / counts.sum() if counts.sum() else counts
                colour = relation_colour(connective.relation, relations)
                axis.bar(points, share, width=0.8, color=colour, alpha=0.85, linewidth=0)
                if len(values):
                    mean = float(values.mean())
                    axis.axvline(mean, color=TEXT, linewidth=1, linestyle="--")
                    # Label on the side away from the mean line.
                    right = mean < (low + high) / 2
                    axis.text(
                        0.97 if right else 0.03, 0.95, f"mean {mean:.1f}\nn = {len(values):,}",
                        transform=axis.transAxes, va="top", ha="right" if right else "left",
                        fontsize=7.5, color=MUTED,
                    )  # fmt: skip
                axis.grid(axis="y", color=GRID, linewidth=0.6)
                axis.set_axisbelow(True)
                axis.set_xticks(
                    points if len(points) <= 11 else points[:: max(1, len(points) // 10)]
                )
                if row == 0:
                    axis.set_title(
                        f"{word}\n{connective.relation}, {connective.order}", color=colour
                    )
                if column == 0:
                    label = "share of ratings" if subset == "all" else f"{subset} pairs\nshare"
                    axis.set_ylabel(label)
                if row == len(subsets) - 1:
                    axis.set_xlabel("rating")
        figure.tight_layout()
        return _svg(figure, "Rating distributions per connective")


def mean_by_connective(
    item_means: pd.DataFrame, connective_set: ConnectiveSet, subsets: pd.Series | None
) -> str:
    """Mean item rating per connective and sentence order, grouped by expected subset."""
    frame = item_means.copy()
    frame["subset"] = frame["item_key"].map(subsets) if subsets is not None else "all"
    frame["subset"] = frame["subset"].fillna("").replace("", "(none)")
    groups = [name for name in ("causal", "temporal", "unrelated") if name in set(frame["subset"])]
    groups += sorted(set(frame["subset"]) - set(groups))
    words = list(connective_set.words)
    relations = list(connective_set.relations)
    with plt.rc_context(_STYLE):
        figure, axis = plt.subplots(figsize=(1.2 + 1.9 * len(groups), 3.6))
        width = 0.8 / len(words)
        for index, word in enumerate(words):
            connective = connective_set.get(word)
            means = [
                frame.loc[(frame["subset"] == group) & (frame["connective"] == word), "mean"].mean()
                for group in groups
            ]
            positions = np.arange(len(groups)) + (index - (len(words) - 1) / 2) * width
            colour = relation_colour(connective.relation, relations)
            axis.bar(
                positions, means, width=width * 0.92, color=colour,
                alpha=1.0 if connective.order == "iconic" else 0.55,
                label=_literal(f"{word} ({connective.relation}, {connective.order})"),
            )  # fmt: skip
        axis.set_xticks(np.arange(len(groups)), [f"{group} pairs" for group in groups])
        axis.set_ylabel("mean item rating")
        axis.grid(axis="y", color=GRID, linewidth=0.6)
        axis.set_axisbelow(True)
        axis.legend(
            frameon=False, fontsize=7.5, ncol=2, loc="lower center", bbox_to_anchor=(0.5, 1.0)
        )
        figure.tight_layout()
        return _svg(figure, "Mean rating per connective and expected subset")


def model_scatter(
    points: pd.DataFrame,
    connective_set: ConnectiveSet,
    scale: tuple[int, int],
    *,
    model_name: str,
    seed: int = 0,
) -> str:
    """Model rating (y, jittered) against the human item mean (x), one dot per item, coloured by
    the connective's relation, with Spearman's ρ."""
    frame = points.dropna(subset=["human", "model"])
    relations = list(connective_set.relations)
    rng = np.random.default_rng(seed)
    low, high = scale
    with plt.rc_context(_STYLE):
        figure, axis = plt.subplots(figsize=(4.6, 3.6))
        for relation in relations:
            subset = frame.loc[frame["relation"] == relation]
            if subset.empty:
                continue
            jitter = rng.uniform(-0.18, 0.18, len(subset))
            axis.scatter(
                subset["human"], subset["model"].to_numpy(dtype=float) + jitter, s=7, alpha=0.45,
                color=relation_colour(relation, relations), label=relation, linewidths=0,
                rasterized=True,
            )  # fmt: skip
        axis.plot([low, high], [low, high], color=GRID, linewidth=1, zorder=0)
        axis.set_xlim(low - 0.3, high + 0.3)
        axis.set_ylim(low - 0.5, high + 0.5)
        axis.set_xlabel("human mean rating")
        axis.set_ylabel(f"{_literal(model_name)} rating")
        title = _literal(model_name)
        if len(frame) >= 2:
            rho = scipy_stats.spearmanr(frame["human"], frame["model"]).statistic
            title += f" · Spearman ρ = {rho:.2f} (n = {len(frame):,})"
        axis.set_title(title, loc="left")
        axis.grid(color=GRID, linewidth=0.6)
        axis.set_axisbelow(True)
        axis.legend(frameon=False, fontsize=7.5, loc="upper left", markerscale=2)
        figure.tight_layout()
        return _svg(figure, f"{model_name} against human means")


def _literal(text: str) -> str:
    """Text a person typed, drawn as typed: matplotlib reads "$…$" as math, so dollar signs
    are escaped (a model called "llama $3$" keeps its dollars)."""
    return str(text).replace("$", r"\$")
