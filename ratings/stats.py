"""Aggregation, labels, reliability and model comparison for ExpliCa-style ratings.

One module (about 800 lines) for the ExpliCa computations, which all read the same long
ratings table and label rule; the rule is easier to audit in one place.

Pure pandas/numpy/scipy (plus ``krippendorff``); no Django. Everything starts from a *long
ratings table*, one row per rating::

    item_key   pair_id  order  connective  rater  rating
    "7:AB:so"  7        "AB"   "so"        "u12"  8
    "7:AB:so"  7        "AB"   "so"        NaN    NaN     <- missing ratings are allowed

``order`` is the sentence order of the rated item (``"AB"``: sentence A written first). ``rater``
may be missing entirely (anonymous crowd data such as ExpliCa's); only the per-rater check needs
it. The *ordered pair* ``(pair_id, order)`` is what gets a label: its four items (one per
connective) are compared.

Labels (ExpliCa, Miliani et al. 2025): the connective with the highest mean gives the relation
TYPE (causal/temporal) and ORDER (iconic/anti-iconic) of the ordered pair; an ordered pair is
UNRELATED when no connective's mean is high enough and the mean rating is low. The exact reading
is a :class:`LabelRule`. Its defaults are the settings that reproduce the published ExpliCa labels:

Fidelity (``condition_human`` of ``explica_freq_4800.tsv``, 1,200 ordered pairs). The means
recomputed from the 15 raw ratings per item (``accept_answers``) equal the published means (to
1.8e-15; 4,465 of 4,800 bit for bit) and the SDs equal ``accept_st_dev``, so raw ratings and
published means give identical labels:

- **1,200 / 1,200 reproduced** by the defaults: unrelated when the best connective mean is
  ``< 6`` (strict) AND the mean of the ordered pair's four connective means is ``< 5``;
  otherwise the best connective decides; ties go to the first of because > so > after > then
  (the column order of the released files; i.e. causal before temporal, and within a relation
  anti-iconic before iconic).
- Reading "no connective above 6" literally (best ``<= 6``): 1,195. Five ordered pairs have a
  best mean of exactly 6.0 and are published as related (222 AB, 324 BA, 446 BA, 481 AB,
  541 AB).
- Best ``< 6`` alone, without the mean condition: 1,199. Pair 548 AB has best 5.87 but a mean
  of 5.20 and is published as temporal-anti-iconic.
- "Mean rating" over both orders (8 items) instead of the ordered pair: 1,197 (228 BA, 278 AB,
  353 BA become related).
- 23 ordered pairs have a tied best mean, 8 of them related (the 15 unrelated ones do not
  depend on ties). Of the 24 possible priorities only because > so > after > then gets all 8
  right (the others: 1,192–1,199); ``tie_break="unresolved"`` labels those 8 ``"tied"``.
- ``< 5`` versus ``<= 5`` for the mean makes no difference on this data.

Confidence intervals are t-based: ``mean ± t(1 - (1 - confidence)/2, n - 1) · s / √n`` with the
sample SD ``s`` (ddof = 1); the reported ``sd`` is the population SD (ddof = 0), as ExpliCa
publishes (``accept_st_dev``). Items with fewer than two ratings get no interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from ratings.connectives import EXPLICA_CONNECTIVES, ConnectiveSet

RATING_COLUMNS = ("item_key", "pair_id", "order", "connective", "rater", "rating")
PAIR_KEYS = ["pair_id", "order"]

UNRELATED = "unrelated"
TIED = "tied"
NO_DATA = "no_data"
NO_ANSWER = "no_answer"


# --------------------------------------------------------------------------- items


def _require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{what} is missing column(s): {', '.join(missing)}.")


def item_summary(ratings: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per-item mean, SD, n and t-based confidence interval.

    Returns one row per ``item_key`` (in first-seen order) with ``pair_id``, ``order``,
    ``connective``, ``n`` (non-missing ratings), ``mean``, ``sd`` (population, ddof = 0),
    ``sd_sample`` (ddof = 1), ``ci_low`` and ``ci_high``. Items whose ratings are all missing
    keep a row with ``n == 0`` and NaN statistics.
    """
    _require_columns(ratings, ("item_key", "pair_id", "order", "connective", "rating"), "Ratings")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}.")
    values = pd.to_numeric(ratings["rating"], errors="coerce")
    grouped = values.groupby(ratings["item_key"], sort=False)
    summary = pd.DataFrame(
        {
            "n": grouped.count(),
            "mean": grouped.mean(),
            "sd": grouped.std(ddof=0),
            "sd_sample": grouped.std(ddof=1),
        }
    )
    meta = ratings.drop_duplicates("item_key").set_index("item_key")[
        ["pair_id", "order", "connective"]
    ]
    summary = meta.join(summary)
    n = summary["n"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        t_value = scipy_stats.t.ppf(1 - (1 - confidence) / 2, n - 1)
        half_width = t_value * summary["sd_sample"].to_numpy() / np.sqrt(n)
    half_width = np.where(n >= 2, half_width, np.nan)
    summary["ci_low"] = summary["mean"] - half_width
    summary["ci_high"] = summary["mean"] + half_width
    summary.loc[summary["n"] == 0, "sd"] = np.nan
    summary.index.name = "item_key"
    return summary.reset_index()


# --------------------------------------------------------------------------- labels


@dataclass(frozen=True)
class LabelRule:
    """How an ordered pair's connective means become a label.

    The ordered pair is UNRELATED when every enabled condition holds:

    - ``best_mean_threshold``: the highest connective mean is below it (``best < t``; with
      ``best_mean_inclusive`` also ``best == t``). ``None`` disables the condition.
    - ``overall_mean_threshold``: the "mean rating" is below it (``<``; ``<=`` when
      ``overall_mean_inclusive``). The mean rating is the mean of the connective means of the
      ordered pair (``overall_mean_scope="ordered_pair"``) or of all the pair's item means in both
      sentence orders (``"pair"``). ``None`` disables the condition.

    If both are disabled nothing is unrelated. Otherwise the best connective gives the label
    ``"<relation>-<order>"``. Means closer than ``tie_tolerance`` tie; ``tie_break="priority"``
    picks the first tied connective in ``tie_priority`` (``None``: connective-set order; words
    not listed come after, in set order), ``tie_break="unresolved"`` labels the pair ``"tied"``.

    The defaults reproduce all 1,200 published ExpliCa labels (see the module docstring).
    """

    best_mean_threshold: float | None = 6.0
    best_mean_inclusive: bool = False
    overall_mean_threshold: float | None = 5.0
    overall_mean_inclusive: bool = False
    overall_mean_scope: Literal["ordered_pair", "pair"] = "ordered_pair"
    tie_break: Literal["priority", "unresolved"] = "priority"
    tie_priority: tuple[str, ...] | None = ("because", "so", "after", "then")
    tie_tolerance: float = 1e-9

    def __post_init__(self) -> None:
        if self.overall_mean_scope not in ("ordered_pair", "pair"):
            raise ValueError("overall_mean_scope must be 'ordered_pair' or 'pair'.")
        if self.tie_break not in ("priority", "unresolved"):
            raise ValueError("tie_break must be 'priority' or 'unresolved'.")
        if self.tie_tolerance < 0:
            raise ValueError("tie_tolerance must not be negative.")

    def priority(self, connective_set: ConnectiveSet) -> list[str]:
        listed = [word for word in (self.tie_priority or ()) if word in connective_set.words]
        return listed + [word for word in connective_set.words if word not in listed]


def _below(values: np.ndarray, threshold: float, inclusive: bool) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return values <= threshold if inclusive else values < threshold


def _wide_means(
    items: pd.DataFrame, connective_set: ConnectiveSet, value_column: str
) -> pd.DataFrame:
    _require_columns(items, ("pair_id", "order", "connective", value_column), "Items")
    unknown = sorted(set(items["connective"].dropna().astype(str)) - set(connective_set.words))
    if unknown:
        raise ValueError(
            f"Items use connectives outside the set {connective_set.name!r}: {', '.join(unknown)}."
        )
    bad_orders = sorted(set(items["order"].dropna().astype(str)) - {"AB", "BA"})
    if bad_orders:
        raise ValueError(f"Item order must be 'AB' or 'BA'; found {', '.join(bad_orders)}.")
    duplicated = items.duplicated(["pair_id", "order", "connective"])
    if duplicated.any():
        first = items.loc[duplicated, ["pair_id", "order", "connective"]].iloc[0].tolist()
        raise ValueError(f"Items repeat (pair_id, order, connective), e.g. {first}.")
    wide = items.pivot(index=PAIR_KEYS, columns="connective", values=value_column)
    wide = wide.reindex(columns=list(connective_set.words)).astype(float)
    # Keep the ordered pairs in first-seen order, not sorted.
    seen = pd.MultiIndex.from_frame(items[PAIR_KEYS].drop_duplicates())
    return wide.reindex(seen)


def pair_labels(
    items: pd.DataFrame,
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
    rule: LabelRule | None = None,
    *,
    value_column: str = "mean",
) -> pd.DataFrame:
    """Label every ordered pair from its per-connective means.

    ``items`` has one row per item with ``pair_id``, ``order``, ``connective`` and the mean
    (``value_column``), e.g. :func:`item_summary` output. A connective without a mean is
    ignored (``n_rated`` says how many were available). Returns one row per ordered pair with
    ``mean_<connective>`` columns, ``n_rated``, ``best_mean``, ``overall_mean``,
    ``best_connective``, ``tied`` (bool), ``tied_connectives`` (comma-separated),
    ``is_unrelated``, ``relation`` (``"unrelated"`` for unrelated pairs), ``connective_order``,
    ``label`` (``"causal-iconic"``, …, ``"unrelated"``, ``"tied"`` or ``"no_data"``) and
    ``direction`` (``"A>B"``/``"B>A"``: which sentence of the pair comes/causes first).
    """
    rule = rule or LabelRule()
    wide = _wide_means(items, connective_set, value_column)
    means = wide.to_numpy()
    n_rated = np.sum(~np.isnan(means), axis=1)
    has_data = n_rated > 0
    with np.errstate(invalid="ignore"):
        safe = np.where(np.isnan(means), -np.inf, means)
        best_mean = np.where(has_data, safe.max(axis=1), np.nan)
        ordered_mean = np.where(has_data, np.nansum(means, axis=1) / np.maximum(n_rated, 1), np.nan)
    if rule.overall_mean_scope == "pair":
        sums = (
            pd.Series(np.nansum(means, axis=1))
            .groupby(wide.index.get_level_values("pair_id"))
            .transform("sum")
        )
        counts = pd.Series(n_rated).groupby(wide.index.get_level_values("pair_id")).transform("sum")
        with np.errstate(invalid="ignore", divide="ignore"):
            overall_mean = (sums.to_numpy() / counts.to_numpy()).astype(float)
        overall_mean = np.where(counts.to_numpy() > 0, overall_mean, np.nan)
    else:
        overall_mean = ordered_mean

    tied_mask = np.abs(safe - best_mean[:, None]) <= rule.tie_tolerance
    tied_mask &= has_data[:, None]
    words = np.array(connective_set.words, dtype=object)
    priority = rule.priority(connective_set)
    rank = np.array([priority.index(word) for word in connective_set.words])
    ranked = np.where(tied_mask, rank[None, :], len(rank))
    best_index = ranked.argmin(axis=1)
    best_connective = np.where(has_data, words[best_index], None)
    n_tied = tied_mask.sum(axis=1)
    tied = n_tied > 1
    tied_connectives = [
        ",".join(words[row]) if count > 1 else ""
        for row, count in zip(tied_mask, n_tied, strict=True)
    ]

    conditions = []
    if rule.best_mean_threshold is not None:
        conditions.append(_below(best_mean, rule.best_mean_threshold, rule.best_mean_inclusive))
    if rule.overall_mean_threshold is not None:
        conditions.append(
            _below(overall_mean, rule.overall_mean_threshold, rule.overall_mean_inclusive)
        )
    if conditions:
        is_unrelated = np.logical_and.reduce(conditions) & has_data
    else:
        is_unrelated = np.zeros(len(wide), dtype=bool)

    relation_of = {c.word: c.relation for c in connective_set.connectives}
    order_of = {c.word: c.order for c in connective_set.connectives}
    outcomes = []  # (relation, connective order, label) per ordered pair
    for word, unrelated, data, is_tied in zip(
        best_connective, is_unrelated, has_data, tied, strict=True
    ):
        if not data:
            outcomes.append((None, None, NO_DATA))
        elif unrelated:
            outcomes.append((UNRELATED, None, UNRELATED))
        elif is_tied and rule.tie_break == "unresolved":
            outcomes.append((None, None, TIED))
        else:
            outcomes.append(
                (relation_of[word], order_of[word], f"{relation_of[word]}-{order_of[word]}")
            )
    relation = [outcome[0] for outcome in outcomes]
    connective_order = [outcome[1] for outcome in outcomes]
    label = [outcome[2] for outcome in outcomes]
    if rule.tie_break == "unresolved":
        best_connective = np.where(tied & ~is_unrelated, None, best_connective)

    result = wide.copy()
    result.columns = [f"mean_{word}" for word in connective_set.words]
    result = result.reset_index()
    sentence_order = result["order"].to_numpy()
    direction = [
        None
        if order_value is None
        else ("A>B" if (order_value == "iconic") == (sentence == "AB") else "B>A")
        for order_value, sentence in zip(connective_order, sentence_order, strict=True)
    ]
    result = result.assign(
        n_rated=n_rated,
        best_mean=best_mean,
        overall_mean=overall_mean,
        best_connective=best_connective,
        tied=tied,
        tied_connectives=tied_connectives,
        is_unrelated=is_unrelated,
        relation=relation,
        connective_order=connective_order,
        label=label,
        direction=direction,
    )
    return result


def label_pairs(
    ratings: pd.DataFrame,
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
    rule: LabelRule | None = None,
) -> pd.DataFrame:
    """:func:`pair_labels` of :func:`item_summary` of a long ratings table."""
    return pair_labels(item_summary(ratings), connective_set, rule)


def label_classes(connective_set: ConnectiveSet = EXPLICA_CONNECTIVES) -> list[str]:
    """The label vocabulary in display order: the set's relation-order classes, then unrelated."""
    return [*connective_set.labels, UNRELATED]


def class_counts(
    labels: pd.DataFrame,
    *,
    by: str | Sequence[str] | None = None,
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
    label_column: str = "label",
) -> pd.DataFrame:
    """Count ordered pairs per class, like ExpliCa's class table.

    Columns are the classes of :func:`label_classes` (always present, zero when empty), then any
    other label seen (``tied``, ``no_data``, ``no_answer``), then ``total``. Rows are the groups of
    ``by`` (columns of ``labels``, e.g. ``"subset"`` or ``["subset", "origin"]``) followed by an
    ``"all"`` row; with ``by=None`` the only row is ``"all"``.
    """
    _require_columns(labels, [label_column], "Labels")
    classes = label_classes(connective_set)
    extra = [value for value in pd.unique(labels[label_column].dropna()) if value not in classes]
    columns = classes + sorted(extra)
    overall = labels[label_column].value_counts().reindex(columns, fill_value=0).to_frame("all").T
    if by is None:
        table = overall
    else:
        keys = [by] if isinstance(by, str) else list(by)
        _require_columns(labels, keys, "Labels")
        grouped = pd.crosstab([labels[key] for key in keys], labels[label_column]).reindex(
            columns=columns, fill_value=0
        )
        if len(keys) > 1:
            overall.index = pd.MultiIndex.from_tuples([("all",) * len(keys)], names=keys)
        else:
            overall.index = pd.Index(["all"], name=keys[0])
        table = pd.concat([grouped, overall])
    table = table.astype(int)
    table["total"] = table.sum(axis=1)
    table.columns.name = None
    return table


# --------------------------------------------------------------------------- reliability


def value_count_matrix(
    ratings: pd.DataFrame, *, value_domain: Sequence[float] | None = None
) -> tuple[np.ndarray, list[Any], list[Any]]:
    """Units × values count matrix for Krippendorff's α.

    Returns ``(counts, value_domain, unit_keys)``: ``counts[u, v]`` is how many ratings of item
    ``unit_keys[u]`` equal ``value_domain[v]``. Missing ratings are skipped. Ratings outside a
    given ``value_domain`` raise ``ValueError``.
    """
    _require_columns(ratings, ("item_key", "rating"), "Ratings")
    present = ratings.loc[ratings["rating"].notna(), ["item_key", "rating"]]
    values = pd.to_numeric(present["rating"])
    domain = sorted(values.unique().tolist()) if value_domain is None else list(value_domain)
    outside = sorted(set(values.unique().tolist()) - set(domain))
    if outside:
        raise ValueError(f"Ratings outside the value domain {domain}: {outside}.")
    units = pd.Index(pd.unique(present["item_key"]))
    unit_codes = units.get_indexer(present["item_key"])
    value_codes = pd.Index(domain).get_indexer(values)
    counts = np.zeros((len(units), len(domain)), dtype=np.int64)
    np.add.at(counts, (unit_codes, value_codes), 1)
    return counts, domain, units.tolist()


def krippendorff_alpha(
    ratings: pd.DataFrame,
    *,
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "interval",
    value_domain: Sequence[float] | None = None,
) -> float:
    """Krippendorff's α over items (units), computed from per-item value counts.

    α depends only on which values co-occur within a unit (the coincidence matrix), never on who
    gave them, so the rater column is ignored and anonymous ratings — ExpliCa's 15 ratings per
    item are not linked to people across items — are handled exactly: the counts matrix is passed
    as ``krippendorff.alpha(value_counts=...)``. Items with fewer than two ratings contribute
    nothing. For ``ordinal``, pass the full scale as ``value_domain`` (e.g. ``range(1, 11)``):
    unused scale points change the ordinal distances.
    """
    counts, domain, _ = value_count_matrix(ratings, value_domain=value_domain)
    return float(
        krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level)
    )


@dataclass(frozen=True)
class SplitHalfResult:
    """Split-half reliability of item means.

    ``r_half``: mean Pearson correlation, over ``n_splits`` random splits, between the item means
    of the two halves; ``spearman_brown``: ``2 r / (1 + r)`` of ``r_half`` (the reliability of the
    full-size mean); ``interval``: 2.5 % and 97.5 % quantiles of the per-split corrected values.
    """

    r_half: float
    spearman_brown: float
    interval: tuple[float, float]
    n_items: int
    n_splits: int
    split_by: str
    per_split: np.ndarray = field(repr=False)


def spearman_brown(r: float | np.ndarray, factor: float = 2.0) -> float | np.ndarray:
    """Spearman–Brown prophecy: reliability of a measure ``factor`` times as long.

    NaN where it is undefined (``1 + (factor - 1) r = 0``, e.g. ``r = -1`` when doubling)."""
    values = np.asarray(r, dtype=float)
    denominator = 1 + (factor - 1) * values
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(denominator != 0, factor * values / denominator, np.nan)
    return float(result) if np.ndim(r) == 0 else result


def _row_correlation(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r between the columns of x and y (items × splits), ignoring NaN rows per column."""
    valid = ~(np.isnan(x) | np.isnan(y))
    if valid.all():
        # The same sums as below without the masks (which then change nothing): at a million
        # ratings the masked temporaries of items × splits cost seconds.
        count = np.full(x.shape[1], x.shape[0])
        with np.errstate(invalid="ignore", divide="ignore"):
            dx = x - x.sum(axis=0) / count
            dy = y - y.sum(axis=0) / count
            return (dx * dy).sum(axis=0) / np.sqrt((dx * dx).sum(axis=0) * (dy * dy).sum(axis=0))
    count = valid.sum(axis=0)
    x = np.where(valid, x, 0.0)
    y = np.where(valid, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_x = x.sum(axis=0) / count
        mean_y = y.sum(axis=0) / count
        dx = np.where(valid, x - mean_x, 0.0)
        dy = np.where(valid, y - mean_y, 0.0)
        return (dx * dy).sum(axis=0) / np.sqrt((dx * dx).sum(axis=0) * (dy * dy).sum(axis=0))


def split_half_reliability(
    ratings: pd.DataFrame,
    *,
    n_splits: int = 200,
    seed: int = 0,
    split_by: Literal["rating", "rater"] = "rating",
) -> SplitHalfResult:
    """Random split-half reliability of item means with Spearman–Brown correction (seeded).

    ``split_by="rating"`` (for anonymous data): each item's ratings are shuffled and cut in two
    halves independently per item (an odd count gives the second half one more rating).
    ``split_by="rater"``: raters are randomly split into two groups once per split and each item's
    half means come from each group's raters; needs rater ids shared across items. Items with
    an empty half are left out of that split.
    """
    _require_columns(ratings, ("item_key", "rating"), "Ratings")
    if n_splits < 1:
        raise ValueError("n_splits must be at least 1.")
    rng = np.random.default_rng(seed)
    present = ratings.loc[ratings["rating"].notna()].copy()
    present["rating"] = pd.to_numeric(present["rating"])
    items = pd.Index(pd.unique(present["item_key"]))
    item_codes = items.get_indexer(present["item_key"])
    values = present["rating"].to_numpy(dtype=float)

    if split_by == "rating":
        position = present.groupby("item_key", sort=False).cumcount().to_numpy()
        width = int(position.max()) + 1 if len(position) else 0
        matrix = np.full((len(items), width), np.nan)
        matrix[item_codes, position] = values
        usable = np.sum(~np.isnan(matrix), axis=1) >= 2
        matrix = matrix[usable]
        n_per_item = np.sum(~np.isnan(matrix), axis=1)
        first_size = n_per_item // 2
        first_means = np.empty((len(matrix), n_splits))
        second_means = np.empty((len(matrix), n_splits))
        filled = np.where(np.isnan(matrix), 0.0, matrix)
        missing = np.isnan(matrix)
        rows = np.arange(len(matrix))
        kth = first_size - 1
        total = filled.sum(axis=1)
        for split in range(n_splits):
            keys = rng.random(matrix.shape)
            keys[missing] = np.inf
            # A rating is in the first half when its key is among its item's first_size
            # smallest: one sort and a threshold instead of ranking every key (argsort of an
            # argsort), the same halves (keys are distinct floats; missing ones are +inf and
            # never among the smallest, since first_size is at most half the ratings).
            threshold = np.sort(keys, axis=1)[rows, kth]
            in_first = keys <= threshold[:, None]
            first_sum = np.where(in_first, filled, 0.0).sum(axis=1)
            first_means[:, split] = first_sum / first_size
            second_means[:, split] = (total - first_sum) / (n_per_item - first_size)
        n_items = int(usable.sum())
    elif split_by == "rater":
        _require_columns(ratings, ["rater"], "Ratings")
        if present["rater"].isna().any():
            raise ValueError("split_by='rater' needs a rater id on every rating.")
        raters = pd.Index(pd.unique(present["rater"]))
        if len(raters) < 2:
            raise ValueError("split_by='rater' needs at least two raters.")
        rater_codes = raters.get_indexer(present["rater"])
        first_means = np.empty((len(items), n_splits))
        second_means = np.empty((len(items), n_splits))
        for split in range(n_splits):
            group = rng.permutation(len(raters)) < len(raters) // 2
            in_first = group[rater_codes]
            for target, mask in ((first_means, in_first), (second_means, ~in_first)):
                sums = np.bincount(item_codes[mask], weights=values[mask], minlength=len(items))
                counts = np.bincount(item_codes[mask], minlength=len(items))
                with np.errstate(invalid="ignore", divide="ignore"):
                    target[:, split] = np.where(counts > 0, sums / counts, np.nan)
        n_items = len(items)
    else:
        raise ValueError("split_by must be 'rating' or 'rater'.")

    per_split = _row_correlation(first_means, second_means)
    corrected = spearman_brown(per_split)
    r_half = float(np.nanmean(per_split))
    low, high = np.nanquantile(corrected, [0.025, 0.975])
    return SplitHalfResult(
        r_half=r_half,
        spearman_brown=float(spearman_brown(r_half)),
        interval=(float(low), float(high)),
        n_items=n_items,
        n_splits=n_splits,
        split_by=split_by,
        per_split=per_split,
    )


def rater_consistency(
    ratings: pd.DataFrame,
    *,
    min_items: int = 10,
    flag_below: float = 0.3,
    method: Literal["pearson", "spearman"] = "pearson",
) -> pd.DataFrame:
    """Correlate each rater with the leave-one-out item means, to flag inattentive raters.

    For every rating the leave-one-out mean is the mean of the *other* ratings of the item
    (undefined when the item has no other rating). Per rater: ``n_items`` used, ``r`` (Pearson,
    or Spearman on ranks), ``mean_abs_deviation`` from the leave-one-out means, and ``flagged``
    when ``r < flag_below`` or ``r`` is undefined (a rater who gives one value everywhere) while
    ``n_items >= min_items``. Raters with fewer items are reported but never flagged. Needs rater
    ids: anonymous data (all ``rater`` missing) raises ``ValueError``.
    """
    _require_columns(ratings, ("item_key", "rater", "rating"), "Ratings")
    present = ratings.loc[ratings["rating"].notna()].copy()
    if present["rater"].isna().all():
        raise ValueError("Per-rater consistency needs rater ids; these ratings are anonymous.")
    present = present.loc[present["rater"].notna()]
    present["rating"] = pd.to_numeric(present["rating"])
    # Per-item sum and count broadcast to the ratings (transform: no text reindex of every row).
    per_item = present.groupby("item_key", sort=False)["rating"]
    item_sum = per_item.transform("sum").to_numpy()
    item_count = per_item.transform("count").to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        present["loo_mean"] = np.where(
            item_count > 1,
            (item_sum - present["rating"].to_numpy()) / (item_count - 1),
            np.nan,
        )
    present = present.loc[present["loo_mean"].notna()]
    rows = []
    for rater, own in present.groupby("rater", sort=False):
        x = own["rating"].to_numpy(dtype=float)
        y = own["loo_mean"].to_numpy(dtype=float)
        if method == "spearman":
            x, y = scipy_stats.rankdata(x), scipy_stats.rankdata(y)
        r = np.nan
        if len(x) >= 2 and np.std(x) > 0 and np.std(y) > 0:
            r = float(np.corrcoef(x, y)[0, 1])
        n_items = len(own)
        rows.append(
            {
                "rater": rater,
                "n_items": n_items,
                "r": r,
                "mean_abs_deviation": float(np.mean(np.abs(own["rating"] - own["loo_mean"]))),
                "flagged": bool(n_items >= min_items and (np.isnan(r) or r < flag_below)),
            }
        )
    return pd.DataFrame(rows, columns=["rater", "n_items", "r", "mean_abs_deviation", "flagged"])


# --------------------------------------------------------------------------- models


def model_pair_labels(
    model_ratings: pd.DataFrame,
    items: pd.DataFrame,
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
    rule: LabelRule | None = None,
    *,
    missing: Literal["no_answer", "ignore"] = "no_answer",
) -> pd.DataFrame:
    """Labels from a model's 1–10 rating of each item, with the same rule as for humans.

    ``model_ratings`` has ``item_key`` and ``rating``; ``-1``, NaN or non-numbers mean no
    answer. ``items`` maps ``item_key`` to ``pair_id``/``order``/``connective`` (e.g.
    :func:`item_summary` output) and defines which items exist. With ``missing="no_answer"`` an
    ordered pair with any unanswered item is labelled ``"no_answer"``; with ``"ignore"`` it is
    labelled from the answered items (``"no_data"`` when none).
    """
    _require_columns(model_ratings, ("item_key", "rating"), "Model ratings")
    answers = pd.to_numeric(model_ratings.set_index("item_key")["rating"], errors="coerce")
    answers = answers.where(answers != -1)
    frame = items[["item_key", "pair_id", "order", "connective"]].copy()
    frame["model_rating"] = answers.reindex(frame["item_key"]).to_numpy()
    labels = pair_labels(frame, connective_set, rule, value_column="model_rating")
    if missing == "no_answer":
        incomplete = labels["n_rated"] < len(connective_set.words)
        labels.loc[incomplete, ["relation", "connective_order", "direction", "best_connective"]] = (
            None
        )
        labels.loc[incomplete, "label"] = NO_ANSWER
        labels.loc[incomplete, "is_unrelated"] = False
    elif missing != "ignore":
        raise ValueError("missing must be 'no_answer' or 'ignore'.")
    return labels


def model_choice_labels(
    choices: pd.DataFrame,
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
    *,
    choice_column: str = "choice",
    unrelated_values: Sequence[str] = ("unrelated", "none", "other"),
) -> pd.DataFrame:
    """Labels from the connective a model chose per ordered pair (``pair_id``, ``order``).

    A choice is a connective word (case-insensitive), a 0-based index into the connective set
    (int or digit string), one of ``unrelated_values`` (label ``"unrelated"``), or no answer:
    ``-1``, empty, NaN, or anything unrecognised (label ``"no_answer"``).
    """
    _require_columns(choices, ["pair_id", "order", choice_column], "Choices")
    by_word = {connective.word.lower(): connective for connective in connective_set.connectives}
    unrelated = {value.lower() for value in unrelated_values}
    rows = []
    for pair_id, order, raw in zip(
        choices["pair_id"], choices["order"], choices[choice_column], strict=True
    ):
        connective = None
        label = NO_ANSWER
        text = "" if raw is None or (isinstance(raw, float) and np.isnan(raw)) else str(raw).strip()
        if isinstance(raw, (int, np.integer)) or text.lstrip("-").isdigit():
            index = int(text)
            if 0 <= index < len(connective_set.connectives):
                connective = connective_set.connectives[index]
        elif text.lower() in by_word:
            connective = by_word[text.lower()]
        elif text.lower() in unrelated:
            label = UNRELATED
        if connective is not None:
            label = connective.label
        rows.append(
            {
                "pair_id": pair_id,
                "order": order,
                "choice": raw,
                "best_connective": connective.word if connective else None,
                "relation": connective.relation
                if connective
                else (UNRELATED if label == UNRELATED else None),
                "connective_order": connective.order if connective else None,
                "label": label,
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class ModelComparison:
    """A model's labels and ratings against the human ones.

    ``accuracy`` counts unanswered pairs as wrong; ``accuracy_answered`` leaves them out.
    ``relation_accuracy`` only asks whether the relation (causal/temporal/unrelated) matches.
    ``by_class``/``by_relation``/``by_order`` give ``n`` and ``accuracy`` per HUMAN class.
    ``confusion`` is human label (rows) × model label (columns). ``spearman`` correlates model
    item ratings with human item means (``None`` without item ratings); ``spearman_by_connective``
    repeats it per connective (so per relation type and order).
    """

    n_pairs: int
    n_no_answer: int
    accuracy: float
    accuracy_answered: float
    relation_accuracy: float
    by_class: pd.DataFrame
    by_relation: pd.DataFrame
    by_order: pd.DataFrame
    confusion: pd.DataFrame
    spearman: float | None = None
    n_items_correlated: int = 0
    spearman_by_connective: pd.DataFrame | None = None


def _accuracy_table(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    grouped = frame.groupby(key, dropna=False, sort=False)["correct"]
    return pd.DataFrame({"n": grouped.size(), "accuracy": grouped.mean()})


def compare_with_humans(
    human_labels: pd.DataFrame,
    model_labels: pd.DataFrame,
    *,
    human_items: pd.DataFrame | None = None,
    model_ratings: pd.DataFrame | None = None,
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
) -> ModelComparison:
    """Accuracy, per-class accuracy, confusion matrix and rating correlation of a model.

    ``human_labels`` and ``model_labels`` are :func:`pair_labels`-like frames (``pair_id``,
    ``order``, ``label``); human ordered pairs missing from the model count as ``"no_answer"``.
    For the correlation pass ``human_items`` (``item_key``, ``connective``, ``mean``) and
    ``model_ratings`` (``item_key``, ``rating``; -1/NaN = no answer, left out).
    """
    _require_columns(human_labels, [*PAIR_KEYS, "label"], "Human labels")
    _require_columns(model_labels, [*PAIR_KEYS, "label"], "Model labels")
    merged = human_labels[[*PAIR_KEYS, "label", "relation", "connective_order"]].merge(
        model_labels[[*PAIR_KEYS, "label", "relation"]].rename(
            columns={"label": "model_label", "relation": "model_relation"}
        ),
        on=PAIR_KEYS,
        how="left",
    )
    merged["model_label"] = merged["model_label"].fillna(NO_ANSWER)
    merged["correct"] = merged["label"] == merged["model_label"]
    answered = merged["model_label"] != NO_ANSWER
    relation_correct = merged["relation"] == merged["model_relation"]
    classes = label_classes(connective_set)
    human_classes = classes + sorted(set(merged["label"]) - set(classes))
    model_classes = (
        classes + sorted(set(merged["model_label"]) - set(classes) - {NO_ANSWER}) + [NO_ANSWER]
    )
    confusion = pd.crosstab(merged["label"], merged["model_label"]).reindex(
        index=human_classes, columns=model_classes, fill_value=0
    )
    confusion.index.name, confusion.columns.name = "human", "model"
    merged["connective_order"] = merged["connective_order"].fillna("none")

    spearman = None
    n_correlated = 0
    by_connective = None
    if human_items is not None and model_ratings is not None:
        _require_columns(human_items, ("item_key", "connective", "mean"), "Human items")
        _require_columns(model_ratings, ("item_key", "rating"), "Model ratings")
        model_values = pd.to_numeric(model_ratings.set_index("item_key")["rating"], errors="coerce")
        model_values = model_values.where(model_values != -1)
        paired = human_items[["item_key", "connective", "mean"]].copy()
        paired["model"] = model_values.reindex(paired["item_key"]).to_numpy()
        paired = paired.dropna(subset=["mean", "model"])
        n_correlated = len(paired)
        if n_correlated >= 2:
            spearman = float(scipy_stats.spearmanr(paired["mean"], paired["model"]).statistic)
        rows = []
        for connective in connective_set.connectives:
            subset = paired.loc[paired["connective"] == connective.word]
            rho = (
                float(scipy_stats.spearmanr(subset["mean"], subset["model"]).statistic)
                if len(subset) >= 2
                else np.nan
            )
            rows.append(
                {
                    "connective": connective.word,
                    "relation": connective.relation,
                    "connective_order": connective.order,
                    "n": len(subset),
                    "spearman": rho,
                }
            )
        by_connective = pd.DataFrame(rows)

    return ModelComparison(
        n_pairs=len(merged),
        n_no_answer=int((~answered).sum()),
        accuracy=float(merged["correct"].mean()) if len(merged) else np.nan,
        accuracy_answered=float(merged.loc[answered, "correct"].mean())
        if answered.any()
        else np.nan,
        relation_accuracy=float(relation_correct.mean()) if len(merged) else np.nan,
        by_class=_accuracy_table(merged, "label").reindex(
            [c for c in human_classes if c in set(merged["label"])]
        ),
        by_relation=_accuracy_table(merged, "relation").reindex(
            [r for r in [*connective_set.relations, UNRELATED] if r in set(merged["relation"])]
            + sorted(set(merged["relation"].dropna()) - {*connective_set.relations, UNRELATED})
        ),
        by_order=_accuracy_table(merged, "connective_order"),
        confusion=confusion,
        spearman=spearman,
        n_items_correlated=n_correlated,
        spearman_by_connective=by_connective,
    )
