"""Agreement and annotator quality of one stage: pure functions over arrays (no Django).

The selector ``research_selectors.stage_votes`` reads a stage's annotations into a
:class:`StageVotes` (one row per annotation, integer ids and codes); the refresh service calls
:func:`stage_agreement`, :func:`vote_distribution` and :func:`annotator_quality` and stores the
results as AgreementSnapshots. Everything here is deterministic (bootstrap seeds are fixed), so
the same annotations always give the same stored figures. :func:`stage_agreement_counts` gives
the same figures from per-item vote counts (:class:`VoteCounts`, counted by the database in
``agreement.vote_counts``) for figures over many votes (a release's datasheet).

Which figures a stage gets depends on its kind:

* categorical kinds (verify, label, …): Fleiss' κ with Gwet's 95 % CI and per-category κ,
  Krippendorff's α (nominal) with a unit-bootstrap 95 % CI, and pairwise percent agreement;
* numeric kinds (1–10 ratings, …): Krippendorff's α at the interval and ordinal levels with
  unit-bootstrap CIs, and exact-match percent agreement.

Annotator quality (:func:`annotator_quality`) is each annotator's agreement with the
leave-one-out majority of the others, with gold answers where the stage has them, the median
seconds per item, the skip rate, for numeric kinds the mean absolute distance to the others' mean,
and flags for annotators far below their peers (:func:`flag_annotators`, thresholds below).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from agreement.stats import (
    AgreementResult,
    annotator_agreement,
    fleiss_kappa_codes,
    fleiss_kappa_counts,
    krippendorff_alpha,
    krippendorff_alpha_counts,
    krippendorff_alphas,
    percent_agreement,
)

#: Bootstrap replicates behind α's confidence interval (seeded: figures are reproducible).
ALPHA_BOOTSTRAP = 1000
ALPHA_SEED = 0

#: An annotator is flagged as far below their peers when, over at least ``MIN_COMPARED`` items,
#: their agreement with the leave-one-out majority is both ``MARGIN`` below the pooled rate of the
#: other annotators and significantly so (one-sided exact binomial test at ``SIGNIFICANCE``).
#: The same rule applies to gold answers with ``MIN_GOLD`` items.
MIN_COMPARED = 20
MIN_GOLD = 10
MARGIN = 0.10
SIGNIFICANCE = 0.01
#: Median seconds per item below this share of the peers' median is flagged as too fast.
FAST_SHARE = 1 / 3
MIN_TIMED = 10
#: A skip rate this far above the peers' pooled skip rate (over ``MIN_DECISIONS``) is flagged.
SKIP_MARGIN = 0.20
MIN_DECISIONS = 10


@dataclass(frozen=True)
class StageVotes:
    """The annotations of one stage as parallel arrays, one entry per annotation.

    ``items``: item-stage ids. ``raters``: rater keys (user ids; negative keys for imported
    external raters). ``values``: for categorical stages int64 codes into ``categories`` (−1 when
    the annotation casts no vote); for numeric stages (``categories is None``) float64 values
    (NaN when no vote). ``seconds``: time spent per annotation (NaN when unknown).
    """

    items: np.ndarray
    raters: np.ndarray
    values: np.ndarray
    seconds: np.ndarray
    categories: tuple[Any, ...] | None

    def __post_init__(self) -> None:
        lengths = {len(self.items), len(self.raters), len(self.values), len(self.seconds)}
        if len(lengths) != 1:
            raise ValueError("items, raters, values and seconds must have one entry per annotation")

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[tuple[int, int, Any, float | None]],
        *,
        categories: Sequence[Any] | None,
    ) -> StageVotes:
        """Build from (item, rater, vote value or None, seconds or None) tuples: the slow path
        for small stages and tests. Values outside ``categories`` are a ValueError."""
        items = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        raters = np.fromiter((row[1] for row in rows), dtype=np.int64, count=len(rows))
        seconds = np.array(
            [np.nan if row[3] is None else float(row[3]) for row in rows], dtype=np.float64
        )
        if categories is None:
            values = np.array(
                [np.nan if row[2] is None else float(row[2]) for row in rows], dtype=np.float64
            )
            return cls(items, raters, values, seconds, None)
        code_of = {category: code for code, category in enumerate(categories)}
        strays = {row[2] for row in rows if row[2] is not None and row[2] not in code_of}
        if strays:
            raise ValueError(f"votes outside the categories: {sorted(map(str, strays))[:5]}")
        values = np.array(
            [-1 if row[2] is None else code_of[row[2]] for row in rows], dtype=np.int64
        )
        return cls(items, raters, values, seconds, tuple(categories))

    @property
    def numeric(self) -> bool:
        return self.categories is None

    @property
    def voted(self) -> np.ndarray:
        """Mask of the annotations that cast a vote."""
        return np.isfinite(self.values) if self.numeric else self.values >= 0

    def __len__(self) -> int:
        return len(self.items)

    def only_items(self, item_ids: np.ndarray) -> StageVotes:
        """The annotations of the item stages in ``item_ids`` only (e.g. those of the items a
        release holds), in the same order."""
        mask = np.isin(self.items, item_ids)
        return StageVotes(
            self.items[mask], self.raters[mask], self.values[mask], self.seconds[mask],
            self.categories,
        )  # fmt: skip

    def frame(self) -> pd.DataFrame:
        """The votes as a long table (item, rater, value) for agreement.stats; categorical
        values stay integer codes."""
        mask = self.voted
        return pd.DataFrame(
            {"item": self.items[mask], "rater": self.raters[mask], "value": self.values[mask]}
        )


# --- Stage agreement ----------------------------------------------------------------------------


def stage_agreement(
    votes: StageVotes, *, n_boot: int = ALPHA_BOOTSTRAP, seed: int = ALPHA_SEED
) -> list[AgreementResult]:
    """The agreement figures of a stage (see the module docstring for which)."""
    mask = votes.voted
    items, values = votes.items[mask], votes.values[mask]
    raters = votes.raters[mask]
    if votes.numeric:
        frame = pd.DataFrame({"item": items, "rater": raters, "value": values})
        # Both levels from one count matrix and one bootstrap draw (krippendorff_alphas).
        interval, ordinal = krippendorff_alphas(
            frame, levels=("interval", "ordinal"), n_boot=n_boot, seed=seed
        )
        return [interval, ordinal, percent_agreement(frame[["item", "value"]])]
    categories = list(votes.categories or ())
    kappa = fleiss_kappa_codes(items, values, categories=categories, rater_codes=raters)
    n_raters = kappa.n_raters
    frame = pd.DataFrame({"item": items, "value": values})
    alpha = krippendorff_alpha(
        frame,
        level="nominal",
        value_domain=range(len(categories)),
        n_boot=n_boot,
        seed=seed,
    )
    alpha.details["value_domain"] = categories
    counts = _count_matrix(items, values, len(categories))
    percent = percent_agreement(counts)
    return [
        _with_raters(kappa, n_raters),
        _with_raters(alpha, n_raters),
        _with_raters(percent, n_raters),
    ]


def _with_raters(result: AgreementResult, n_raters: int | None) -> AgreementResult:
    if result.n_raters is not None or n_raters is None:
        return result
    return AgreementResult(**{**asdict(result), "n_raters": n_raters})


def _count_matrix(items: np.ndarray, codes: np.ndarray, n_categories: int) -> np.ndarray:
    if not len(items):
        return np.zeros((0, max(n_categories, 1)), dtype=np.int64)
    _, dense = np.unique(items, return_inverse=True)
    n_items = int(dense.max()) + 1
    flat = np.bincount(dense * n_categories + codes, minlength=n_items * n_categories)
    return flat.reshape(n_items, n_categories)


@dataclass(frozen=True)
class VoteCounts:
    """A stage's votes reduced to what its agreement figures need: how many votes each item got
    in each value, as the distinct rows of that items × values matrix (``patterns``, columns in
    the order of ``domain``) and how many items share each row (``frequency``), plus how many
    distinct raters voted. Its size depends on the distinct rows, not on the items or votes.

    ``categories`` is the stage's categories (``domain`` is then their codes 0…K−1) or None for a
    numeric stage (``domain`` is then the distinct voted values, ascending). Only votes count:
    an annotation that casts none is not in it.
    """

    patterns: np.ndarray
    frequency: np.ndarray
    domain: tuple[Any, ...]
    categories: tuple[Any, ...] | None
    n_raters: int

    @classmethod
    def from_votes(cls, votes: StageVotes) -> VoteCounts:
        """The counts of a :class:`StageVotes` (the path without the database's counting)."""
        mask = votes.voted
        items, values = votes.items[mask], votes.values[mask]
        if votes.numeric:
            domain, codes = np.unique(values, return_inverse=True)
            labels: tuple[Any, ...] = tuple(float(value) for value in domain)
        else:
            labels = tuple(range(len(votes.categories or ())))
            codes = values
        matrix = _count_matrix(items, codes.astype(np.int64, copy=False), len(labels))
        return cls.from_matrix(
            matrix,
            domain=labels,
            categories=votes.categories,
            n_raters=len(np.unique(votes.raters[mask])),
        )

    @classmethod
    def from_matrix(
        cls,
        matrix: np.ndarray,
        *,
        domain: tuple[Any, ...],
        categories: tuple[Any, ...] | None,
        n_raters: int,
    ) -> VoteCounts:
        if len(matrix):
            patterns, frequency = np.unique(matrix, axis=0, return_counts=True)
        else:
            patterns = np.zeros((0, len(domain)), dtype=np.int64)
            frequency = np.zeros(0, dtype=np.int64)
        return cls(patterns.astype(np.int64), frequency.astype(np.int64), domain, categories,
                   n_raters)  # fmt: skip

    @property
    def numeric(self) -> bool:
        return self.categories is None

    @property
    def n_votes(self) -> int:
        return int(self.frequency @ self.patterns.sum(axis=1)) if len(self.patterns) else 0

    def matrix(self) -> np.ndarray:
        """The items × values count matrix, items in the order of the patterns (the figures
        do not depend on the order of items): for checks; the figures never build it."""
        return np.repeat(self.patterns, self.frequency, axis=0)


def stage_agreement_counts(
    counts: VoteCounts, *, n_boot: int = ALPHA_BOOTSTRAP, seed: int = ALPHA_SEED
) -> list[AgreementResult]:
    """The figures :func:`stage_agreement` computes, from the per-item counts instead of every
    vote: the same metrics and counts, values equal up to the order of floating-point sums, the
    same bootstrap replicates. Every statistic takes the distinct patterns with their
    frequencies (``frequency=`` in agreement.stats), so memory follows the distinct patterns:
    flat in the items and votes (read by ``agreement.vote_counts.stage_vote_counts``)."""
    patterns, frequency = counts.patterns, counts.frequency
    if counts.numeric:
        interval, ordinal = krippendorff_alpha_counts(
            patterns,
            levels=("interval", "ordinal"),
            value_domain=counts.domain,
            n_boot=n_boot,
            seed=seed,
            n_raters=counts.n_raters,
            frequency=frequency,
        )
        return [interval, ordinal, percent_agreement(patterns, frequency=frequency)]
    categories = list(counts.categories or ())
    kappa = fleiss_kappa_counts(
        patterns, categories=categories, n_raters=counts.n_raters, frequency=frequency
    )
    (alpha,) = krippendorff_alpha_counts(
        patterns,
        levels=("nominal",),
        value_domain=range(len(categories)),
        n_boot=n_boot,
        seed=seed,
        frequency=frequency,
    )
    alpha.details["value_domain"] = categories
    percent = percent_agreement(patterns, frequency=frequency)
    return [
        _with_raters(kappa, counts.n_raters),
        _with_raters(alpha, counts.n_raters),
        _with_raters(percent, counts.n_raters),
    ]


def vote_distribution(votes: StageVotes) -> list[dict[str, Any]]:
    """How often each value was voted: [{"value", "votes", "share"}], in category order (numeric
    stages: ascending values). Categories nobody chose are listed with 0 votes."""
    mask = votes.voted
    total = int(mask.sum())
    if votes.numeric:
        values, counts = np.unique(votes.values[mask], return_counts=True)
        labels: list[Any] = [_plain_number(value) for value in values]
    else:
        labels = list(votes.categories or ())
        counts = np.bincount(votes.values[mask], minlength=len(labels))
    return [
        {"value": label, "votes": int(count), "share": (int(count) / total) if total else None}
        for label, count in zip(labels, counts, strict=True)
    ]


def _plain_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


# --- Annotator quality --------------------------------------------------------------------------


@dataclass(frozen=True)
class AnnotatorQuality:
    """One annotator's record in one stage. Rates are None when their denominator is 0."""

    rater: int
    n_annotations: int
    n_votes: int
    n_compared: int
    n_agree: int
    majority_agreement: float | None
    n_gold: int
    n_gold_agree: int
    gold_agreement: float | None
    median_seconds: float | None
    n_timed: int
    n_skipped: int
    n_decisions: int
    skip_rate: float | None
    mean_abs_deviation: float | None = None
    flags: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["flags"] = list(self.flags)
        return data


def annotator_quality(
    votes: StageVotes,
    *,
    gold: Mapping[int, Any] | None = None,
    skips: Mapping[int, tuple[int, int]] | None = None,
) -> list[AnnotatorQuality]:
    """Per annotator (sorted by rater key), with flags from :func:`flag_annotators`.

    ``gold`` maps item → correct value (a category label, or a number for numeric stages).
    ``skips`` maps rater → (skipped, decisions) where decisions = submitted + skipped assignments;
    raters who only skipped appear with zero annotations.
    """
    skips = dict(skips or {})
    mask = votes.voted
    rater_keys = np.unique(np.concatenate([votes.raters, np.fromiter(skips, dtype=np.int64)]))
    if not len(rater_keys):
        return []
    frame = votes.frame()
    gold_codes = _gold_codes(votes, gold) if gold else None
    agreement = (
        {row.rater: row for row in annotator_agreement(frame, gold=gold_codes)}
        if len(frame)
        else {}
    )
    n_annotations = pd.Series(votes.raters).value_counts()
    timed = pd.DataFrame({"rater": votes.raters, "seconds": votes.seconds}).dropna()
    medians = timed.groupby("rater")["seconds"].median()
    n_timed = timed.groupby("rater")["seconds"].size()
    deviation = _mean_abs_deviation(votes) if votes.numeric else {}
    n_votes = pd.Series(votes.raters[mask]).value_counts()

    rows = []
    for key in rater_keys.tolist():
        loo = agreement.get(key)
        skipped, decisions = skips.get(key, (0, 0))
        rows.append(
            AnnotatorQuality(
                rater=int(key),
                n_annotations=int(n_annotations.get(key, 0)),
                n_votes=int(n_votes.get(key, 0)),
                n_compared=loo.n_compared if loo else 0,
                n_agree=loo.n_agree if loo else 0,
                majority_agreement=loo.majority_agreement if loo else None,
                n_gold=loo.n_gold if loo else 0,
                n_gold_agree=loo.n_gold_agree if loo else 0,
                gold_agreement=loo.gold_agreement if loo else None,
                median_seconds=float(medians[key]) if key in medians.index else None,
                n_timed=int(n_timed.get(key, 0)),
                n_skipped=int(skipped),
                n_decisions=int(decisions),
                skip_rate=(skipped / decisions) if decisions else None,
                mean_abs_deviation=deviation.get(key),
            )
        )
    return flag_annotators(rows)


def _gold_codes(votes: StageVotes, gold: Mapping[int, Any]) -> dict[int, Any]:
    """Gold answers in the value space of ``votes.frame()`` (codes for categorical stages)."""
    if votes.numeric:
        return {item: float(value) for item, value in gold.items() if value is not None}
    code_of = {category: code for code, category in enumerate(votes.categories or ())}
    # A gold answer outside the categories can never be matched: keep it as an impossible code.
    return {item: code_of.get(value, -2) for item, value in gold.items() if value is not None}


def _mean_abs_deviation(votes: StageVotes) -> dict[int, float]:
    """Numeric stages: per rater, the mean |vote − mean of the other votes on the item| over items
    with at least one other vote."""
    frame = votes.frame()
    if frame.empty:
        return {}
    grouped = frame.groupby("item")["value"]
    total = grouped.transform("sum")
    count = grouped.transform("size")
    others = count - 1
    usable = others > 0
    distance = (frame["value"] - (total - frame["value"]) / others.where(usable)).abs()
    result = distance[usable].groupby(frame["rater"][usable]).mean()
    return {int(key): float(value) for key, value in result.items()}


def flag_annotators(rows: Sequence[AnnotatorQuality]) -> list[AnnotatorQuality]:
    """Return the rows with ``flags`` set: short sentences naming how an annotator falls behind the
    others (the module constants define "far below"). Each annotator is compared with the pooled
    record of everyone else, so one bad annotator cannot hide by dragging the average down."""
    rows = list(rows)
    total_compared = sum(row.n_compared for row in rows)
    total_agree = sum(row.n_agree for row in rows)
    total_gold = sum(row.n_gold for row in rows)
    total_gold_agree = sum(row.n_gold_agree for row in rows)
    total_decisions = sum(row.n_decisions for row in rows)
    total_skipped = sum(row.n_skipped for row in rows)
    flagged = []
    for row in rows:
        flags = []
        majority = _below_peers(
            row.n_agree,
            row.n_compared,
            total_agree - row.n_agree,
            total_compared - row.n_compared,
            MIN_COMPARED,
        )
        if majority is not None:
            flags.append(
                f"agrees with the majority on {row.majority_agreement:.0%} of items, "
                f"peers {majority:.0%}"
            )
        gold = _below_peers(
            row.n_gold_agree,
            row.n_gold,
            total_gold_agree - row.n_gold_agree,
            total_gold - row.n_gold,
            MIN_GOLD,
        )
        if gold is not None:
            flags.append(f"matches gold on {row.gold_agreement:.0%} of items, peers {gold:.0%}")
        peer_medians = [
            other.median_seconds
            for other in rows
            if other is not row and other.median_seconds is not None and other.n_timed >= MIN_TIMED
        ]
        if row.median_seconds is not None and row.n_timed >= MIN_TIMED and peer_medians:
            typical = float(np.median(peer_medians))
            if row.median_seconds < FAST_SHARE * typical:
                flags.append(f"median {row.median_seconds:.1f} s per item, peers {typical:.1f} s")
        peer_decisions = total_decisions - row.n_decisions
        if row.n_decisions >= MIN_DECISIONS and peer_decisions and row.skip_rate is not None:
            peer_rate = (total_skipped - row.n_skipped) / peer_decisions
            if row.skip_rate > peer_rate + SKIP_MARGIN:
                flags.append(f"skips {row.skip_rate:.0%} of items, peers {peer_rate:.0%}")
        flagged.append(AnnotatorQuality(**{**asdict(row), "flags": tuple(flags)}))
    return flagged


def _below_peers(
    successes: int, trials: int, peer_successes: int, peer_trials: int, minimum: int
) -> float | None:
    """The peers' pooled rate when this record is far and significantly below it, else None."""
    if trials < minimum or peer_trials < minimum:
        return None
    peer_rate = peer_successes / peer_trials
    rate = successes / trials
    if rate > peer_rate - MARGIN:
        return None
    test = stats.binomtest(successes, trials, peer_rate, alternative="less")
    return peer_rate if test.pvalue < SIGNIFICANCE else None
