"""Throughput and memory of the Django-free import and release file code.

Prints rows/s for validating generated CausalT5k-like rows (CSV, JSON Lines, JSON array) and for
writing release rows (JSONL, CSV), each beside a baseline measured in the same run (plain
``json.loads`` / ``csv.reader`` / ``json.dumps`` loops with no checks), plus the tracemalloc peak
of each step (measured in a second, traced run) and the process's peak RSS.

    .venv/bin/python benchmarks/io_files_only.py [--rows 100000] [--write-rows 1000000]
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from imports.core import validate_stream  # noqa: E402
from releases import write_csv, write_jsonl  # noqa: E402
from review.causalt5k.schema import CAUSALT5K_SCHEMA  # noqa: E402

COLUMNS = ["id", "pearl_level", "domain", "scenario", "claim", "label", "trap_type", "final_score"]


def cases(count: int) -> Iterator[dict]:
    for n in range(count):
        yield {
            "id": f"T{n % 3 + 1}-W{n % 10 + 1}-MED-{n:07d}",
            "pearl_level": f"L{n % 3 + 1}",
            "domain": "D4",
            "scenario": f"Case {n}: patients who took the supplement recovered faster. " * 4,
            "claim": "The supplement caused faster recovery.",
            "label": "NO" if n % 4 else "YES",
            "trap_type": f"W{n % 10 + 1}",
            "final_score": 9.0 + (n % 10) / 10,
        }


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def traced_peak(function: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def report(label: str, rows: int, seconds: float, baseline: float, peak: int | None) -> None:
    peak_text = f"{peak / 1024 / 1024:8.2f} MiB" if peak is not None else "         —"
    print(
        f"{label:<34} {rows / seconds:>12,.0f} rows/s   {seconds / baseline:5.1f}x baseline   "
        f"tracemalloc peak {peak_text}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--write-rows", type=int, default=1_000_000)
    parser.add_argument("--trace-write-rows", type=int, default=100_000)
    options = parser.parse_args()
    rows = options.rows

    with tempfile.TemporaryDirectory() as folder:
        folder_path = Path(folder)
        jsonl_path = folder_path / "cases.jsonl"
        csv_path = folder_path / "cases.csv"
        json_path = folder_path / "cases.json"
        write_jsonl(cases(rows), jsonl_path)
        write_csv(cases(rows), csv_path, columns=COLUMNS)
        with open(json_path, "w", encoding="utf-8") as handle:
            handle.write("[\n")
            for n, case in enumerate(cases(rows)):
                handle.write(("," if n else "") + json.dumps(case) + "\n")
            handle.write("]\n")
        sizes = ", ".join(
            f"{path.name} {path.stat().st_size / 1e6:.1f} MB"
            for path in (csv_path, jsonl_path, json_path)
        )
        print(f"validating {rows:,} rows ({sizes}) with the causalt5k schema")

        def baseline_jsonl() -> None:
            with open(jsonl_path, encoding="utf-8") as handle:
                for line in handle:
                    json.loads(line)

        def baseline_csv() -> None:
            with open(csv_path, encoding="utf-8", newline="") as handle:
                for _row in csv.DictReader(handle):
                    pass

        def baseline_json() -> None:
            with open(json_path, encoding="utf-8") as handle:
                json.load(handle)  # the whole list in memory: what streaming avoids

        for label, path, fmt, baseline in (
            ("validate CSV", csv_path, "csv", baseline_csv),
            ("validate JSONL", jsonl_path, "jsonl", baseline_jsonl),
            ("validate JSON array (streamed)", json_path, "json", baseline_json),
        ):

            def validate(path: Path = path, fmt: str = fmt) -> None:
                with open(path, "rb") as handle:
                    result = validate_stream(handle, fmt=fmt, schema=CAUSALT5K_SCHEMA)
                assert result.ok and result.rows_ok == rows, result.summary()

            seconds = timed(validate)
            base = timed(baseline)
            report(label, rows, seconds, base, traced_peak(validate))
        print(
            f"  (baseline peak for json.load of the whole array: "
            f"{traced_peak(baseline_json) / 1024 / 1024:.1f} MiB)"
        )

        write_rows = options.write_rows
        print(f"writing {write_rows:,} rows (tracemalloc over {options.trace_write_rows:,})")
        out_jsonl = folder_path / "out.jsonl"
        out_csv = folder_path / "out.csv"

        def baseline_write() -> None:
            with open(folder_path / "baseline.jsonl", "w", encoding="utf-8") as handle:
                for case in cases(write_rows):
                    handle.write(json.dumps(case) + "\n")

        base = timed(baseline_write)
        seconds = timed(lambda: write_jsonl(cases(write_rows), out_jsonl))
        peak = traced_peak(lambda: write_jsonl(cases(options.trace_write_rows), out_jsonl))
        report("write JSONL (+SHA-256)", write_rows, seconds, base, peak)
        seconds = timed(lambda: write_csv(cases(write_rows), out_csv, columns=COLUMNS))
        peak = traced_peak(
            lambda: write_csv(cases(options.trace_write_rows), out_csv, columns=COLUMNS)
        )
        report("write CSV (+SHA-256)", write_rows, seconds, base, peak)
        print(f"  (baseline: json.dumps + write, no hashing: {write_rows / base:,.0f} rows/s)")

    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak RSS {peak_rss:.0f} MiB (includes the json.load baseline)")


if __name__ == "__main__":
    main()
