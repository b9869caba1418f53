"""The item files written in one pass with each row's JSON encoded once
(``releases.services.rows.write_item_files``) are byte for byte what the per-file sinks write
(``JsonlSink``, ``CsvSink``, ``ParquetSink.write``) — NaN, an empty payload, non-ASCII text,
formulas and nested values included. No database."""

from __future__ import annotations

import hashlib

import pytest

from releases.parquet import PYTHON_ROWS, ParquetSink
from releases.services.rows import ITEM_PARQUET, write_item_files
from releases.sinks import CsvSink, JsonlSink, write_rows

COLUMNS = [
    "external_id", "status", "purpose", "group", "source", "version",
    "payload.text", "payload.score", "payload.extra",
    "stages.verify.value", "stages.verify.votes", "stages.verify.agreement",
]  # fmt: skip


def item_rows(count: int):
    for number in range(count):
        payload = {
            "text": ['Ünïcode — «quoted», "x"', "=1+1 formula", "line\nbreak"][number % 3],
            "score": [number, float("nan"), 2.5, None][number % 4],
            "extra": {"deep": [1, {"k": float("inf") if number % 5 == 0 else 0.5}]},
        }
        yield {
            "external_id": f"item-{number:05d}",
            "status": "accepted" if number % 7 else "rejected",
            "purpose": "regular",
            "group": "" if number % 2 else "g1",
            "source": "tests",
            "version": 1 + number % 3,
            "payload": {} if number % 11 == 3 else payload,
            "stages": {
                "verify": {"value": "keep", "votes": {"keep": 2, "reject": 1},
                           "agreement": 0.666667}
            } if number % 13 else {},
        }  # fmt: skip


def digests(folder):
    return {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in ("items.jsonl", "items.csv", "items.parquet")
    }


@pytest.mark.parametrize("count", [0, 5, PYTHON_ROWS + 300])
def test_item_files_written_once_equal_the_per_file_sinks(tmp_path, count):
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    sinks = [
        JsonlSink(before / "items.jsonl", deflate=True),
        CsvSink(before / "items.csv", columns=COLUMNS, deflate=True),
        ParquetSink(before / "items.parquet", ITEM_PARQUET),
    ]
    expected = write_rows(item_rows(count), sinks)
    written = write_item_files(item_rows(count), COLUMNS, after)
    assert digests(after) == digests(before)
    assert [entry.to_dict() for entry in written.entries] == [e.to_dict() for e in expected]
    assert set(written.deflated) == {"items.jsonl", "items.csv"}


def test_an_item_row_with_other_keys_is_refused(tmp_path):
    row = next(item_rows(1))
    odd = {"status": row["status"], **row}
    with pytest.raises(ValueError, match="keys"):
        write_item_files([odd], COLUMNS, tmp_path)
