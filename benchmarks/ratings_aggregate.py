"""Time reading and aggregating ExpliCa's 4,800 items × 15 ratings, and Krippendorff's α.

Run from the repository root: ``.venv/bin/python benchmarks/ratings_aggregate.py``. Needs the
shared data folder beside the checkout (or RUNGWISE_SHARED_DIR). Prints best-of-N wall times
and ratios against baselines measured in the same run: a plain-Python per-item loop for the
aggregation, and ``krippendorff.alpha(reliability_data=...)`` on a positions × items matrix for α.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import krippendorff
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ratings import explica, stats  # noqa: E402

REPEATS = 3


def explica_dir() -> Path:
    candidates = [Path(__file__).resolve().parents[1] / ".." / "shared"]
    if os.environ.get("RUNGWISE_SHARED_DIR"):
        candidates.append(Path(os.environ["RUNGWISE_SHARED_DIR"]))
    for shared in candidates:
        data = shared / "datasets" / "ExpliCa" / "data"
        if data.is_dir():
            return data
    sys.exit(
        "ExpliCa data not found: put the shared folder beside the checkout or set RUNGWISE_SHARED_DIR."
    )


def best_of(function, repeats: int = REPEATS):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    data = explica_dir()
    pair_file = data / "explica" / "explica_freq_4800.tsv"
    ratings_file = (
        data / "res" / "acceptability" / "zeroshot" / "accept_res_outlines_gpt-4o_zero.tsv"
    )

    t_pairs, ordered_pairs = best_of(lambda: explica.read_ordered_pairs(pair_file))
    t_read, accept = best_of(lambda: explica.read_acceptability_file(ratings_file, ordered_pairs))
    ratings = accept.ratings
    t_items, items = best_of(lambda: stats.item_summary(ratings))
    t_labels, labels = best_of(lambda: stats.pair_labels(items))
    t_counts, _ = best_of(lambda: stats.class_counts(labels.merge(ordered_pairs), by="subset"))
    reproduced = 1200 - len(explica.compare_with_published(labels, ordered_pairs))

    def naive_means():
        grouped: dict[str, list[float]] = {}
        for key, value in zip(
            ratings["item_key"].tolist(), ratings["rating"].tolist(), strict=True
        ):
            grouped.setdefault(key, []).append(value)
        return {key: (statistics.fmean(v), statistics.pstdev(v)) for key, v in grouped.items()}

    t_naive, _ = best_of(naive_means)

    domain = range(1, 11)
    t_alpha_ord, alpha_ord = best_of(
        lambda: stats.krippendorff_alpha(ratings, level="ordinal", value_domain=domain)
    )
    t_alpha_int, alpha_int = best_of(
        lambda: stats.krippendorff_alpha(ratings, level="interval", value_domain=domain)
    )
    # Baseline: list positions as if they were raters (15 × 4,800). Same α, since α only uses
    # which values share an item; the positions are not real raters.
    matrix = ratings.pivot(index="position", columns="item_key", values="rating").to_numpy(
        dtype=float
    )
    t_alpha_matrix, alpha_matrix = best_of(
        lambda: krippendorff.alpha(
            reliability_data=matrix, level_of_measurement="interval", value_domain=list(domain)
        )
    )
    t_split, split = best_of(
        lambda: stats.split_half_reliability(ratings, n_splits=200, seed=0), repeats=1
    )

    print(
        f"ratings: {len(ratings):,} ({len(items):,} items × {int(items['n'].median())}), ordered pairs {len(labels):,}"
    )
    print(f"read pair file                  {t_pairs * 1000:8.1f} ms")
    print(f"read acceptability file          {t_read * 1000:8.1f} ms")
    print(
        f"item summary (mean/SD/CI)        {t_items * 1000:8.1f} ms   naive Python loop {t_naive * 1000:.1f} ms (×{t_naive / t_items:.1f})"
    )
    print(
        f"pair labels                      {t_labels * 1000:8.1f} ms   reproduced {reproduced}/1200 published labels"
    )
    print(f"class counts by subset           {t_counts * 1000:8.1f} ms")
    total = t_read + t_items + t_labels
    print(f"read + aggregate + label         {total * 1000:8.1f} ms")
    print(f"alpha ordinal  = {alpha_ord:.4f}      {t_alpha_ord * 1000:8.1f} ms")
    print(
        f"alpha interval = {alpha_int:.4f}      {t_alpha_int * 1000:8.1f} ms   positions×items matrix α={alpha_matrix:.4f} {t_alpha_matrix * 1000:.1f} ms (×{t_alpha_matrix / t_alpha_int:.1f})"
    )
    print(
        f"split-half (200 splits): r={split.r_half:.4f}, Spearman–Brown={split.spearman_brown:.4f} "
        f"[{split.interval[0]:.4f}, {split.interval[1]:.4f}]   {t_split * 1000:8.1f} ms"
    )
    merged = items.merge(accept.items, on="item_key")
    identical = np.allclose(merged["mean"], merged["published_mean"], rtol=0, atol=1e-9)
    print(f"per-item means equal the published ones: {identical} ({len(merged):,} items)")


if __name__ == "__main__":
    main()
