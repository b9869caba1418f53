"""The item files spelled by PostgreSQL (``releases.copy_export.item_file_chunks``, used by
``releases.services.rows.release_item_files``) are byte for byte what the Python rows give
(``write_item_files`` of ``release_item_rows``): items.jsonl, items.csv and items.parquet, on
payloads and results full of what JSON, CSV and spreadsheets treat specially, with chunks
whose values only Python spells for certain written from Python in between."""

from __future__ import annotations

import hashlib

import pytest

from annotation.models import Item, ItemStage, Resolution
from releases import copy_export, parquet
from releases.services import rows as release_rows
from releases.services.rows import (
    ITEM_COLUMNS,
    RELEASED_STATUSES,
    STAGE_FIELDS,
    item_csv_columns,
    release_item_files,
    release_item_rows,
    write_item_files,
)
from tests.factories import make_items, make_label_stage, make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

NASTY = 'commas, "quotes", a back\\slash, \\" and \\n typed, key: value, and more'
#: Payloads SQL spells (every number a whole one or float8's shortest spelling).
PLAIN_PAYLOADS = [
    {"text": NASTY, "score": 3},
    {"text": "=1+1 formula", "score": -2, "why": {"k: v, w": [1, "a, b", None, True, {}]}},
    {"text": "line\nbreak\r\nand\ttab, then \x01\x02\x1f\x7f", "flag": False},
    {"text": "ünïcödé — 因果 🧪👩🏽‍🔬 \u2028\u2029", "score": 12345678901234567890},
    {"text": "-0.25", "score": 0.1, "ratio": 2.5, "list": [0.30000000000000004, 1e-3]},
    {"text": "", "score": None, "author": "A. Person", "empty": []},
    {"text": "+plus", "nested": {"deep": {"deeper": "x, y"}}, "score": 7.25},
    {"text": "@at", "ratio": 123456.789},
]
#: Payloads whose numbers only Python spells for certain: their chunk is written by Python.
ODD_PAYLOADS = [
    {"text": "tiny", "score": 1e-05},
    {"text": "whole float", "score": 10.0},
    {"text": "huge float", "ratio": 2.5e16},
]
#: (votes, value, status) of resolutions; the agreement of each is what Python rounds.
RESULTS = [
    ({"keep": 2, "reject": 1}, "keep", "majority"),
    ({"b": 1, "a": 1, "é": 0, "Z": 3}, ["a", "b"], "adjudicated"),
    ({"keep": 127, "reject": 1}, {"label": "x, y"}, "majority"),  # 127/128: a rounding tie
    ({}, None, "majority"),
    ({"keep": 3}, "=cmd", "unanimous"),
    ({"keep": 1, "reject": 2, "skip": 4}, 4.5, "majority"),
    ({"keep": 2.0}, "keep", "majority"),  # a count that is not a whole number
]


def make_release(count: int, *, odd: bool):
    project = make_project(slug=f"items-sql-{count}-{odd}")
    stages = [
        make_label_stage(project, slug="first", name="First"),
        make_label_stage(project, slug="second", name="Second"),
    ]
    make_items(project, count)
    items = list(Item.objects.filter(project=project).order_by("pk"))
    payloads = PLAIN_PAYLOADS + (ODD_PAYLOADS if odd else [])
    statuses = ["accepted", "rejected", "accepted", "active"]
    for number, item in enumerate(items):
        item.payload = payloads[number % len(payloads)]
        item.status = statuses[number % len(statuses)]
        item.external_id = ['id, with "quote"', "id\nnew line", "=id", "plain"][number % 4] + (
            f"-{number}"
        )
        item.purpose = ["regular", "gold"][number % 2]
        item.source = ["", "src, x"][number % 2]
        item.save(update_fields=["payload", "status", "external_id", "purpose", "source"])
        for position, stage in enumerate(stages):
            if (number + position) % 5 == 4:
                continue  # no item stage in this stage
            item_stage, _ = ItemStage.objects.get_or_create(
                item=item, stage=stage, defaults={"target_count": 3, "random_key": 1}
            )
            results = RESULTS if odd else RESULTS[:2] + RESULTS[3:6]
            if (number + position) % 3:
                votes, value, status = results[(number + position) % len(results)]
                Resolution.objects.create(
                    item_stage=item_stage, value=value, status=status,
                    outcome="accept" if position else "pending", votes=votes,
                    n_annotations=sum(v for v in votes.values()), policy="majority",
                )  # fmt: skip
    return project, stages


def digests(folder):
    return {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in ("items.jsonl", "items.csv", "items.parquet")
    }


@pytest.mark.parametrize("odd", [False, True])
def test_the_item_files_spelled_in_sql_are_the_python_ones(postgres, tmp_path, monkeypatch, odd):
    # Small chunks (and Arrow tables of the same size) so that a few items make many chunks.
    monkeypatch.setattr(copy_export, "ITEM_CHUNK_ROWS", 4)
    monkeypatch.setattr(parquet, "PYTHON_ROWS", 4)
    project, stages = make_release(37, odd=odd)
    python, database = tmp_path / "python", tmp_path / "sql"
    python.mkdir()
    database.mkdir()
    columns = item_csv_columns(project, stages)
    expected = write_item_files(release_item_rows(project), columns, python)
    written = release_item_files(project, stages, database)
    assert digests(database) == digests(python)
    assert [entry.to_dict() for entry in written.entries] == [
        entry.to_dict() for entry in expected.entries
    ]
    assert written.entries[0].rows == Item.objects.filter(
        project=project, status__in=RELEASED_STATUSES
    ).count()


def test_chunks_with_values_only_python_spells_are_marked_and_the_rest_are_not(
    postgres, monkeypatch
):
    monkeypatch.setattr(copy_export, "ITEM_CHUNK_ROWS", 1)
    project, stages = make_release(22, odd=True)
    chunks = list(
        copy_export.item_file_chunks(
            project, stages, statuses=RELEASED_STATUSES,
            csv_columns=item_csv_columns(project, stages), item_columns=ITEM_COLUMNS,
            stage_fields=STAGE_FIELDS, adjudicated=Resolution.Status.ADJUDICATED,
        )
    )  # fmt: skip
    rows = {row["external_id"]: row for row in release_item_rows(project)}
    assert len(chunks) == len(rows)
    marked = {chunk[3].split('"external_id":')[1].split(',"status"')[0] for chunk in chunks if chunk[2]}
    assert marked  # odd payloads and tied or fractional votes are in this release
    plain = [chunk for chunk in chunks if not chunk[2]]
    assert plain  # and most items are not odd


def test_a_row_of_python_is_used_only_for_marked_chunks(postgres, tmp_path, monkeypatch):
    monkeypatch.setattr(copy_export, "ITEM_CHUNK_ROWS", 4)
    monkeypatch.setattr(parquet, "PYTHON_ROWS", 4)
    project, stages = make_release(20, odd=False)
    read = []
    original = release_rows.release_item_rows

    def counting(*args, **kwargs):
        for row in original(*args, **kwargs):
            read.append(row)
            yield row

    monkeypatch.setattr(release_rows, "release_item_rows", counting)
    release_item_files(project, stages, tmp_path)
    assert read == []
