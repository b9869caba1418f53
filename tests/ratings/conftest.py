"""Builders shared by the ratings tests (database ones need the `db` fixture)."""

from __future__ import annotations

import csv
import io
import itertools
import os
from pathlib import Path

import pytest

from ratings import services

_counter = itertools.count(1)


def explica_data_dir() -> Path | None:
    """ExpliCa's data folder in ../shared (or RUNGWISE_SHARED_DIR), or None when absent."""
    candidates = [Path(__file__).resolve().parents[2] / ".." / "shared"]
    if os.environ.get("RUNGWISE_SHARED_DIR"):
        candidates.append(Path(os.environ["RUNGWISE_SHARED_DIR"]))
    for shared in candidates:
        data = shared / "datasets" / "ExpliCa" / "data"
        if (data / "explica" / "explica_freq_4800.tsv").is_file():
            return data
    return None


PAIRS = [
    ("p1", "The pipe burst.", "The floor was flooded.", "causal", "hand-written", "socially challenging"),
    ("p2", "Ana locked the door.", "She walked to the station.", "temporal", "DeScript", ""),
    ("p3", "The bakery changed its logo.", "A whale was seen offshore.", "unrelated", "hand-written", ""),
]  # fmt: skip


def csv_text(header, rows, delimiter=","):
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def pairs_csv(pairs=PAIRS) -> str:
    return csv_text(["pair_id", "sentence_a", "sentence_b", "subset", "origin", "flags"], pairs)


def make_ratings_project(**options):
    options.setdefault("slug", f"ratings-{next(_counter)}")
    options.setdefault("name", options["slug"].replace("-", " ").title())
    options.setdefault("overlap", 3)
    options.setdefault("seed", 4242)
    return services.ratings_project_create(**options)


@pytest.fixture
def ratings_project(db):
    project = make_ratings_project()
    services.pairs_import(project=project, content=pairs_csv(), filename="pairs.csv")
    return project
