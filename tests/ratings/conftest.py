"""Builders shared by the ratings tests (database ones need the `db` fixture)."""

from __future__ import annotations

import csv
import io
import itertools

import pytest

from ratings import services

_counter = itertools.count(1)

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
