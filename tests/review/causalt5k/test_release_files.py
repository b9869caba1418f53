"""The release folder's ``.json`` files come in through the import core's JSON reader: a file it
refuses is reported with where and why, and nothing is taken from it."""

from __future__ import annotations

from review.causalt5k.release_files import read_release


def write(base, name: str, data: bytes) -> None:
    path = base / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_a_json_file_that_is_not_utf8_is_invalid_named_by_line_and_column(tmp_path):
    write(tmp_path, "raw_submissions/groupA-submission-01.json", b'[{"scenario": "caf\xe9"}]')
    (only,), records = read_release(tmp_path)
    assert records == [] and only.status == "invalid"
    assert only.error.startswith("line 1, column 19: not UTF-8 (byte 0xE9 at offset 18)")


def test_values_the_database_cannot_store_and_deep_nesting_are_refused(tmp_path):
    write(tmp_path, "raw_submissions/groupA-submission-02.json", b'[{"scenario": "a\\u0000"}]')
    write(tmp_path, "raw_submissions/groupA-submission-03.json", b"[" * 100 + b"]" * 100)
    write(tmp_path, "raw_submissions/groupA-submission-04.json", b'[{"score": NaN}]')
    files, records = read_release(tmp_path)
    assert records == [] and [f.status for f in files] == ["invalid"] * 3
    nul, deep, nan = (f.error for f in files)
    assert nul.startswith("[0].scenario holds a NUL character")
    assert "nested more than 64 levels" in deep
    assert "NaN is not valid JSON" in nan


def test_a_byte_order_mark_is_dropped(tmp_path):
    write(
        tmp_path,
        "raw_submissions/groupA-submission-05.json",
        '\ufeff[{"scenario": "a"}, {"scenario": "b"}]'.encode(),
    )
    (only,), records = read_release(tmp_path)
    assert (only.status, only.records) == ("ok", 2)
    assert [record.data["scenario"] for record in records] == ["a", "b"]
