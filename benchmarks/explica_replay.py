"""How many of ExpliCa's 72,000 ratings sequential stopping would have needed.

Run from the repository root: ``.venv/bin/python benchmarks/explica_replay.py [--seeds 3]
[--plot docs/figures/explica-replay.png]``. Needs the shared data folder beside the checkout
(or RUNGWISE_SHARED_DIR).

For each stopping rule (``ratings.adaptive.StoppingRule``: a floor of ratings per item, the
confidence of the t-intervals, optionally a target interval width) and each seed, the 15
ratings of every item are replayed in a random order (``ratings.adaptive.replay``): one more
rating per item of every open ordered pair at a time, and a pair stops once its label is
settled. Prints the ratings used (the baseline: all 72,000, measured in the same run) and how
many of the 1,200 ordered-pair labels differ from the published ones (``condition_human``),
which the full 15 ratings reproduce 1,200 / 1,200 (ratings/README.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ratings import explica  # noqa: E402
from ratings.adaptive import StoppingRule, replay  # noqa: E402

RULES = {
    "floor 3, 95 % intervals": StoppingRule(floor=3),
    "floor 5, 95 % intervals": StoppingRule(floor=5),
    "floor 5, 95 % or every interval < 2.0": StoppingRule(floor=5, mean_ci_width=2.0),
    "floor 5, 99 % intervals": StoppingRule(floor=5, confidence=0.99),
    "floor 8, 95 % intervals": StoppingRule(floor=8),
}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="replays per rule (seeds 0 … n-1)")
    parser.add_argument("--plot", type=Path, default=None, help="write the figure here (PNG)")
    args = parser.parse_args()

    data = explica_dir()
    ordered = explica.read_ordered_pairs(data / "explica" / "explica_freq_4800.tsv")
    ratings = explica.read_acceptability_file(
        data / "res" / "acceptability" / "zeroshot" / "accept_res_outlines_gpt-4o_zero.tsv",
        ordered,
    ).ratings
    published = ordered[["pair_id", "order", "published_label"]]
    total = int(ratings["rating"].notna().sum())
    print(f"ExpliCa: {total:,} ratings, {len(published):,} ordered pairs; seeds 0–{args.seeds - 1}")
    print(
        f"{'rule':42} {'ratings used':>14} {'share':>7} {'labels differing':>17} "
        f"{'stopped at the cap':>19} {'s/replay':>9}"
    )
    rows = []
    for name, rule in RULES.items():
        used, differing, at_cap, seconds = [], [], [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            result = replay(ratings, rule, seed=seed)
            seconds.append(time.perf_counter() - start)
            merged = result.pairs.merge(published, on=["pair_id", "order"])
            used.append(result.ratings_used)
            differing.append(int((merged["label"] != merged["published_label"]).sum()))
            at_cap.append(int((result.pairs["n_per_item"] >= rule.cap).sum()))
        share = statistics.fmean(used) / total
        rows.append((name, rule, used, differing, share))
        print(
            f"{name:42} {statistics.fmean(used):14,.0f} {share:7.1%} "
            f"{statistics.fmean(differing):8.1f} ({min(differing)}–{max(differing)}) "
            f"{statistics.fmean(at_cap):19,.0f} {statistics.fmean(seconds):9.1f}"
        )
    print(f"{'every rating (the published labels)':42} {total:14,} {1:7.1%} {0:8.1f}")
    if args.plot:
        _plot(rows, total, args.plot)
        print(f"figure: {args.plot}")


def _plot(rows, total: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7.5, 4.2), dpi=120)
    for name, _rule, used, differing, _share in rows:
        axis.scatter([u / total * 100 for u in used], differing, label=name, s=28, alpha=0.8)
    axis.scatter([100], [0], marker="*", s=120, color="black", label="all 15 ratings per item")
    axis.set_xlabel("ratings used (% of ExpliCa's 72,000)")
    axis.set_ylabel("ordered-pair labels differing\nfrom the 1,200 published")
    axis.set_title("Sequential stopping replayed on ExpliCa (one point per seed)")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7.5, loc="upper right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)


if __name__ == "__main__":
    main()
