"""Time and peak memory of reading and checking a ratings file, without a database.

    .venv/bin/python benchmarks/ratings_read.py                 # this checkout
    .venv/bin/python benchmarks/ratings_read.py /path/to/other  # another checkout (e.g. main)

Builds an ExpliCa-sized historic ratings file in memory — 72,000 rows of pair_id, order,
connective, rating, rater over 600 pairs and 30 raters — as CSV (1.5 MB) and as JSON Lines
(6.4 MB), and runs ``ratings.importing`` on the bytes as the services do (``Rows`` when the
checkout has it, else ``read_rows``) followed by ``parse_ratings``. Prints the best of three
wall times and the peak of Python allocations (``tracemalloc``) of one more run. Comparing two
checkouts in one invocation each, back to back, on an idle machine, is what this is for.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ratings import importing  # noqa: E402
from ratings.connectives import EXPLICA_CONNECTIVES  # noqa: E402

ROWS = 72_000


def files() -> dict[str, tuple[str, bytes]]:
    words = EXPLICA_CONNECTIVES.words
    rows = [
        {
            "pair_id": str(number % 600),
            "order": "AB" if (number // 4800) % 2 == 0 else "BA",
            "connective": words[(number // 600) % len(words)],
            "rating": str(1 + number % 10),
            "rater": f"r{number // 4800}-{(number // 600) % 8}",
        }
        for number in range(ROWS)
    ]
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return {
        "CSV": ("ratings.csv", text.getvalue().encode()),
        "JSONL": ("ratings.jsonl", "".join(json.dumps(row) + "\n" for row in rows).encode()),
    }


def read_and_check(data: bytes, filename: str) -> int:
    reader = getattr(importing, "Rows", None) or importing.read_rows
    rows = reader(data, filename)
    return len(importing.parse_ratings(rows, EXPLICA_CONNECTIVES, scale=(1, 10)))


def main() -> None:
    print(f"checkout: {REPO}")
    for label, (filename, data) in files().items():
        times = []
        for _ in range(3):
            start = time.perf_counter()
            count = read_and_check(data, filename)
            times.append(time.perf_counter() - start)
        tracemalloc.start()
        read_and_check(data, filename)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"{label:<5} {len(data) / 1e6:4.1f} MB, {count:,} ratings: "
            f"{min(times):.3f} s (best of 3), peak allocations {peak / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    main()
