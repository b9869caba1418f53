"""A release's Parquet files at research scale, memory flat: the Parquet copies of its plain
files (``releases.parquet.ParquetSink``) and its Hugging Face dataset folder
(``releases.hf_dataset.write_dataset_folder``), each measured at two sizes in a process of its
own. No database: the script first writes a release's files as a build spells them.

    .venv/bin/python benchmarks/hf_dataset_write.py                       # 1,000,002 and 99,999 annotations
    .venv/bin/python benchmarks/hf_dataset_write.py --items 100000 --per-item 3

* ``parquet copies``: ``items.parquet`` from ``items.jsonl``'s rows one at a time
  (``ParquetSink.write``, as ``releases.services.rows`` feeds it) and ``annotations.parquet``
  from CSV blocks of 4,096 rows (``ParquetSink.write_csv_block``, as
  ``releases.copy_export.copy_annotation_files`` feeds it from PostgreSQL).
* ``dataset folder``: two configurations, ``default`` (the items, one split) and
  ``annotations`` (every annotation, a split per answer, three splits open at once); both
  streaming passes over every row are in the figure.

Printed per part and size: rows written, CPU seconds of the measured process (user + system,
from ``resource``: a loaded machine shows in the wall time, not here), wall seconds, peak
resident memory above the level before the write (``io_scale.PeakRss``, sampled every 10 ms),
the largest amount Arrow's memory pool held (``pyarrow.default_memory_pool().max_memory()``),
the files' size, and the load average at start and end. Memory flat: the peaks match at both
sizes. Each measured process first writes 100 rows (pyarrow's code loaded: not the rows' memory).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from io_scale import PeakRss, report  # type: ignore[import-not-found]  # noqa: E402  (the one peak-memory sampler)

ANSWERS = ("keep", "reject", "unsure")
#: Rows per CSV block of the annotations, as PostgreSQL hands them (copy_export.CHUNK_IDS).
CSV_BLOCK = 4096


def write_release_files(folder: Path, items: int, per_item: int) -> None:
    """items.jsonl, annotations.jsonl and the annotations' Parquet rows as CSV
    (annotations.parquet.csv) as a generic release spells them (payload and stages as JSON
    objects; raters as pseudonyms)."""
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
    with (
        open(folder / "annotations.jsonl", "w", encoding="utf-8") as handle,
        open(folder / "annotations.parquet.csv", "w", encoding="utf-8", newline="") as spelled,
    ):
        cells = csv.writer(spelled, lineterminator="\n")
        for n in range(items * per_item):
            answer = ANSWERS[n % 3]
            row = {
                "external_id": f"item-{n // per_item:07d}",
                "stage": "verify",
                "rater": f"R{n % 200 + 1:04d}",
                "value": answer,
                "payload": {"value": answer, "comment": ""},
                "seconds_spent": 4.5 + n % 7,
                "created_at": "2026-11-27T10:00:00+00:00",
                "item_version": 1,
            }
            handle.write(json.dumps(row) + "\n")
            cells.writerow(
                [
                    row["external_id"],
                    row["stage"],
                    row["rater"],
                    json.dumps(answer),
                    json.dumps(row["payload"], separators=(",", ":")),
                    row["seconds_spent"],
                    row["created_at"],
                    row["item_version"],
                ]
            )


def iter_csv_blocks(path: Path) -> Iterator[bytes]:
    """The annotations' CSV in blocks of ``CSV_BLOCK`` rows, one at a time (as PostgreSQL
    hands them)."""
    with open(path, "rb") as handle:
        block = io.BytesIO()
        rows = 0
        for line in handle:
            block.write(line)
            rows += 1
            if rows == CSV_BLOCK:
                yield block.getvalue()
                block, rows = io.BytesIO(), 0
        if rows:
            yield block.getvalue()


def write_parquet_copies(folder: Path) -> tuple[int, int]:
    """items.parquet and annotations.parquet as a build writes them; (rows, bytes)."""
    from releases.parquet import ParquetSink
    from releases.services.rows import ANNOTATION_PARQUET, ITEM_PARQUET
    from releases.writers import iter_jsonl

    items = ParquetSink(folder / "items.parquet", ITEM_PARQUET)
    for row in iter_jsonl(folder / "items.jsonl"):
        items.write(row)
    annotations = ParquetSink(folder / "annotations.parquet", ANNOTATION_PARQUET)
    for block in iter_csv_blocks(folder / "annotations.parquet.csv"):
        annotations.write_csv_block(block)
    entries = [items.close(), annotations.close()]
    return sum(entry.rows or 0 for entry in entries), sum(entry.bytes for entry in entries)


def write_dataset(folder: Path) -> tuple[int, int]:
    """The dataset folder of two configurations; (rows, bytes)."""
    from releases.hf_dataset import DatasetConfig, DatasetLayout, write_dataset_folder

    layout = DatasetLayout(
        configs=[
            DatasetConfig("default", "items.jsonl"),
            DatasetConfig("annotations", "annotations.jsonl", split=lambda row: row["value"]),
        ]
    )
    dataset = write_dataset_folder(folder, layout)
    rows = sum(split.rows for config in dataset.configs for split in config.splits)
    return rows, sum(entry.bytes for entry in dataset.entries)


PARTS = {"parquet": write_parquet_copies, "dataset": write_dataset}


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def phase(part: str, folder: Path, warm: Path) -> None:
    """One part at one size, in this (fresh) process."""
    import pyarrow as pa

    # Django-free modules, but releases.services.rows imports the models: settings needed.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
    import django

    django.setup()
    write = PARTS[part]
    write(warm)  # pyarrow's code and the first pool arenas: not the rows' memory
    pool = pa.default_memory_pool()
    pool.release_unused()
    load = os.getloadavg()[0]
    peak, started_cpu, started = PeakRss(), cpu(), time.monotonic()
    rows, size = write(folder)
    report(
        rows=rows,
        cpu_seconds=round(cpu() - started_cpu, 2),
        wall_seconds=round(time.monotonic() - started, 2),
        peak_rss_mib=round(peak(), 1),
        arrow_pool_max_mib=round(pool.max_memory() / 2**20, 1),
        files_mib=round(size / 2**20, 2),
        load=f"{load:.2f} → {os.getloadavg()[0]:.2f}",
    )


def child(part: str, folder: Path, warm: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--phase", part, str(folder), str(warm)],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode:
        print(done.stderr, file=sys.stderr)
    done.check_returncode()
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=333_334)
    parser.add_argument("--per-item", type=int, default=3, help="annotations per item")
    parser.add_argument("--small", type=int, default=10, help="the small size: items / SMALL")
    parser.add_argument("--phase", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        part, folder, warm = args.phase
        phase(part, Path(folder), Path(warm))
        return
    with tempfile.TemporaryDirectory(prefix="hf-bench-") as workdir:
        sizes = {"small": max(args.items // args.small, 1), "large": args.items}
        folders = {name: Path(workdir) / name for name in ("warm", *sizes)}
        for folder in folders.values():
            folder.mkdir()
        write_release_files(folders["warm"], 100, args.per_item)
        for name, items in sizes.items():
            write_release_files(folders[name], items, args.per_item)
        print(f"load {' '.join(f'{v:.2f}' for v in os.getloadavg())}; annotations: "
              + ", ".join(f"{items * args.per_item:,}" for items in sizes.values()))  # fmt: skip
        for part in PARTS:
            for name, items in sizes.items():
                figures = child(part, folders[name], folders["warm"])
                print(f"  {part:8} {items * args.per_item:>9,} annotations: {json.dumps(figures)}",
                      flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
