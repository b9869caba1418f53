"""Draw the annotator loop's runs recorded by ``annotator_loop.py --record FILE``: throughput
against p95 latency, one colour per server configuration and a marker per series, with the
issue's targets (≥ 300 annotations/s with p95 < 80 ms; ≥ 200 with p95 < 100) shaded.

    .venv/bin/python benchmarks/plot_loop.py runs.jsonl -o docs/figures/annotator-loop.png

Not a test: a picture of figures measured elsewhere.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 — after choosing the headless backend
from matplotlib.patches import Rectangle  # noqa: E402


def label(run: dict) -> str:
    durability = "durable" if run.get("fsync") == "on" else "fsync off"
    return (
        f"{run['server']} {run['workers']} × {run['threads']}, {durability}, "
        f"items via {run.get('items_via', 'import')}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    args = parser.parse_args()
    runs = [json.loads(line) for line in args.runs.read_text().splitlines() if line.strip()]
    if not runs:
        parser.error(f"{args.runs} holds no runs")
    figure, axes = plt.subplots(figsize=(8, 5), dpi=120)
    # The targets: ≥ 300/s with p95 < 80 ms (green), ≥ 200/s with p95 < 100 ms (grey).
    axes.add_patch(Rectangle((200, 0), 1000, 100, color="#f3f3f3", zorder=0))
    axes.add_patch(Rectangle((300, 0), 1000, 80, color="#dff0e0", zorder=0))
    labels = sorted({label(run) for run in runs})
    colours = plt.get_cmap("tab10")
    markers = "osD^vP*X"
    series = sorted({run["series"] for run in runs})
    for index, name in enumerate(labels):
        for run in (run for run in runs if label(run) == name):
            axes.scatter(
                run["rate"],
                run["p95"],
                color=colours(index),
                marker=markers[series.index(run["series"]) % len(markers)],
                s=60,
                edgecolor="black",
                linewidth=0.5,
                zorder=3,
            )
        axes.scatter([], [], color=colours(index), label=name, s=60)
    rates = [run["rate"] for run in runs]
    latencies = [run["p95"] for run in runs]
    axes.set_xlim(min(150, min(rates) - 20), max(400, max(rates) + 20))
    axes.set_ylim(0, max(120, max(latencies) + 10))
    axes.set_xlabel("annotations per second (K = 32, fresh database per run)")
    axes.set_ylabel("p95 request latency (ms)")
    axes.set_title("Annotator loop: each point one 12 s run; markers tell series apart")
    axes.text(305, 5, "≥ 300/s, p95 < 80 ms", color="#2e7d32", fontsize=9)
    axes.text(205, 5, "≥ 200/s, p95 < 100 ms", color="#616161", fontsize=9)
    axes.legend(loc="upper left", fontsize=8, frameon=False)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out)
    print(f"{len(runs)} runs drawn: {args.out}")


if __name__ == "__main__":
    main()
