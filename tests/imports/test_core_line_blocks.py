"""JSON Lines and CSV files read a block of whole lines at a time (imports/core/readers.py,
``_text_lines``) give the same records, errors, line numbers, SHA-256 and byte counts as the
same files read one line at a time — whatever their line ends, encodings errors, and lines
longer than a block."""

from __future__ import annotations

import io
import json

import pytest

from imports.core import ImportFileError, RecordReader
from imports.core.readers import LINES_BLOCK, HashingReader


def read_all(data: bytes, fmt: str) -> tuple:
    reader = RecordReader(io.BytesIO(data), fmt=fmt)
    records, fatal = [], None
    try:
        for record in reader:
            records.append((record.line, record.data, record.error))
    except ImportFileError as problem:
        fatal = problem.errors
    reader.finish()
    return records, fatal, reader.sha256, reader.bytes_read


def both_ways(data: bytes, fmt: str, monkeypatch) -> tuple:
    blocks = read_all(data, fmt)
    with monkeypatch.context() as patched:
        patched.setattr(HashingReader, "whole_lines", lambda self, size=0: b"")
        lines = read_all(data, fmt)
    assert blocks == lines
    return blocks


def rows(count: int, start: int = 0) -> list[str]:
    """JSON Lines records; one in 2,500 holds a raw U+2028 in a string (valid JSON, which
    ``str.splitlines`` would break at)."""
    return [
        json.dumps(
            {
                "id": f"r{n}",
                "text": f"Row {n} ünïcode ✓" + (" \u2028 inside" if n % 2500 == 7 else ""),
            },
            ensure_ascii=False,
        )
        for n in range(start, start + count)
    ]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_many_blocks_of_lines_read_as_line_by_line(end, monkeypatch):
    data = (end.join(rows(20_000)) + end).encode()
    assert len(data) > 3 * LINES_BLOCK
    records, fatal, _, size = both_ways(data, "jsonl", monkeypatch)
    assert fatal is None and size == len(data)
    assert [line for line, _, _ in records] == list(range(1, 20_001))
    assert records[19_999][1]["text"].startswith("Row 19999")


def test_mixed_line_ends_bom_blank_and_bad_lines(monkeypatch):
    lines = rows(3000)
    lines[10] = '{"id": "bad", '  # bad JSON
    lines[2000] = ""  # blank
    lines[2500] = "[1, 2]"  # not an object (the schema's to say)
    data = ("\ufeff" + "\n".join(lines[:1500]) + "\r\n" + "\n".join(lines[1500:]) + "\r").encode()
    records, fatal, _, _ = both_ways(data, "jsonl", monkeypatch)
    assert fatal is None
    assert records[10][0] == 11 and records[10][2].code == "json_syntax"
    assert len(records) == 2999


def test_a_bad_byte_deep_in_a_block_is_named_after_the_rows_before_it(monkeypatch):
    lines = [line.encode() for line in rows(4000)]
    lines[3000] = b'{"id": "latin", "text": "caf\xe9"}'
    records, fatal, _, _ = both_ways(b"\n".join(lines) + b"\n", "jsonl", monkeypatch)
    assert len(records) == 3000
    assert fatal is not None and fatal[0].code == "encoding" and fatal[0].line == 3001
    assert fatal[0].column == 29


def test_a_line_longer_than_a_block(monkeypatch):
    long_line = json.dumps({"id": "long", "text": "x" * (LINES_BLOCK * 2)})
    data = "\n".join([*rows(10), long_line, *rows(10, 10)]).encode() + b"\n"
    records, fatal, _, _ = both_ways(data, "jsonl", monkeypatch)
    assert fatal is None and [line for line, _, _ in records] == list(range(1, 22))
    assert records[10][1]["id"] == "long"


def test_csv_with_quoted_line_breaks_across_blocks(monkeypatch):
    body = "".join(f'r{n},"two\nlines {n}",{n}\n' for n in range(20_000))
    data = ("id,text,n\n" + body).encode()
    records, fatal, _, _ = both_ways(data, "csv", monkeypatch)
    assert fatal is None and len(records) == 20_000
    assert records[-1][0] == 2 + 2 * 19_999 and records[-1][1]["text"] == "two\nlines 19999"


def test_numbers_beyond_64_bits_read_as_the_standard_decoder_reads_them(monkeypatch):
    data = (
        b'{"id": "a", "n": 123456789012345678901234}\n'
        b'{"id": "b", "n": -9223372036854775809, "x": 1.5}\n'
        b'{"id": "c", "s": "12345678901234567890123", "n": 18446744073709551615}\n'
        b'{"id": "d", "nested": {"n": 99999999999999999999999}}\n'
    )
    records, fatal, _, _ = both_ways(data, "jsonl", monkeypatch)
    assert fatal is None
    assert [record[1] for record in records] == [
        {"id": "a", "n": 123456789012345678901234},
        {"id": "b", "n": -9223372036854775809, "x": 1.5},
        {"id": "c", "s": "12345678901234567890123", "n": 18446744073709551615},
        {"id": "d", "nested": {"n": 99999999999999999999999}},
    ]
    assert type(records[0][1]["n"]) is int and type(records[3][1]["nested"]["n"]) is int
