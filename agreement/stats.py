"""Inter-annotator agreement: pure functions over numpy/pandas (no Django, no database).

One module on purpose (about 1,400 lines): every statistic here shares the frame and count-matrix
helpers, the bootstrap and the undefined-case conventions; split by metric they would be
repeated or scattered.

Input is either a *long table* — a pandas DataFrame with one row per annotation and the columns
``item``, ``rater`` and ``value`` (``rater`` may be absent where rater identity does not matter) —
or an *items × categories count matrix* (cell ``[i, j]`` = number of ratings of item ``i`` in
category ``j``). Selectors turn querysets into these frames; this module never touches the ORM.

Every metric returns an :class:`AgreementResult`. A coefficient that cannot be computed (no item
with two ratings, every rating in one category, ...) comes back with ``value=None`` and a ``note``
saying why — never a silent NaN and never a bare ``AssertionError`` from a library.

What comes from libraries and what is added here (CONTRIBUTING.md, "Statistics are pure functions"):

* Fleiss' κ value: ``statsmodels.stats.inter_rater.fleiss_kappa`` whenever every item has the same
  number of ratings. statsmodels asserts equal numbers of raters, so items with varying numbers
  of ratings use Fleiss' κ generalised to varying raters per item as defined by Gwet (2014),
  *Handbook of Inter-Rater Reliability*, 4th ed., and implemented in the R package irrCAC
  (``fleiss.kappa.raw`` / ``fleiss.kappa.dist``): P̄ averages per-item agreement over the items
  with ≥ 2 ratings; chance agreement uses the per-item category proportions averaged over all rated
  items (so an item with one rating informs prevalence only). With equal raters per item both are
  Fleiss (1971) exactly. ``aggregate_raters`` is not used to build the count matrix: it loops over
  rows in Python and treats NaN as a category; :func:`count_matrix` uses ``np.bincount``.
* Fleiss' κ standard errors (statsmodels has none):
    - ``se`` / confidence interval: Gwet's linearisation variance, valid for any κ (Gwet 2008,
      "Computing inter-rater reliability and its variance in the presence of high agreement",
      BJMSP 61:29–48; Gwet 2014 ch. 5; same formula as irrCAC). The interval is
      κ ± t(n−1) · se, clipped to [−1, 1], as in irrCAC. Or, with ``ci="bootstrap"``, a seeded
      percentile bootstrap over items (vectorised, see :func:`fleiss_kappa_counts`).
    - ``se_null``: Fleiss, Nee & Landis (1979), Psychological Bulletin 86:974–977 — the standard
      error under H0 κ = 0, for the z test only (equal raters per item only; it is *not* a basis for
      an interval around a non-zero κ).
    - per-category κ_j and its null SE: Fleiss (1971) eq. for κ_j, SE √(2 / (N n (n − 1))) as in the
      R package irr (``kappam.fleiss(detail=TRUE)``).
* Cohen's κ, its SE (Fleiss, Cohen & Everitt 1969) and null SE: ``statsmodels`` ``cohens_kappa``.
* Intraclass correlation (:func:`icc`): no library here has it (pingouin is not a dependency;
  statsmodels has none), so ICC(1,1), ICC(2,1) and ICC(3,1) of Shrout & Fleiss (1979) come from
  the two-way ANOVA mean squares, with the F-based intervals of McGraw & Wong (1996) — the same
  formulas as pingouin's ``intraclass_corr``; tests reproduce Shrout & Fleiss's table.
* Krippendorff's α: the ``krippendorff`` package (its default level is *interval*; here the level is
  a required argument). Bootstrap replicates and very large inputs use the same coincidence-matrix
  formula evaluated on distinct unit patterns (tested equal to ``krippendorff.alpha``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats import inter_rater

ITEM = "item"
RATER = "rater"
VALUE = "value"

CI_METHODS = ("analytic", "bootstrap", None)
KRIPPENDORFF_LEVELS = ("nominal", "ordinal", "interval", "ratio")

# Above this many cells (units × values²) krippendorff.alpha's dense coincidence tensor would need
# hundreds of megabytes; the equivalent pattern-weighted formula is used instead.
_KRIPPENDORFF_DENSE_LIMIT = 20_000_000
# Bootstrap replicates are evaluated in chunks of at most this many (replicate × pattern) cells.
_BOOTSTRAP_CHUNK_CELLS = 4_000_000
_EPSILON = 1e-12


# --- Result type --------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgreementResult:
    """One agreement figure with its uncertainty and the counts it rests on.

    ``value`` is None exactly when the coefficient is undefined for the data; ``note`` then says why.
    ``note`` may also be set on a defined value to record a choice the data forced (for instance
    unequal numbers of raters per item). ``se`` is the non-null standard error behind
    ``ci_low``/``ci_high``; ``se_null`` is the standard error under H0 (coefficient = 0), only for
    testing. ``n_raters`` is None when rater identity is unknown (count-matrix input).
    """

    metric: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    se: float | None = None
    n_items: int = 0
    n_raters: int | None = None
    n_annotations: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    se_null: float | None = None
    ci_method: str | None = None
    confidence: float = 0.95

    @property
    def defined(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (numpy scalars become Python numbers, NaN becomes None)."""
        return {
            "metric": self.metric,
            "value": _json_safe(self.value),
            "ci_low": _json_safe(self.ci_low),
            "ci_high": _json_safe(self.ci_high),
            "se": _json_safe(self.se),
            "se_null": _json_safe(self.se_null),
            "ci_method": self.ci_method,
            "confidence": self.confidence,
            "n_items": int(self.n_items),
            "n_raters": None if self.n_raters is None else int(self.n_raters),
            "n_annotations": int(self.n_annotations),
            "details": _json_safe(self.details),
            "note": self.note,
        }


@dataclass(frozen=True)
class AnnotatorAgreement:
    """How often one annotator sides with the others (leave-one-out majority) and with gold.

    ``majority_agreement`` = ``n_agree / n_compared`` where ``n_compared`` counts this annotator's
    annotations on items whose *other* annotators have a unique most frequent value (ties and items
    nobody else rated are excluded). ``gold_agreement`` = ``n_gold_agree / n_gold`` over this
    annotator's annotations on items with a gold answer. Either is None when its denominator is 0.
    """

    rater: Any
    n_annotations: int
    n_compared: int
    n_agree: int
    majority_agreement: float | None
    n_gold: int
    n_gold_agree: int
    gold_agreement: float | None

    def to_dict(self) -> dict[str, Any]:
        return _json_safe(
            {
                "rater": self.rater,
                "n_annotations": self.n_annotations,
                "n_compared": self.n_compared,
                "n_agree": self.n_agree,
                "majority_agreement": self.majority_agreement,
                "n_gold": self.n_gold,
                "n_gold_agree": self.n_gold_agree,
                "gold_agreement": self.gold_agreement,
            }
        )


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        return {str(_json_safe(key)): _json_safe(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return [_json_safe(item) for item in value.tolist()]
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    if value is pd.NA or value is pd.NaT:
        return None
    return str(value)


# --- Preparing input ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CodedAnnotations:
    """A long table reduced to integer codes (0-based, dense) plus the labels they stand for."""

    item_codes: np.ndarray
    value_codes: np.ndarray
    rater_codes: np.ndarray | None
    item_labels: np.ndarray
    value_labels: list[Any]
    rater_labels: np.ndarray | None
    n_dropped_missing: int

    @property
    def n_raters(self) -> int | None:
        return None if self.rater_labels is None else len(self.rater_labels)


def code_annotations(
    annotations: pd.DataFrame,
    *,
    categories: Sequence[Any] | None = None,
    require_rater: bool = False,
) -> CodedAnnotations:
    """Validate a long table and factorise it into integer codes.

    Rows whose ``item`` or ``value`` is missing (None, NaN, pd.NA) are dropped and counted — a
    skipped or empty answer is not a category. Value codes follow ``categories`` when given (a value
    outside it is a ValueError), otherwise the sorted distinct values. A rater who annotated the same
    item twice is a ValueError: the engine guarantees one annotation per (item, annotator), so a
    duplicate means the frame was built wrongly and any figure from it would be inflated.
    """
    if not isinstance(annotations, pd.DataFrame):
        raise TypeError("annotations must be a pandas DataFrame with columns item, rater, value")
    required = [ITEM, VALUE] + ([RATER] if require_rater else [])
    missing = [column for column in required if column not in annotations.columns]
    if missing:
        raise ValueError(f"annotations lack the column(s) {', '.join(missing)}")
    has_rater = RATER in annotations.columns
    keep = annotations[ITEM].notna().to_numpy() & annotations[VALUE].notna().to_numpy()
    if has_rater:
        keep &= annotations[RATER].notna().to_numpy()
    n_dropped = int(len(annotations) - keep.sum())
    frame = annotations.loc[keep]
    if has_rater and len(frame):
        duplicated = frame.duplicated([ITEM, RATER])
        if duplicated.any():
            example = frame.loc[duplicated, [ITEM, RATER]].iloc[0].tolist()
            raise ValueError(
                f"{int(duplicated.sum())} duplicate (item, rater) annotation(s), e.g. item "
                f"{example[0]!r} by rater {example[1]!r}; keep one annotation per rater and item"
            )
    item_codes, item_labels = pd.factorize(frame[ITEM], sort=False)
    value_codes, value_labels = _code_values(frame[VALUE], categories)
    rater_codes = rater_labels = None
    if has_rater:
        rater_codes, rater_labels = pd.factorize(frame[RATER], sort=False)
        rater_codes = rater_codes.astype(np.int64, copy=False)
    return CodedAnnotations(
        item_codes=item_codes.astype(np.int64, copy=False),
        value_codes=value_codes,
        rater_codes=rater_codes,
        item_labels=np.asarray(item_labels),
        value_labels=value_labels,
        rater_labels=None if rater_labels is None else np.asarray(rater_labels),
        n_dropped_missing=n_dropped,
    )


def _code_values(values: pd.Series, categories: Sequence[Any] | None) -> tuple[np.ndarray, list]:
    if categories is not None:
        labels = list(categories)
        if len(set(labels)) != len(labels):
            raise ValueError("categories must be distinct")
        codes = pd.Index(labels, dtype=object).get_indexer(values.astype(object)).astype(np.int64)
        unknown = codes < 0
        if unknown.any():
            strays = sorted({str(v) for v in values[unknown].unique()[:5]})
            raise ValueError(f"values outside the declared categories: {', '.join(strays)}")
        return codes, labels
    try:
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError:
        # Mixed types (e.g. 1 and "a") cannot be ordered; order them by their text instead.
        codes, uniques = pd.factorize(values, sort=False)
        order = sorted(
            range(len(uniques)), key=lambda k: (str(uniques[k]), type(uniques[k]).__name__)
        )
        remap = np.empty(len(order), dtype=np.int64)
        remap[order] = np.arange(len(order))
        codes, uniques = remap[codes], [uniques[k] for k in order]
    return np.asarray(codes, dtype=np.int64), list(uniques)


def count_matrix(
    annotations: pd.DataFrame, *, categories: Sequence[Any] | None = None
) -> tuple[np.ndarray, list[Any]]:
    """The items × categories count matrix of a long table, and the category labels (columns)."""
    coded = code_annotations(annotations, categories=categories)
    counts = _bincount_matrix(
        coded.item_codes, coded.value_codes, len(coded.item_labels), len(coded.value_labels)
    )
    return counts, coded.value_labels


def _bincount_matrix(
    item_codes: np.ndarray, value_codes: np.ndarray, n_items: int, n_categories: int
) -> np.ndarray:
    flat = np.bincount(item_codes * n_categories + value_codes, minlength=n_items * n_categories)
    return flat.reshape(n_items, n_categories)


def _is_long_table(data: Any) -> bool:
    """A DataFrame naming any long-table column is read (and validated) as a long table."""
    return isinstance(data, pd.DataFrame) and bool({ITEM, RATER, VALUE} & set(data.columns))


def _as_count_matrix(counts: Any) -> tuple[np.ndarray, list[Any] | None]:
    labels = list(counts.columns) if isinstance(counts, pd.DataFrame) else None
    matrix = np.asarray(counts)
    if matrix.ndim != 2:
        raise ValueError("a count matrix must be two-dimensional (items × categories)")
    if matrix.size and not np.issubdtype(matrix.dtype, np.integer):
        try:
            as_float = matrix.astype(float)
        except (TypeError, ValueError):
            raise ValueError("a count matrix must hold whole numbers of ratings") from None
        if not np.all(np.isfinite(as_float)) or np.any(as_float != np.round(as_float)):
            raise ValueError("a count matrix must hold whole numbers of ratings")
        matrix = as_float.astype(np.int64)
    if matrix.size and matrix.min() < 0:
        raise ValueError("a count matrix cannot hold negative counts")
    return matrix.astype(np.int64, copy=False), labels


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1 (e.g. 0.95)")


# --- Fleiss' kappa ------------------------------------------------------------------------------


def fleiss_kappa(
    data: pd.DataFrame | np.ndarray,
    *,
    categories: Sequence[Any] | None = None,
    ci: str | None = "analytic",
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> AgreementResult:
    """Fleiss' κ of a long table (columns item, [rater,] value) or of a count matrix.

    A DataFrame with an ``item``, ``rater`` or ``value`` column is read as a long table (and must
    have ``item`` and ``value``); anything else 2-D as an
    items × categories count matrix (a DataFrame's columns then name the categories). See
    :func:`fleiss_kappa_counts` for the statistics and the edge cases.
    """
    if _is_long_table(data):
        coded = code_annotations(data, categories=categories)
        counts = _bincount_matrix(
            coded.item_codes, coded.value_codes, len(coded.item_labels), len(coded.value_labels)
        )
        return fleiss_kappa_counts(
            counts,
            categories=coded.value_labels,
            ci=ci,
            n_boot=n_boot,
            seed=seed,
            confidence=confidence,
            n_raters=coded.n_raters,
            n_dropped_missing=coded.n_dropped_missing,
        )
    return fleiss_kappa_counts(
        data, categories=categories, ci=ci, n_boot=n_boot, seed=seed, confidence=confidence
    )


def fleiss_kappa_codes(
    item_codes: np.ndarray,
    value_codes: np.ndarray,
    *,
    n_categories: int | None = None,
    categories: Sequence[Any] | None = None,
    rater_codes: np.ndarray | None = None,
    ci: str | None = "analytic",
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> AgreementResult:
    """Fleiss' κ straight from integer arrays — the fast path for large stages.

    ``item_codes`` are non-negative integers identifying items (database ids are fine: sparse codes
    are densified); ``value_codes`` are category indices ``0 … n_categories − 1`` (a negative code
    means a missing value and is dropped). ``rater_codes``, when given, only feed ``n_raters``:
    uniqueness of (item, rater) is the caller's guarantee (the database constraint), not re-checked.
    The count matrix is built with one ``np.bincount``; κ, CI and per-category κ for 1,000,000
    annotations take ≈ 0.2 s (``benchmarks/agreement_stats_only.py``).
    """
    item_codes = np.asarray(item_codes)
    value_codes = np.asarray(value_codes)
    if item_codes.shape != value_codes.shape or item_codes.ndim != 1:
        raise ValueError("item_codes and value_codes must be 1-D arrays of the same length")
    if not (
        np.issubdtype(item_codes.dtype, np.integer) and np.issubdtype(value_codes.dtype, np.integer)
    ):
        raise ValueError("item_codes and value_codes must be integer arrays")
    present = (value_codes >= 0) & (item_codes >= 0)
    n_dropped = int(len(value_codes) - present.sum())
    if n_dropped:
        item_codes, value_codes = item_codes[present], value_codes[present]
    if categories is not None:
        n_categories = len(categories)
    if n_categories is None:
        n_categories = int(value_codes.max()) + 1 if len(value_codes) else 0
    if len(value_codes) and int(value_codes.max()) >= n_categories:
        raise ValueError(f"value code {int(value_codes.max())} is outside 0…{n_categories - 1}")
    item_codes = item_codes.astype(np.int64, copy=False)
    n_items = int(item_codes.max()) + 1 if len(item_codes) else 0
    if n_items > 2 * len(item_codes) + 1024:
        # Sparse ids (database keys): densify so the count matrix has one row per rated item.
        _, item_codes = np.unique(item_codes, return_inverse=True)
        n_items = int(item_codes.max()) + 1
    counts = _bincount_matrix(
        item_codes, value_codes.astype(np.int64, copy=False), n_items, n_categories
    )
    n_raters = None if rater_codes is None else len(np.unique(np.asarray(rater_codes)[present]))
    return fleiss_kappa_counts(
        counts,
        categories=categories,
        ci=ci,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
        n_raters=n_raters,
        n_dropped_missing=n_dropped,
    )


def fleiss_kappa_counts(
    counts: np.ndarray | pd.DataFrame,
    *,
    categories: Sequence[Any] | None = None,
    ci: str | None = "analytic",
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    n_raters: int | None = None,
    n_dropped_missing: int = 0,
    frequency: np.ndarray | None = None,
) -> AgreementResult:
    """Fleiss' κ, its standard errors, CI and per-category κ from an items × categories matrix.

    ``frequency``, when given, makes ``counts`` a matrix of distinct rows, row ``i`` standing
    for ``frequency[i]`` items (``agreement.stage_statistics.VoteCounts``): the result is that
    of the matrix with each row repeated, up to the order of floating-point sums (the κ of equal
    raters per item then comes from the generalised formula, equal to statsmodels' there), and
    memory follows the distinct rows, not the items.

    Statistics:

    * ``value`` — statsmodels ``fleiss_kappa`` when all items have the same number of ratings,
      otherwise Gwet's (2014) generalisation to varying raters per item (see the module docstring);
      ``note`` says when the generalisation was used.
    * ``se``, ``ci_low``, ``ci_high`` — ``ci="analytic"`` (default): Gwet (2008) linearisation
      variance, CI κ ± t(n−1)·se clipped to [−1, 1]. ``ci="bootstrap"``: percentile interval and SD
      of ``n_boot`` replicates resampling items with replacement, seeded by ``seed``. The bootstrap is
      vectorised: κ depends on an item only through its row of counts, so items are grouped into
      distinct rows ("patterns") and a replicate is a multinomial draw of pattern frequencies;
      cost is O(n_boot × distinct patterns): 2,000 replicates of 333,334 items × 3 raters × 5
      categories (35 patterns) add < 0.1 s. ``ci=None`` skips the interval. The analytic SE is
      always in ``details["se_gwet"]``.
    * ``se_null`` — Fleiss, Nee & Landis (1979), for the z test of κ = 0 (``details["z"]``,
      ``details["p_value"]``, two-sided); None when raters per item vary (the formula assumes a
      fixed number).
    * ``details`` — ``observed_agreement`` (P̄), ``expected_agreement`` (P̄e), ``per_category``
      (label, proportion, κ_j, se_null, z, note), ``raters_per_item`` (min/max/mean) and the counts
      of dropped items.

    Edge cases (each returns a result, never raises for data shape):

    * rows with no rating are ignored; rows with one rating count towards chance agreement only
      (``details["items_single_rating"]``); no row with ≥ 2 ratings → ``value=None``;
    * every rating in one category (P̄e = 1) → ``value=None``: κ = 0/0 is undefined, even though
      observed agreement is 1 (``details["observed_agreement"]``);
    * a category nobody used does not change κ; its κ_j is None with a note;
    * a single item → κ is reported but has no standard error (``se=None``, note says so).
    """
    if ci not in CI_METHODS:
        raise ValueError(f"ci must be one of {CI_METHODS}")
    _check_confidence(confidence)
    matrix, frame_labels = _as_count_matrix(counts)
    matrix, weights = _with_frequency(matrix, frequency)
    labels = list(categories) if categories is not None else frame_labels
    if labels is None:
        labels = list(range(matrix.shape[1]))
    if len(labels) != matrix.shape[1]:
        raise ValueError(f"{len(labels)} category labels for {matrix.shape[1]} count columns")

    ratings_per_item = matrix.sum(axis=1)
    rated = ratings_per_item >= 1
    n_empty_rows = _count(~rated, weights)
    matrix = matrix[rated]
    ratings_per_item = ratings_per_item[rated]
    weights = None if weights is None else weights[rated]
    n_items = _count(np.ones(len(matrix), dtype=bool), weights)
    pairable = ratings_per_item >= 2
    n_pairable = _count(pairable, weights)
    n_annotations = int(_total(ratings_per_item, weights))

    details: dict[str, Any] = {
        "categories": labels,
        "items_single_rating": int(n_items - n_pairable),
        "items_without_ratings": n_empty_rows,
        "annotations_dropped_missing": int(n_dropped_missing),
    }
    if n_items:
        details["raters_per_item"] = {
            "min": int(ratings_per_item.min()),
            "max": int(ratings_per_item.max()),
            "mean": float(_mean(ratings_per_item, weights)),
        }

    def undefined(note: str) -> AgreementResult:
        return AgreementResult(
            metric="fleiss_kappa",
            value=None,
            n_items=n_items,
            n_raters=n_raters,
            n_annotations=n_annotations,
            details=details,
            note=note,
            confidence=confidence,
        )

    if n_pairable == 0:
        return undefined("No item has two or more ratings, so there is no agreement to measure.")

    components = _fleiss_components(matrix, ratings_per_item, pairable, weights)
    details["observed_agreement"] = components.observed
    details["expected_agreement"] = components.expected
    details["per_category"] = _per_category_kappa(
        matrix, ratings_per_item, pairable, labels, weights
    )
    if 1.0 - components.expected <= _EPSILON:
        return undefined(
            "Every rating falls in one category: expected agreement is 1, so κ (0/0) is "
            "undefined although observed agreement is 1."
        )

    equal_raters = bool(ratings_per_item.min() == ratings_per_item.max())
    notes = []
    if equal_raters and weights is None:
        kappa = float(inter_rater.fleiss_kappa(matrix, method="fleiss"))
    elif equal_raters:
        kappa = float(components.kappa)  # Fleiss (1971) exactly with equal raters per item
    else:
        kappa = components.kappa
        notes.append(
            f"Items have {int(ratings_per_item.min())}–{int(ratings_per_item.max())} ratings: "
            "Fleiss' κ generalised to varying raters per item (Gwet 2014, as irrCAC)."
        )
    if details["items_single_rating"]:
        notes.append(
            f"{details['items_single_rating']} item(s) with a single rating inform category "
            "prevalence only."
        )

    se_gwet = _gwet_se(matrix, ratings_per_item, pairable, components, kappa, weights)
    details["se_gwet"] = se_gwet
    se_null = None
    if equal_raters:
        se_null = _fleiss_nee_landis_se_null(matrix, int(ratings_per_item[0]), weights)
        if se_null:
            z = kappa / se_null
            details["z"] = z
            details["p_value"] = float(2 * stats.norm.sf(abs(z)))

    se = ci_low = ci_high = None
    ci_method = None
    if n_items < 2:
        notes.append("Only one item: κ has no standard error or confidence interval.")
    elif ci == "analytic":
        se = se_gwet
        half_width = stats.t.ppf(0.5 + confidence / 2, n_items - 1) * se
        ci_low, ci_high = max(-1.0, kappa - half_width), min(1.0, kappa + half_width)
        ci_method = "gwet_linearisation_t"
    elif ci == "bootstrap":
        replicates = _fleiss_bootstrap(
            matrix, ratings_per_item, n_boot=n_boot, seed=seed, weights=weights
        )
        details.update(
            n_boot=int(n_boot), boot_seed=int(seed), n_boot_degenerate=int(n_boot - len(replicates))
        )
        ci_method = "bootstrap_items_percentile"
        if len(replicates) >= 2:
            se = float(np.std(replicates, ddof=1))
            ci_low, ci_high = (
                float(q)
                for q in np.quantile(replicates, [0.5 - confidence / 2, 0.5 + confidence / 2])
            )
            details["se_bootstrap"] = se
        else:
            notes.append("Too few bootstrap replicates had a defined κ to form an interval.")

    return AgreementResult(
        metric="fleiss_kappa",
        value=kappa,
        ci_low=ci_low,
        ci_high=ci_high,
        se=se,
        n_items=n_items,
        n_raters=n_raters,
        n_annotations=n_annotations,
        details=details,
        note=" ".join(notes) or None,
        se_null=se_null,
        ci_method=ci_method,
        confidence=confidence,
    )


@dataclass(frozen=True)
class _FleissComponents:
    per_item_agreement: np.ndarray  # P_i (0 for items with one rating)
    prevalence: np.ndarray  # π_k, mean over rated items of n_ik / n_i
    observed: float  # P̄ over items with ≥ 2 ratings
    expected: float  # P̄e = Σ π_k²
    kappa: float  # (P̄ − P̄e) / (1 − P̄e), nan when P̄e = 1


def _fleiss_components(
    matrix: np.ndarray,
    ratings_per_item: np.ndarray,
    pairable: np.ndarray,
    weights: np.ndarray | None = None,
) -> _FleissComponents:
    agreeing_pairs = (matrix * (matrix - 1)).sum(axis=1)
    possible_pairs = ratings_per_item * (ratings_per_item - 1)
    per_item = np.zeros(len(matrix))
    np.divide(agreeing_pairs, possible_pairs, out=per_item, where=pairable)
    observed = float(_mean(per_item[pairable], None if weights is None else weights[pairable]))
    prevalence = _mean(matrix / ratings_per_item[:, None], weights)
    expected = float(np.dot(prevalence, prevalence))
    kappa = (observed - expected) / (1 - expected) if 1 - expected > _EPSILON else float("nan")
    return _FleissComponents(per_item, prevalence, observed, expected, kappa)


def _gwet_se(
    matrix: np.ndarray,
    ratings_per_item: np.ndarray,
    pairable: np.ndarray,
    components: _FleissComponents,
    kappa: float,
    weights: np.ndarray | None = None,
) -> float | None:
    """Gwet (2008; 2014 §5) linearisation SE of (generalised) Fleiss' κ, as irrCAC computes it."""
    n_items = _count(np.ones(len(matrix), dtype=bool), weights)
    if n_items < 2:
        return None
    expected = components.expected
    n_pairable = _count(pairable, weights)
    kappa_items = (
        (n_items / n_pairable)
        * (components.per_item_agreement - expected * pairable)
        / (1 - expected)
    )
    chance_items = (matrix @ components.prevalence) / ratings_per_item
    linearised = kappa_items - 2 * (1 - kappa) * (chance_items - expected) / (1 - expected)
    variance = float(_total((linearised - kappa) ** 2, weights)) / (n_items * (n_items - 1))
    return math.sqrt(variance)


def _fleiss_nee_landis_se_null(
    matrix: np.ndarray, raters: int, weights: np.ndarray | None = None
) -> float | None:
    """SE of Fleiss' κ under H0 κ = 0 (Fleiss, Nee & Landis 1979); equal raters per item only."""
    n_items = _count(np.ones(len(matrix), dtype=bool), weights)
    proportion = _total(matrix, weights) / (n_items * raters)
    spread = proportion * (1 - proportion)
    total = spread.sum()
    if total <= _EPSILON:
        return None
    variance = (
        2
        / (total**2 * n_items * raters * (raters - 1))
        * (total**2 - np.sum(spread * (1 - 2 * proportion)))
    )
    return math.sqrt(variance) if variance > 0 else None


def _per_category_kappa(
    matrix: np.ndarray,
    ratings_per_item: np.ndarray,
    pairable: np.ndarray,
    labels: list[Any],
    weights: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """κ_j of Fleiss (1971): agreement on category j beyond its prevalence.

    With equal raters per item this is Fleiss' formula (and irr's ``kappam.fleiss(detail=TRUE)``);
    with varying raters, P_j = Σ_i n_ij(n_ij − 1)/(n_i − 1) / Σ_i n_ij over items with ≥ 2 ratings,
    which reduces to Fleiss' P_j when all n_i are equal. The null SE √(2/(N n (n−1))) needs equal n.
    """
    pairable_matrix = matrix[pairable]
    n_i = ratings_per_item[pairable]
    kept = None if weights is None else weights[pairable]
    totals = _total(pairable_matrix, kept).astype(float)
    proportion = totals / totals.sum()
    same_pairs = _total(pairable_matrix * (pairable_matrix - 1) / (n_i - 1)[:, None], kept)
    equal = bool(n_i.min() == n_i.max())
    n_pairable = _count(np.ones(len(n_i), dtype=bool), kept)
    se_null = math.sqrt(2 / (n_pairable * n_i[0] * (n_i[0] - 1))) if equal else None
    rows = []
    for j, label in enumerate(labels):
        row: dict[str, Any] = {"category": label, "proportion": float(proportion[j])}
        if totals[j] == 0:
            row.update(kappa=None, note="No rating used this category; its κ is undefined.")
        elif proportion[j] >= 1 - _EPSILON:
            row.update(kappa=None, note="Every rating is in this category; its κ is undefined.")
        else:
            within = same_pairs[j] / totals[j]
            kappa_j = float((within - proportion[j]) / (1 - proportion[j]))
            row["kappa"] = kappa_j
            if se_null:
                row.update(se_null=se_null, z=kappa_j / se_null)
        rows.append(row)
    return rows


def _row_patterns(
    matrix: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a count matrix and how often each occurs (fast 1-D key when it fits);
    with ``weights``, row ``i`` occurs ``weights[i]`` times (the same result as the matrix
    with its rows repeated, in the same order)."""
    base = int(matrix.max()) + 1 if matrix.size else 1
    n_columns = matrix.shape[1]
    if n_columns and n_columns * math.log2(max(base, 2)) < 62:
        powers = base ** np.arange(n_columns, dtype=np.int64)
        keys = matrix @ powers
        if weights is None:
            _, first, frequency = np.unique(keys, return_index=True, return_counts=True)
            return matrix[first], frequency
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        return matrix[first], _weighted_counts(inverse, weights, len(first))
    if weights is None:
        patterns, frequency = np.unique(matrix, axis=0, return_counts=True)
        return patterns, frequency
    patterns, inverse = np.unique(matrix, axis=0, return_inverse=True)
    return patterns, _weighted_counts(np.ravel(inverse), weights, len(patterns))


def _weighted_counts(inverse: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    totals = np.zeros(size, dtype=np.int64)
    np.add.at(totals, inverse, weights)
    return totals


def _with_frequency(
    matrix: np.ndarray, frequency: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """A count matrix and its rows' frequencies (None: one item per row), rows standing for no
    item left out."""
    if frequency is None:
        return matrix, None
    weights = np.asarray(frequency)
    if weights.shape != (len(matrix),) or not np.issubdtype(weights.dtype, np.integer):
        raise ValueError("frequency must give a whole number of items for each row")
    if len(weights) and weights.min() < 0:
        raise ValueError("frequency cannot be negative")
    kept = weights > 0
    return matrix[kept], weights[kept].astype(np.int64)


def _count(mask: np.ndarray, weights: np.ndarray | None) -> int:
    """How many items ``mask`` selects (rows, or their frequencies)."""
    return int(mask.sum()) if weights is None else int(weights[mask].sum())


def _total(values: np.ndarray, weights: np.ndarray | None) -> Any:
    """Σ over items of ``values`` (one entry or row per matrix row)."""
    return values.sum(axis=0) if weights is None else weights @ values


def _mean(values: np.ndarray, weights: np.ndarray | None) -> Any:
    """Mean over items of ``values`` (one entry or row per matrix row)."""
    return values.mean(axis=0) if weights is None else (weights @ values) / weights.sum()


def _multinomial_chunks(frequency: np.ndarray, n_boot: int, seed: int):
    """Yield (chunk × patterns) resampled pattern counts: items drawn with replacement."""
    rng = np.random.default_rng(seed)
    total = int(frequency.sum())
    probabilities = frequency / total
    chunk = max(1, min(n_boot, _BOOTSTRAP_CHUNK_CELLS // max(1, len(frequency))))
    done = 0
    while done < n_boot:
        size = min(chunk, n_boot - done)
        yield rng.multinomial(total, probabilities, size=size).astype(float)
        done += size


def _fleiss_bootstrap(
    matrix: np.ndarray,
    ratings_per_item: np.ndarray,
    *,
    n_boot: int,
    seed: int,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    if n_boot < 2:
        raise ValueError("n_boot must be at least 2")
    patterns, frequency = _row_patterns(matrix, weights)
    n_pattern = patterns.sum(axis=1)
    pairable = (n_pattern >= 2).astype(float)
    agreement = np.zeros(len(patterns))
    np.divide(
        (patterns * (patterns - 1)).sum(axis=1),
        n_pattern * (n_pattern - 1),
        out=agreement,
        where=n_pattern >= 2,
    )
    shares = patterns / n_pattern[:, None]
    total = float(frequency.sum())
    replicates = []
    for resampled in _multinomial_chunks(frequency, n_boot, seed):
        n_pairable = resampled @ pairable
        prevalence = (resampled @ shares) / total
        expected = np.einsum("bk,bk->b", prevalence, prevalence)
        with np.errstate(divide="ignore", invalid="ignore"):
            observed = (resampled @ agreement) / n_pairable
            kappa = (observed - expected) / (1 - expected)
        valid = (n_pairable > 0) & (1 - expected > _EPSILON)
        replicates.append(kappa[valid])
    return np.concatenate(replicates)


# --- Cohen's kappa ------------------------------------------------------------------------------


def cohen_kappa(
    annotations: pd.DataFrame,
    *,
    raters: tuple[Any, Any] | None = None,
    categories: Sequence[Any] | None = None,
    confidence: float = 0.95,
) -> AgreementResult:
    """Cohen's κ between two raters over the items both rated (statsmodels ``cohens_kappa``).

    ``raters`` picks the two raters; without it the table must hold exactly two. The contingency
    table is square over the union of both raters' categories (or ``categories``). ``se`` is
    statsmodels' asymptotic SE (Fleiss, Cohen & Everitt 1969), the CI κ ± z·se clipped to [−1, 1]
    (equal to statsmodels' ``kappa_low``/``kappa_upp`` at 95 %); ``se_null`` is statsmodels' SE
    under κ = 0. Items rated by only one of the two are dropped (``details["items_not_shared"]``).
    No shared item, or both raters always using the same single category (chance agreement 1),
    gives ``value=None`` with a note.
    """
    _check_confidence(confidence)
    coded = code_annotations(annotations, categories=categories, require_rater=True)
    rater_labels = list(coded.rater_labels)
    if raters is None:
        if len(rater_labels) != 2:
            raise ValueError(
                f"Cohen's κ compares exactly two raters; the table has {len(rater_labels)}. "
                "Pass raters=(a, b) or use fleiss_kappa / krippendorff_alpha."
            )
        raters = (rater_labels[0], rater_labels[1])
    positions = []
    for rater in raters:
        if rater not in rater_labels:
            raise ValueError(f"rater {rater!r} has no annotations in the table")
        positions.append(rater_labels.index(rater))
    n_items_total = len(coded.item_labels)
    n_categories = len(coded.value_labels)
    first = np.full(n_items_total, -1, dtype=np.int64)
    second = np.full(n_items_total, -1, dtype=np.int64)
    mask_a = coded.rater_codes == positions[0]
    mask_b = coded.rater_codes == positions[1]
    first[coded.item_codes[mask_a]] = coded.value_codes[mask_a]
    second[coded.item_codes[mask_b]] = coded.value_codes[mask_b]
    shared = (first >= 0) & (second >= 0)
    rated_by_either = (first >= 0) | (second >= 0)
    n_items = int(shared.sum())
    table = np.bincount(
        first[shared] * n_categories + second[shared], minlength=n_categories**2
    ).reshape(n_categories, n_categories)
    details: dict[str, Any] = {
        "raters": list(raters),
        "categories": coded.value_labels,
        "table": table,
        "items_not_shared": int(rated_by_either.sum() - n_items),
        "annotations_dropped_missing": coded.n_dropped_missing,
    }
    base = {
        "metric": "cohen_kappa",
        "n_items": n_items,
        "n_raters": 2,
        "n_annotations": 2 * n_items,
    }
    if n_items == 0:
        return AgreementResult(
            value=None,
            details=details,
            note="The two raters share no item.",
            confidence=confidence,
            **base,
        )
    observed = float(np.trace(table)) / n_items
    expected = float(np.dot(table.sum(axis=1), table.sum(axis=0))) / n_items**2
    details.update(observed_agreement=observed, expected_agreement=expected)
    if 1 - expected <= _EPSILON:
        return AgreementResult(
            value=None,
            details=details,
            note="Both raters put every item in the same single category: chance agreement is 1 and κ is undefined.",
            confidence=confidence,
            **base,
        )
    with np.errstate(divide="ignore", invalid="ignore"):  # z is nan when the null SE is 0
        result = inter_rater.cohens_kappa(table)
    kappa = float(result.kappa)
    se = _finite_or_none(math.sqrt(result.var_kappa) if result.var_kappa >= 0 else float("nan"))
    se_null = _finite_or_none(
        math.sqrt(result.var_kappa0) if result.var_kappa0 >= 0 else float("nan")
    )
    details["kappa_max"] = float(result.kappa_max)
    ci_low = ci_high = None
    notes = []
    if se is not None:
        half_width = stats.norm.ppf(0.5 + confidence / 2) * se
        ci_low, ci_high = max(-1.0, kappa - half_width), min(1.0, kappa + half_width)
    else:
        notes.append("The asymptotic variance is not positive for this table; no interval.")
    if se_null:
        details["z"] = kappa / se_null
        details["p_value"] = float(2 * stats.norm.sf(abs(kappa / se_null)))
    if n_items < 2:
        notes.append("Only one shared item: the standard error is not meaningful.")
    return AgreementResult(
        value=kappa,
        ci_low=ci_low,
        ci_high=ci_high,
        se=se,
        se_null=se_null,
        ci_method="asymptotic_normal" if se is not None else None,
        details=details,
        note=" ".join(notes) or None,
        confidence=confidence,
        **base,
    )


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


# --- Percent agreement --------------------------------------------------------------------------


def percent_agreement(
    data: pd.DataFrame | np.ndarray,
    *,
    confidence: float = 0.95,
    frequency: np.ndarray | None = None,
) -> AgreementResult:
    """Pairwise percent agreement: the mean over items (with ≥ 2 ratings) of the share of agreeing
    rater pairs on the item. Not chance-corrected. SE and t interval as Gwet (2014) / irrCAC
    ``pa.coeff.raw`` (clipped to [0, 1]); ``details["pooled"]`` is agreeing pairs / all pairs.
    ``frequency`` (count-matrix input only): rows stand for that many items each (see
    :func:`fleiss_kappa_counts`)."""
    _check_confidence(confidence)
    n_raters = None
    n_dropped = 0
    weights: np.ndarray | None = None
    if _is_long_table(data):
        if frequency is not None:
            raise ValueError("frequency weighs the rows of a count matrix, not a long table")
        coded = code_annotations(data)
        matrix = _bincount_matrix(
            coded.item_codes, coded.value_codes, len(coded.item_labels), len(coded.value_labels)
        )
        n_raters, n_dropped = coded.n_raters, coded.n_dropped_missing
    else:
        matrix, _ = _as_count_matrix(data)
        matrix, weights = _with_frequency(matrix, frequency)
    ratings_per_item = matrix.sum(axis=1)
    matrix = matrix[ratings_per_item >= 1]
    if weights is not None:
        weights = weights[ratings_per_item >= 1]
    ratings_per_item = ratings_per_item[ratings_per_item >= 1]
    pairable = ratings_per_item >= 2
    n_items = _count(np.ones(len(matrix), dtype=bool), weights)
    n_pairable = _count(pairable, weights)
    details: dict[str, Any] = {
        "items_single_rating": int(n_items - n_pairable),
        "annotations_dropped_missing": n_dropped,
    }
    base = {
        "metric": "percent_agreement",
        "n_items": n_items,
        "n_raters": n_raters,
        "n_annotations": int(_total(ratings_per_item, weights)),
        "confidence": confidence,
    }
    if n_pairable == 0:
        return AgreementResult(
            value=None, details=details, note="No item has two or more ratings.", **base
        )
    agreeing = (matrix * (matrix - 1)).sum(axis=1)
    possible = ratings_per_item * (ratings_per_item - 1)
    per_item = np.zeros(len(matrix))
    np.divide(agreeing, possible, out=per_item, where=pairable)
    value = float(_mean(per_item[pairable], None if weights is None else weights[pairable]))
    details["pooled"] = float(_total(agreeing, weights) / _total(possible, weights))
    se = ci_low = ci_high = None
    if n_items >= 2:
        linearised = (n_items / n_pairable) * per_item
        se = math.sqrt(
            float(_total((linearised - value) ** 2, weights)) / (n_items * (n_items - 1))
        )
        half_width = stats.t.ppf(0.5 + confidence / 2, n_items - 1) * se
        ci_low, ci_high = max(0.0, value - half_width), min(1.0, value + half_width)
    return AgreementResult(
        value=value,
        se=se,
        ci_low=ci_low,
        ci_high=ci_high,
        ci_method="gwet_linearisation_t" if se is not None else None,
        details=details,
        **base,
    )


# --- Krippendorff's alpha -----------------------------------------------------------------------


def krippendorff_alpha(
    annotations: pd.DataFrame,
    *,
    level: str,
    value_domain: Sequence[Any] | None = None,
    n_boot: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> AgreementResult:
    """Krippendorff's α of a long table at the given level of measurement.

    ``level`` is required — one of nominal, ordinal, interval, ratio (the ``krippendorff`` package
    silently defaults to interval). The long table is turned into the units × values count matrix
    the package accepts (``value_counts``), so callers never build its observers × units
    ``reliability_data``. Values: nominal takes any labels; interval and ratio need numbers; ordinal
    takes numbers (ordered numerically) or any labels with ``value_domain`` giving their order.
    Missing values are dropped; units with one value carry no pairable information.

    ``n_boot > 0`` adds a seeded percentile bootstrap interval resampling *units* with
    replacement (``se`` is the replicate SD). This is not Hayes & Krippendorff's (2007) algorithm,
    which resamples pairable values; with few units either is rough.

    Undefined (``value=None`` with a note): no unit has two values, or all pairable values are
    identical (expected disagreement 0).
    """
    return krippendorff_alphas(
        annotations,
        levels=(level,),
        value_domain=value_domain,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
    )[0]


def krippendorff_alphas(
    annotations: pd.DataFrame,
    *,
    levels: Sequence[str],
    value_domain: Sequence[Any] | None = None,
    n_boot: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[AgreementResult]:
    """Krippendorff's α of one long table at several levels, in the order of ``levels``: each
    result equals :func:`krippendorff_alpha` at that level with the same arguments. Levels whose
    values fall in the same ordered domain (interval and ordinal over numbers, or any levels with
    ``value_domain``) share one count matrix and one bootstrap: the units are resampled once and
    every level is evaluated on the same replicates, so a second level costs its evaluation only."""
    for level in levels:
        if level not in KRIPPENDORFF_LEVELS:
            raise ValueError(f"level must be one of {KRIPPENDORFF_LEVELS}")
    _check_confidence(confidence)
    coded = code_annotations(annotations)
    labels = coded.value_labels
    # Levels sharing a domain (same order of the labels) share a count matrix and a bootstrap.
    groups: dict[tuple[int, ...], tuple[list[Any], np.ndarray, list[str]]] = {}
    for level in levels:
        domain, order = _krippendorff_domain(labels, level, value_domain)
        key = (len(domain), *order.tolist())
        groups.setdefault(key, (domain, order, []))[2].append(level)
    results: dict[str, AgreementResult] = {}
    for domain, order, shared in groups.values():
        counts = _bincount_matrix(
            coded.item_codes, order[coded.value_codes], len(coded.item_labels), len(domain)
        )
        found = krippendorff_alpha_counts(
            counts,
            levels=shared,
            value_domain=domain,
            n_boot=n_boot,
            seed=seed,
            confidence=confidence,
            n_raters=coded.n_raters,
            n_dropped_missing=coded.n_dropped_missing,
        )
        results.update(zip(shared, found, strict=True))
    return [results[level] for level in levels]


def krippendorff_alpha_counts(
    counts: np.ndarray,
    *,
    levels: Sequence[str],
    value_domain: Sequence[Any],
    n_boot: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    n_raters: int | None = None,
    n_dropped_missing: int = 0,
    frequency: np.ndarray | None = None,
) -> list[AgreementResult]:
    """Krippendorff's α at each of ``levels`` from a units × values count matrix whose columns
    are ``value_domain`` in order (ordinal reads that order; interval and ratio need numbers).
    What :func:`krippendorff_alpha` computes once it has counted a long table; callers that
    already hold counts (e.g. counted by the database) skip the table. The bootstrap (``n_boot``)
    resamples units once for all levels (see :func:`krippendorff_alphas`). ``frequency``: rows
    stand for that many units each (see :func:`fleiss_kappa_counts`); α then comes from the
    pattern-weighted coincidences (tested equal to ``krippendorff.alpha``)."""
    for level in levels:
        if level not in KRIPPENDORFF_LEVELS:
            raise ValueError(f"level must be one of {KRIPPENDORFF_LEVELS}")
        if level in ("interval", "ratio"):
            _require_numeric(list(value_domain), level)
    _check_confidence(confidence)
    domain = list(value_domain)
    counts, _ = _as_count_matrix(counts)
    counts, weights = _with_frequency(counts, frequency)
    if counts.shape[1] != len(domain):
        raise ValueError(f"{len(domain)} values in the domain for {counts.shape[1]} count columns")
    values_per_unit = counts.sum(axis=1)
    pairable_counts = counts[values_per_unit >= 2]
    pairable_weights = None if weights is None else weights[values_per_unit >= 2]
    n_units = _count(values_per_unit >= 1, weights)

    def base(level: str) -> dict[str, Any]:
        return {
            "metric": f"krippendorff_alpha_{level}",
            "n_items": n_units,
            "n_raters": n_raters,
            "n_annotations": int(_total(values_per_unit, weights)),
            "confidence": confidence,
        }

    def details(level: str) -> dict[str, Any]:
        return {
            "level": level,
            "value_domain": list(domain),
            "units_pairable": _count(np.ones(len(pairable_counts), dtype=bool), pairable_weights),
            "units_single_value": _count(values_per_unit == 1, weights),
            "pairable_values": int(_total(pairable_counts.sum(axis=1), pairable_weights)),
            "annotations_dropped_missing": n_dropped_missing,
        }

    if len(pairable_counts) == 0:
        return [
            AgreementResult(
                value=None,
                details=details(level),
                note="No unit has two or more values.",
                **base(level),
            )
            for level in levels
        ]
    if np.count_nonzero(pairable_counts.sum(axis=0)) < 2:
        return [
            AgreementResult(
                value=None,
                details=details(level),
                note="All pairable values are identical: expected disagreement is 0, so α is "
                "undefined.",
                **base(level),
            )
            for level in levels
        ]
    numeric_domains = {
        level: (
            np.asarray(domain, dtype=float)
            if level in ("interval", "ratio")
            else np.arange(len(domain), dtype=float)
        )
        for level in levels
    }
    all_details = {level: details(level) for level in levels}
    alphas: dict[str, float] = {}
    for level in levels:
        if pairable_weights is not None:
            rows, occurrences = _row_patterns(pairable_counts, pairable_weights)
            alphas[level] = float(
                _alpha_replicates(
                    rows, occurrences[None, :].astype(float), numeric_domains[level], level
                )[0]
            )
            all_details[level]["computed_with"] = "pattern-weighted coincidences (counted rows)"
        elif pairable_counts.size * len(domain) <= _KRIPPENDORFF_DENSE_LIMIT:
            alphas[level] = float(
                krippendorff.alpha(
                    value_counts=pairable_counts,
                    value_domain=numeric_domains[level],
                    level_of_measurement=level,
                )
            )
            all_details[level]["computed_with"] = "krippendorff.alpha"
        else:
            patterns, frequency = _row_patterns(pairable_counts)
            alphas[level] = float(
                _alpha_replicates(
                    patterns, frequency[None, :].astype(float), numeric_domains[level], level
                )[0]
            )
            all_details[level]["computed_with"] = "pattern-weighted coincidences (large input)"
    replicates: dict[str, np.ndarray] = {}
    if n_boot:
        if n_boot < 2:
            raise ValueError("n_boot must be 0 (no bootstrap) or at least 2")
        patterns, frequency = _row_patterns(pairable_counts, pairable_weights)
        drawn: dict[str, list[np.ndarray]] = {level: [] for level in levels}
        # One draw of resampled units, every level evaluated on it.
        for resampled in _multinomial_chunks(frequency, n_boot, seed):
            for level in levels:
                drawn[level].append(
                    _alpha_replicates(patterns, resampled, numeric_domains[level], level)
                )
        for level in levels:
            found = np.concatenate(drawn[level])
            replicates[level] = found[np.isfinite(found)]
    results = []
    for level in levels:
        se = ci_low = ci_high = None
        ci_method = None
        note = None
        if n_boot:
            kept = replicates[level]
            all_details[level].update(
                n_boot=int(n_boot), boot_seed=int(seed), n_boot_degenerate=int(n_boot - len(kept))
            )
            ci_method = "bootstrap_units_percentile"
            if len(kept) >= 2:
                se = float(np.std(kept, ddof=1))
                ci_low, ci_high = (
                    float(q)
                    for q in np.quantile(kept, [0.5 - confidence / 2, 0.5 + confidence / 2])
                )
            else:
                note = "Too few bootstrap replicates had a defined α to form an interval."
        results.append(
            AgreementResult(
                value=alphas[level],
                se=se,
                ci_low=ci_low,
                ci_high=ci_high,
                ci_method=ci_method,
                details=all_details[level],
                note=note,
                **base(level),
            )
        )
    return results


def _krippendorff_domain(
    labels: list[Any], level: str, value_domain: Sequence[Any] | None
) -> tuple[list[Any], np.ndarray]:
    """Ordered value domain and, for each factorised label, its position in the domain."""
    if value_domain is not None:
        domain = list(value_domain)
        if len(set(domain)) != len(domain):
            raise ValueError("value_domain must not repeat values")
        position = {value: k for k, value in enumerate(domain)}
        strays = [label for label in labels if label not in position]
        if strays:
            raise ValueError(f"values outside value_domain: {', '.join(map(str, strays[:5]))}")
        order = np.array([position[label] for label in labels], dtype=np.int64)
        if level in ("interval", "ratio"):
            _require_numeric(domain, level)
        return domain, order
    if level == "nominal":
        return labels, np.arange(len(labels), dtype=np.int64)
    numeric = _require_numeric(labels, level)
    order_of = np.argsort(numeric, kind="stable")
    order = np.empty(len(labels), dtype=np.int64)
    order[order_of] = np.arange(len(labels))
    return [labels[k] for k in order_of], order


def _require_numeric(values: list[Any], level: str) -> np.ndarray:
    numbers = []
    for value in values:
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
            hint = " or pass value_domain to order them" if level == "ordinal" else ""
            raise ValueError(f"{level} α needs numeric values, got {value!r}{hint}")
        numbers.append(float(value))
    return np.asarray(numbers)


def _alpha_replicates(
    patterns: np.ndarray, weights: np.ndarray, domain: np.ndarray, level: str
) -> np.ndarray:
    """Krippendorff's α for each row of ``weights`` (replicates × patterns).

    Uses the coincidence-matrix definition exactly as ``krippendorff.alpha`` does: with c_u the
    value counts of unit u (m_u ≥ 2 values), o = Σ_u (c_u c_uᵀ − diag c_u)/(m_u − 1), n_v = Σ_u c_u,
    e = (n nᵀ − diag n)/(n.. − 1), α = 1 − Σ o∘d / Σ e∘d. Every metric has d_vv = 0, which lets the
    diagonal terms drop out and the sums be taken per pattern.
    """
    patterns = patterns.astype(float)
    inverse_pairs = 1.0 / (patterns.sum(axis=1) - 1)
    n_values = weights @ patterns  # replicates × values
    n_total = n_values.sum(axis=1)
    if level == "ordinal":
        distances = _ordinal_distances(n_values)  # replicates × V × V
        outer = np.einsum("pv,pu->pvu", patterns, patterns) * inverse_pairs[:, None, None]
        observed = np.einsum("bp,pvu,bvu->b", weights, outer, distances, optimize=True)
        expected = np.einsum("bv,bvu,bu->b", n_values, distances, n_values) / (n_total - 1)
    else:
        distance = _fixed_distances(domain, level)
        per_pattern = np.einsum("pv,vu,pu->p", patterns, distance, patterns) * inverse_pairs
        observed = weights @ per_pattern
        expected = np.einsum("bv,vu,bu->b", n_values, distance, n_values) / (n_total - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1 - observed / expected
    alpha[~(expected > _EPSILON)] = np.nan
    return alpha


def _fixed_distances(domain: np.ndarray, level: str) -> np.ndarray:
    left, right = domain[:, None], domain[None, :]
    if level == "nominal":
        return (left != right).astype(float)
    if level == "interval":
        return (left - right) ** 2
    total = left + right
    ratio = np.divide(left - right, total, out=np.zeros_like(total), where=total != 0)
    return ratio**2


def _ordinal_distances(n_values: np.ndarray) -> np.ndarray:
    """δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² per replicate (Krippendorff 2011)."""
    cumulative = np.cumsum(n_values, axis=1)
    size = n_values.shape[1]
    low = np.minimum.outer(np.arange(size), np.arange(size))
    high = np.maximum.outer(np.arange(size), np.arange(size))
    between = cumulative[:, high] - cumulative[:, low] + n_values[:, low]
    return (between - (n_values[:, :, None] + n_values[:, None, :]) / 2) ** 2


# --- Per-annotator agreement --------------------------------------------------------------------


def annotator_agreement(
    annotations: pd.DataFrame,
    *,
    gold: Mapping[Any, Any] | pd.Series | None = None,
    strict_majority: bool = False,
) -> list[AnnotatorAgreement]:
    """Per annotator: agreement with the leave-one-out majority of the others, and with gold.

    For each annotation, the other annotators' votes on the same item are counted; their majority
    is the unique most frequent value (with ``strict_majority=True``: a value held by more than half
    of the others). Items where the others tie, or nobody else voted, are excluded from that
    annotator's ``n_compared``. ``gold`` maps item → correct value; items missing from it (or mapped
    to None/NaN) are not scored. Result is sorted by rater.
    """
    coded = code_annotations(annotations, require_rater=True)
    n_items, n_categories = len(coded.item_labels), len(coded.value_labels)
    n_raters = coded.n_raters or 0
    if n_raters == 0:
        return []
    counts = _bincount_matrix(coded.item_codes, coded.value_codes, n_items, n_categories)
    others = counts[coded.item_codes].copy()
    others[np.arange(len(others)), coded.value_codes] -= 1
    top = others.max(axis=1) if n_categories else np.zeros(0)
    n_top = (others == top[:, None]).sum(axis=1)
    n_others = others.sum(axis=1)
    has_majority = (top > 0) & (n_top == 1)
    if strict_majority:
        has_majority &= 2 * top > n_others
    agrees = has_majority & (others.argmax(axis=1) == coded.value_codes)

    per_rater_total = np.bincount(coded.rater_codes, minlength=n_raters)
    per_rater_compared = np.bincount(coded.rater_codes, weights=has_majority, minlength=n_raters)
    per_rater_agree = np.bincount(coded.rater_codes, weights=agrees, minlength=n_raters)
    per_rater_gold = np.zeros(n_raters)
    per_rater_gold_agree = np.zeros(n_raters)
    if gold is not None:
        gold_series = gold if isinstance(gold, pd.Series) else pd.Series(dict(gold), dtype=object)
        gold_series = gold_series[gold_series.notna()]
        gold_series = gold_series[~gold_series.index.duplicated()]
        gold_by_item = gold_series.reindex(pd.Index(coded.item_labels))
        # Gold answers as value codes; a gold value nobody chose gets -1 and so never matches.
        code_of = {label: code for code, label in enumerate(coded.value_labels)}
        gold_codes = np.array(
            [
                code_of.get(value, -1) if pd.notna(value) else -1
                for value in gold_by_item.to_numpy(dtype=object)
            ],
            dtype=np.int64,
        )
        scored = gold_by_item.notna().to_numpy()[coded.item_codes]
        correct = scored & (gold_codes[coded.item_codes] == coded.value_codes)
        per_rater_gold = np.bincount(coded.rater_codes, weights=scored, minlength=n_raters)
        per_rater_gold_agree = np.bincount(coded.rater_codes, weights=correct, minlength=n_raters)

    results = []
    for code, rater in enumerate(coded.rater_labels):
        compared, agree = int(per_rater_compared[code]), int(per_rater_agree[code])
        n_gold, n_gold_agree = int(per_rater_gold[code]), int(per_rater_gold_agree[code])
        results.append(
            AnnotatorAgreement(
                rater=rater.item() if isinstance(rater, np.generic) else rater,
                n_annotations=int(per_rater_total[code]),
                n_compared=compared,
                n_agree=agree,
                majority_agreement=agree / compared if compared else None,
                n_gold=n_gold,
                n_gold_agree=n_gold_agree,
                gold_agreement=n_gold_agree / n_gold if n_gold else None,
            )
        )
    try:
        results.sort(key=lambda result: result.rater)
    except TypeError:
        results.sort(key=lambda result: str(result.rater))
    return results


ICC_FORMS = ("ICC1", "ICC2", "ICC3")


def icc(
    annotations: pd.DataFrame, *, form: str = "ICC1", confidence: float = 0.95
) -> AgreementResult:
    """The intraclass correlation of a long table of numeric ratings (item, rater, value), single
    rater, with its F-based interval. ``form``: ``ICC1`` (one-way random: each item rated by
    different raters — e.g. reviewer slots filled by whoever came), ``ICC2`` (two-way random,
    absolute agreement) or ``ICC3`` (two-way mixed, consistency). Only items rated by every
    rater count (``details["items_dropped"]``). Fewer than two complete items or raters, or
    no variance, gives ``value=None`` with a note."""
    if form not in ICC_FORMS:
        raise ValueError(f"form must be one of {ICC_FORMS}")
    _check_confidence(confidence)
    frame = annotations.dropna(subset=[ITEM, RATER, VALUE])
    table = frame.pivot_table(index=ITEM, columns=RATER, values=VALUE, aggfunc="first")
    complete = table.dropna()
    dropped = int(len(table) - len(complete))
    matrix = complete.to_numpy(dtype=float)
    n, k = matrix.shape if matrix.ndim == 2 else (0, 0)
    base = {
        "metric": f"icc_{form[-1]}_1",
        "n_items": n,
        "n_raters": k,
        "n_annotations": n * k,
        "details": {"form": form, "items_dropped": dropped},
        "confidence": confidence,
    }
    if n < 2 or k < 2:
        return AgreementResult(value=None, note="needs two items rated by the same raters", **base)
    grand = matrix.mean()
    ss_rows = k * ((matrix.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((matrix.mean(axis=0) - grand) ** 2).sum()
    ss_total = ((matrix - grand) ** 2).sum()
    ss_error = ss_total - ss_rows - ss_cols
    ms_rows = ss_rows / (n - 1)
    ms_cols = ss_cols / (k - 1)
    ms_error = ss_error / ((n - 1) * (k - 1))
    ms_within = (ss_total - ss_rows) / (n * (k - 1))
    alpha = 1 - confidence
    if form == "ICC1":
        denominator = ms_rows + (k - 1) * ms_within
        if denominator <= _EPSILON or ms_within <= _EPSILON:
            return AgreementResult(value=None, note="no variance within or between items", **base)
        value = (ms_rows - ms_within) / denominator
        f_value, df1, df2 = ms_rows / ms_within, n - 1, n * (k - 1)
        low_f = f_value / stats.f.ppf(1 - alpha / 2, df1, df2)
        high_f = f_value * stats.f.ppf(1 - alpha / 2, df2, df1)
        low, high = (low_f - 1) / (low_f + k - 1), (high_f - 1) / (high_f + k - 1)
    elif form == "ICC3":
        denominator = ms_rows + (k - 1) * ms_error
        if denominator <= _EPSILON or ms_error <= _EPSILON:
            return AgreementResult(value=None, note="no residual variance", **base)
        value = (ms_rows - ms_error) / denominator
        f_value, df1, df2 = ms_rows / ms_error, n - 1, (n - 1) * (k - 1)
        low_f = f_value / stats.f.ppf(1 - alpha / 2, df1, df2)
        high_f = f_value * stats.f.ppf(1 - alpha / 2, df2, df1)
        low, high = (low_f - 1) / (low_f + k - 1), (high_f - 1) / (high_f + k - 1)
    else:
        denominator = ms_rows + (k - 1) * ms_error + k * (ms_cols - ms_error) / n
        if denominator <= _EPSILON or ms_error <= _EPSILON:
            return AgreementResult(value=None, note="no residual variance", **base)
        value = (ms_rows - ms_error) / denominator
        f_cols = ms_cols / ms_error
        v_num = (
            (k - 1) * (n - 1) * (k * value * f_cols + n * (1 + (k - 1) * value) - k * value) ** 2
        )
        v_den = (n - 1) * k**2 * value**2 * f_cols**2 + (n * (1 + (k - 1) * value) - k * value) ** 2
        dof = v_num / v_den
        f_high = stats.f.ppf(1 - alpha / 2, n - 1, dof)
        f_low = stats.f.ppf(1 - alpha / 2, dof, n - 1)
        spread = k * ms_cols + (k * n - k - n) * ms_error
        low = n * (ms_rows - f_high * ms_error) / (f_high * spread + n * ms_rows)
        high = n * (f_low * ms_rows - ms_error) / (spread + n * f_low * ms_rows)
    return AgreementResult(
        value=float(value),
        ci_low=float(max(-1.0, low)),
        ci_high=float(min(1.0, high)),
        ci_method="analytic",
        **base,
    )
