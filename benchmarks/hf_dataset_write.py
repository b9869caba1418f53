"""The Hugging Face dataset folder of a release at research scale: 1,000,002 annotations over
333,334 items, written by ``releases.hf_dataset.write_dataset_folder`` (no database: the folder
is written from a release's files, which this script writes first, shaped as a release's
``items.jsonl`` and ``annotations.jsonl`` are).

    .venv/bin/python benchmarks/hf_dataset_write.py
    .venv/bin/python benchmarks/hf_dataset_write.py --items 100000 --per-item 3

Two configurations: ``default`` (the items, one split) and ``annotations`` (every annotation, a
split per answer, three splits): both streaming passes over 1,000,002 rows are in the figure.
Printed: CPU seconds of this process for the write (user + system, from ``resource``: a loaded
machine shows in the wall time, not here), wall seconds, peak resident memory above the level
before the write (``io_scale.PeakRss``, sampled every 10 ms) and at 1/10 of the rows (memory
flat: the two peaks match), the folder's size, and the load average at start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from io_scale import PeakRss, report  # noqa: E402  (the one peak-memory sampler)

from releases.hf_dataset import DatasetConfig, DatasetLayout, write_dataset_folder  # noqa: E402

ANSWERS = ("keep", "reject", "unsure")


def write_release_files(folder: Path, items: int, per_item: int) -> None:
    """items.jsonl and annotations.jsonl as a generic release spells them (payload and stages
    as JSON objects; raters as pseudonyms)."""
    with open(folder / "items.jsonl", "w", encoding="utf-8") as handle:
        for n in range(items):
            row = {
                "external_id": f"item-{n:07d}",
                "status": "accepted",
                "purpose": "task",
                "group": "",
                "source": "bench",
                "version": 1,
                "payload": {"text": f"Sentence number {n} of the benchmark.", "n": n},
                "stages": {"verify": {"value": "keep", "status": "decided", "votes": {"keep": 3}}},
            }
            handle.write(json.dumps(row) + "\n")
    with open(folder / "annotations.jsonl", "w", encoding="utf-8") as handle:
        for n in range(items * per_item):
            row = {
                "external_id": f"item-{n // per_item:07d}",
                "stage": "verify",
                "rater": f"R{n % 200 + 1:04d}",
                "value": ANSWERS[n % 3],
                "seconds_spent": 4.5 + n % 7,
                "created_at": "2026-11-27T10:00:00+00:00",
            }
            handle.write(json.dumps(row) + "\n")


def layout() -> DatasetLayout:
    return DatasetLayout(
        configs=[
            DatasetConfig("default", "items.jsonl"),
            DatasetConfig("annotations", "annotations.jsonl", split=lambda row: row["value"]),
        ]
    )


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(folder: Path) -> dict:
    load = os.getloadavg()[0]
    peak, started_cpu, started = PeakRss(), cpu(), time.monotonic()
    dataset = write_dataset_folder(folder, layout())
    figures = {
        "cpu_seconds": round(cpu() - started_cpu, 2),
        "wall_seconds": round(time.monotonic() - started, 2),
        "peak_rss_mib": round(peak(), 1),
        "rows": sum(split.rows for config in dataset.configs for split in config.splits),
        "folder_mib": round(sum(entry.bytes for entry in dataset.entries) / 2**20, 2),
        "load_start": round(load, 2),
        "load_end": round(os.getloadavg()[0], 2),
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=333_334)
    parser.add_argument("--per-item", type=int, default=3, help="annotations per item")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hf-bench-") as workdir:
        warm, small, large = (Path(workdir) / name for name in ("warm", "small", "large"))
        for folder in (warm, small, large):
            folder.mkdir()
        write_release_files(warm, 100, args.per_item)
        measure(warm)  # the first write loads pyarrow's code: not the rows' memory
        write_release_files(small, max(args.items // 10, 1), args.per_item)
        write_release_files(large, args.items, args.per_item)
        tenth = measure(small)
        full = measure(large)
    report(
        items=args.items,
        annotations=args.items * args.per_item,
        full=full,
        tenth=tenth,
    )


if __name__ == "__main__":
    main()
