"""Adaptive overlap for ratings: stop collecting an ordered pair once its label is settled.

An ordered pair (``pair_id``, ``order``) is labelled from the means of its connective items by
the one label rule, :func:`ratings.stats.pair_labels` with a :class:`ratings.stats.LabelRule`
(the rule that reproduces ExpliCa's published labels). This module asks of the same rule
whether more ratings could still change that label. A pair is *settled* when either holds:

- **the label is stable under its confidence intervals**: with every item's mean replaced by
  its t-interval bound (``ratings.stats.item_summary`` at ``confidence``), the related /
  unrelated decision is the same at all lower bounds and at all upper bounds (the rule's
  conditions only grow with the means, so it is the same everywhere in between), and a related
  pair keeps its winning connective — hence its type and order — when the winner sits at its
  lower bound and every other connective at its upper bound;
- **every item's mean is known to within a target**: each interval is narrower than
  ``mean_ci_width`` (off when None).

Never before ``floor`` ratings per item (a t-interval of two or three equal ratings has width
0), never after ``cap``. Items with fewer than two ratings have no interval and are never
settled. Pure pandas/numpy, no Django (CONVENTIONS.md, "Statistics are pure functions").

:func:`replay` applies the rule sequentially to ratings already collected (ExpliCa's 15 per
item), in a random order per item (seeded): one more rating per item of every open pair at a
time, as raters would add them. ``benchmarks/explica_replay.py`` prints what it saves.

Sequential looks at a 95 % interval are not a 95 % guarantee (every look is another chance to
stop on a fluke): the replay measures how many labels differ, it does not assume it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ratings.connectives import EXPLICA_CONNECTIVES, ConnectiveSet
from ratings.stats import PAIR_KEYS, LabelRule, item_summary, pair_labels


@dataclass(frozen=True)
class StoppingRule:
    """When an ordered pair's ratings are enough (see the module docstring)."""

    floor: int = 5
    cap: int = 15
    confidence: float = 0.95
    mean_ci_width: float | None = None
    label_rule: LabelRule = field(default_factory=LabelRule)

    def __post_init__(self) -> None:
        if not 2 <= self.floor <= self.cap:
            raise ValueError(f"floor must be from 2 to cap ({self.cap}); got {self.floor}.")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be between 0 and 1, not {self.confidence}.")
        if self.mean_ci_width is not None and self.mean_ci_width <= 0:
            raise ValueError("mean_ci_width must be positive (or None: off).")


def settled_pairs(
    ratings: pd.DataFrame,
    rule: StoppingRule,
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
) -> pd.DataFrame:
    """One row per ordered pair of a long ratings table (``ratings.stats`` layout): ``pair_id``,
    ``order``, ``label`` (the rule's label from the means), ``n_min`` (the fewest ratings of its
    items), ``stable`` (the label is stable under the intervals), ``narrow`` (every interval
    narrower than ``mean_ci_width``) and ``settled`` (``n_min`` within floor and cap and
    stable or narrow; always True at the cap)."""
    items = item_summary(ratings, confidence=rule.confidence)
    means = pair_labels(items, connective_set, rule.label_rule)
    low = pair_labels(items, connective_set, rule.label_rule, value_column="ci_low")
    high = pair_labels(items, connective_set, rule.label_rule, value_column="ci_high")
    # The winner at its lower bound, every other connective at its upper bound.
    winners = means[[*PAIR_KEYS, "best_connective"]]
    challenged_items = items.merge(winners, on=PAIR_KEYS, how="left")
    challenged_items["challenged"] = np.where(
        challenged_items["connective"] == challenged_items["best_connective"],
        challenged_items["ci_low"],
        challenged_items["ci_high"],
    )
    challenged = pair_labels(
        challenged_items, connective_set, rule.label_rule, value_column="challenged"
    )
    by_pair = [items[key] for key in PAIR_KEYS]
    per_pair = pd.DataFrame(
        {
            "n_min": items["n"].groupby(by_pair, sort=False).min(),
            "has_interval": items["ci_low"].notna().groupby(by_pair, sort=False).all(),
            "width_max": (items["ci_high"] - items["ci_low"]).groupby(by_pair, sort=False).max(),
        }
    ).reset_index()
    result = means[[*PAIR_KEYS, "label"]].merge(per_pair, on=PAIR_KEYS, how="left")
    has_interval = result["has_interval"].fillna(False).to_numpy(dtype=bool)
    stable = (
        has_interval
        & (low["is_unrelated"].to_numpy() == high["is_unrelated"].to_numpy())
        & (challenged["label"].to_numpy() == means["label"].to_numpy())
    )
    if rule.mean_ci_width is None:
        narrow = np.zeros(len(result), dtype=bool)
    else:
        narrow = has_interval & (result["width_max"].to_numpy() < rule.mean_ci_width)
    n_min = result["n_min"].to_numpy()
    result["stable"] = stable
    result["narrow"] = narrow
    result["settled"] = (n_min >= rule.cap) | ((n_min >= rule.floor) & (stable | narrow))
    return result[[*PAIR_KEYS, "label", "n_min", "stable", "narrow", "settled"]]


@dataclass(frozen=True)
class ReplayResult:
    """What sequential stopping did on one replay.

    ``pairs``: one row per ordered pair with ``n_per_item`` (ratings per item when it stopped),
    ``ratings_used`` (over its items), ``label`` (at the stop) and ``full_label`` (from every
    rating). ``ratings_used`` / ``ratings_total``: over all pairs."""

    pairs: pd.DataFrame
    ratings_used: int
    ratings_total: int

    @property
    def labels_differing(self) -> int:
        return int((self.pairs["label"] != self.pairs["full_label"]).sum())

    @property
    def share_used(self) -> float:
        return self.ratings_used / self.ratings_total if self.ratings_total else 0.0


def replay(
    ratings: pd.DataFrame,
    rule: StoppingRule,
    *,
    seed: int = 0,
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
) -> ReplayResult:
    """Replay ``ratings`` (every rating collected for each item) in a random order per item,
    seeded, adding one rating per item of every open ordered pair at a time from ``floor`` on;
    a pair stops at the first count its label is settled (:func:`settled_pairs`), or at
    ``cap``, or when its items have no more ratings. Labels at the stop are compared with the
    labels from every rating."""
    frame = ratings.dropna(subset=["rating"]).copy()
    generator = np.random.default_rng(seed)
    frame["_shuffle"] = generator.random(len(frame))
    frame = frame.sort_values(["item_key", "_shuffle"], kind="stable")
    frame["_step"] = frame.groupby("item_key", sort=False).cumcount()
    available = frame.groupby(PAIR_KEYS, sort=False)["_step"].max() + 1
    full = pair_labels(item_summary(frame), connective_set, rule.label_rule)

    stopped: dict[tuple, int] = {}
    labels: dict[tuple, str] = {}
    # Each rating's ordered pair as a number, so that "still open" is one array lookup.
    pair_code = available.index.get_indexer(pd.MultiIndex.from_frame(frame[PAIR_KEYS]))
    is_open = np.ones(len(available), dtype=bool)
    steps = frame["_step"].to_numpy()
    last = int(min(rule.cap, available.max()))
    for count in range(rule.floor, last + 1):
        if not is_open.any():
            break
        shown = frame[is_open[pair_code] & (steps < count)]
        verdict = settled_pairs(shown, rule, connective_set)
        codes = available.index.get_indexer(pd.MultiIndex.from_frame(verdict[PAIR_KEYS]))
        ends = verdict["settled"].to_numpy() | (
            count >= np.minimum(last, available.to_numpy()[codes])
        )
        for code, label in zip(codes[ends], verdict["label"].to_numpy()[ends], strict=True):
            key = available.index[code]
            stopped[key] = min(count, int(available.iloc[code]))
            labels[key] = label
            is_open[code] = False

    pairs = full[[*PAIR_KEYS, "label"]].rename(columns={"label": "full_label"})
    keys = list(zip(pairs["pair_id"], pairs["order"], strict=True))
    pairs["n_per_item"] = [stopped.get(key, 0) for key in keys]
    pairs["label"] = [labels.get(key) for key in keys]
    items_per_pair = frame.groupby(PAIR_KEYS, sort=False)["item_key"].nunique()
    used = frame.merge(pairs[[*PAIR_KEYS, "n_per_item"]], on=PAIR_KEYS, how="left")
    ratings_used = int((used["_step"] < used["n_per_item"]).sum())
    pairs["ratings_used"] = [
        min(stopped.get(key, 0), int(available[key])) * int(items_per_pair[key]) for key in keys
    ]
    return ReplayResult(pairs=pairs, ratings_used=ratings_used, ratings_total=len(frame))
