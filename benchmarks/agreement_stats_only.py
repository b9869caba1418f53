"""Time Fleiss' κ + 95 % CI + per-category κ on 1,000,000 synthetic annotations (no database).

Usage (from the repository root)::

    .venv/bin/python benchmarks/agreement_stats_only.py [--items 333334] [--raters 3]
        [--categories 5] [--repeat 5] [--seed 0]

The data are seeded: every item has a true category; each of ``--raters`` annotators (drawn from a
pool of 9, as in METER) reports it with probability 0.8 and a uniformly random category otherwise.

Figures printed (median and best of ``--repeat`` runs):

* ``fleiss_kappa_codes`` (the fast path a selector feeds with ``values_list`` arrays): count matrix
  by ``np.bincount``, κ, Gwet SE and t interval, Fleiss–Nee–Landis null SE, per-category κ;
* the same with a 2,000-replicate seeded bootstrap interval instead of the analytic one;
* ``fleiss_kappa`` on a long pandas DataFrame (factorising labels, checking duplicates);
* baseline, measured in the same run: statsmodels ``aggregate_raters`` + ``fleiss_kappa`` on the
  items × raters matrix — κ only, no SE, no per-category κ.

The lead's end-to-end benchmark wraps a database read around :func:`statistics_for_codes`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from statsmodels.stats import inter_rater

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement.stats import AgreementResult, fleiss_kappa, fleiss_kappa_codes  # noqa: E402


def synthetic_annotations(
    *, n_items: int, n_raters: int, n_categories: int, seed: int, pool: int = 9
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Item codes, rater codes and value codes of ``n_items × n_raters`` seeded annotations."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_categories, n_items)
    item_codes = np.repeat(np.arange(n_items, dtype=np.int64), n_raters)
    # Distinct raters per item: a random offset into the pool, then consecutive annotators.
    offsets = np.repeat(rng.integers(0, pool, n_items), n_raters)
    rater_codes = (offsets + np.tile(np.arange(n_raters), n_items)) % pool
    honest = rng.random(item_codes.size) < 0.8
    value_codes = np.where(
        honest, truth[item_codes], rng.integers(0, n_categories, item_codes.size)
    )
    return item_codes, rater_codes, value_codes


def statistics_for_codes(
    item_codes: np.ndarray, value_codes: np.ndarray, *, n_categories: int
) -> AgreementResult:
    """κ + 95 % CI (Gwet) + per-category κ + null SE: what the agreement task computes."""
    return fleiss_kappa_codes(item_codes, value_codes, n_categories=n_categories)


def timed(function: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    durations, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        durations.append(time.perf_counter() - start)
    return statistics.median(durations), min(durations), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=333_334)
    parser.add_argument("--raters", type=int, default=3)
    parser.add_argument("--categories", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()

    item_codes, rater_codes, value_codes = synthetic_annotations(
        n_items=arguments.items,
        n_raters=arguments.raters,
        n_categories=arguments.categories,
        seed=arguments.seed,
    )
    labels = np.array([f"category-{k}" for k in range(arguments.categories)], dtype=object)
    frame = pd.DataFrame({"item": item_codes, "rater": rater_codes, "value": labels[value_codes]})
    wide = value_codes.reshape(arguments.items, arguments.raters)
    print(
        f"{item_codes.size:,} annotations: {arguments.items:,} items × {arguments.raters} raters, "
        f"{arguments.categories} categories, seed {arguments.seed}, {arguments.repeat} runs each"
    )

    runs = {
        "baseline statsmodels aggregate_raters + fleiss_kappa (κ only)": lambda: (
            inter_rater.fleiss_kappa(inter_rater.aggregate_raters(wide)[0])
        ),
        "fleiss_kappa_codes: κ + Gwet CI + per-category κ": lambda: statistics_for_codes(
            item_codes, value_codes, n_categories=arguments.categories
        ),
        "fleiss_kappa_codes with 2,000-replicate bootstrap CI": lambda: fleiss_kappa_codes(
            item_codes, value_codes, n_categories=arguments.categories, ci="bootstrap", n_boot=2000
        ),
        "fleiss_kappa on a long DataFrame (labels, duplicate check)": lambda: fleiss_kappa(frame),
    }
    baseline = None
    for name, function in runs.items():
        median, best, result = timed(function, arguments.repeat)
        baseline = baseline or median
        print(
            f"{name}\n    median {median:.3f} s, best {best:.3f} s, {median / baseline:.2f}× baseline"
        )
        if isinstance(result, AgreementResult):
            per_category = ", ".join(
                f"{row['kappa']:.3f}" for row in result.details["per_category"]
            )
            print(
                f"    κ = {result.value:.4f}, 95 % CI [{result.ci_low:.4f}, {result.ci_high:.4f}] "
                f"({result.ci_method}), se_null = {result.se_null:.5f}, per-category κ {per_category}"
            )
        else:
            print(f"    κ = {result:.4f}")


if __name__ == "__main__":
    main()
