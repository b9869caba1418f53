"""The Django-free import core: schemas, streaming readers, the two-pass pipeline."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from imports.core import (
    FieldSpec,
    ImportFileError,
    ImportRejected,
    ImportReport,
    RecordReader,
    RowSchema,
    detect_format,
    generic_schema,
    iter_clean_batches,
    schema_for_kind,
    validate_stream,
)
from review.causalt5k.schema import CASES_SCHEMA, CAUSALT5K_SCHEMA

SCHEMA = RowSchema(
    name="test",
    external_id_field="id",
    fields=(
        FieldSpec("id", required=True),
        FieldSpec("text", required=True, max_length=50),
        FieldSpec("score", "float", min=0, max=10),
        FieldSpec("count", "int", min=1),
        FieldSpec("label", "choice", choices=("YES", "NO")),
        FieldSpec("flag", "bool"),
        FieldSpec("tags", "list[str]"),
        FieldSpec("meta", "json"),
    ),
)


def shared_dir() -> Path | None:
    candidates = [Path(__file__).resolve().parents[2] / ".." / "shared"]
    if os.environ.get("RUNGWISE_SHARED_DIR"):
        candidates.insert(0, Path(os.environ["RUNGWISE_SHARED_DIR"]))
    for candidate in candidates:
        if (candidate / "datasets").is_dir():
            return candidate.resolve()
    return None


def check(data: bytes, fmt: str | None = None, **options) -> object:
    options.setdefault("schema", SCHEMA)
    return validate_stream(io.BytesIO(data), fmt=fmt, **options)


def read_all(data: bytes, fmt: str, chunk_size: int = 1 << 16, **options) -> list:
    return list(RecordReader(io.BytesIO(data), fmt=fmt, chunk_size=chunk_size, **options))


def jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


# -- encoding ------------------------------------------------------------------------------


def test_latin1_csv_is_rejected_naming_line_byte_and_offset():
    data = "id,text\nr1,plain\nr2,café au lait\n".encode("latin-1")
    report = check(data, "csv")
    assert report.fatal and not report.ok
    [error] = report.errors
    assert error.code == "encoding"
    assert error.line == 3
    assert error.column == len("r2,caf") + 1
    offset = data.index(b"\xe9")
    assert f"byte 0xE9 at offset {offset}" in error.message
    assert error.message.startswith("line 3: not UTF-8")
    assert "save the file as UTF-8" in error.message
    assert "'é'" in error.message  # the Windows-1252 reading of the byte, as a hint
    assert report.rows_total == 1  # the row before the bad line was read
    assert report.sha256 == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("chunk_size", [5, 16, 1 << 16])
def test_bad_byte_in_json_is_located_across_read_chunks(chunk_size):
    text = '[\n  {"id": "a"},\n  {"id": "b", "text": "na\u00efve"}\n]\n'
    data = text.encode("utf-8").replace("ï".encode(), b"\xef")  # a lone Latin-1 byte
    with pytest.raises(ImportFileError) as raised:
        read_all(data, "json", chunk_size=chunk_size)
    error = raised.value.error
    assert (error.line, error.column) == (3, len('  {"id": "b", "text": "na') + 1)
    offset = data.index(b"\xef")
    assert f"offset {offset}" in error.message


def test_utf16_file_is_named_as_such():
    data = "id,text\nr1,x\n".encode("utf-16")
    report = check(data, "csv")
    assert report.fatal
    assert "UTF-16" in report.errors[0].message
    assert "save the file as UTF-8" in report.errors[0].message


def test_file_cut_inside_a_multibyte_character():
    data = '{"id": "a", "text": "caf\u00e9"}\n'.encode()[:-4]  # cut inside é
    with pytest.raises(ImportFileError) as raised:
        read_all(data, "jsonl")
    assert "ends in the middle of a character" in raised.value.error.message


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json"])
def test_utf8_bom_is_accepted_and_hashed(fmt):
    body = {
        "csv": b"id,text\nr1,hello\n",
        "jsonl": jsonl({"id": "r1", "text": "hello"}),
        "json": b'[{"id": "r1", "text": "hello"}]',
    }[fmt]
    data = b"\xef\xbb\xbf" + body
    report = check(data, fmt)
    assert report.ok, report.errors
    assert report.rows_ok == 1
    assert report.sha256 == hashlib.sha256(data).hexdigest()
    assert report.bytes_read == len(data)
    if fmt == "csv":
        assert report.columns == ["id", "text"]  # not "\ufeffid"


# -- JSON syntax ---------------------------------------------------------------------------

MALFORMED_JSON = [
    pytest.param(
        '[\n  {"id": "a"},\n  {"id": "b"},\n]\n', 3, 14, "trailing comma", id="trailing-comma-array"
    ),
    pytest.param(
        '[\n  {"id": "a",\n   "x": 1,\n  }\n]\n',
        3,
        10,
        "trailing comma",
        id="trailing-comma-object",
    ),
    pytest.param(
        '[{"id": "a", "text": "first line\nsecond"}]', 1, 33, "raw line break", id="control-char"
    ),
    pytest.param('[{"id": "a", "text": "tab\there"}]', 1, 26, "raw tab", id="raw-tab"),
    pytest.param(
        '[\n  {"id": "a"}\n  {"id": "b"}\n]\n',
        3,
        3,
        "comma is missing",
        id="missing-comma-elements",
    ),
    pytest.param('[{"id": "a"\n "x": 1}]', 2, 2, "comma is missing", id="missing-comma-members"),
    pytest.param(
        '[\n  {"id": "a"},\n  {"id": "b", "text": "cut', 3, 23, "cut off", id="truncated-string"
    ),
    pytest.param('[\n  {"id": "a"},\n  {"id": "b"}\n', 4, 1, "truncated", id="truncated-list"),
    pytest.param(
        '[\n  {"id": "a"},\n  {"id": "b", "x": ', 3, 20, "file ends", id="truncated-value"
    ),
    pytest.param(
        '[{"id": "a", "text": "costs \\$5"}]', 1, 29, 'invalid escape "\\$"', id="bad-escape"
    ),
    pytest.param(
        '[{"id": "a", "t": "\\u12G4"}]', 1, 20, "four hexadecimal", id="bad-unicode-escape"
    ),
    pytest.param("[{'id': 'a'}]", 1, 3, "single quotes", id="single-quotes"),
    pytest.param('[{id: "a"}]', 1, 3, 'write "id"', id="unquoted-name"),
    pytest.param('[{"id" "a"}]', 1, 8, "':' is missing", id="missing-colon"),
    pytest.param('[{"id": "a", "ok": True}]', 1, 20, "write true", id="python-true"),
    pytest.param('[{"id": "a", "score": NaN}]', 1, 23, "NaN is not valid JSON", id="nan"),
    pytest.param(
        '[{"id": "a", "text": "he said "hi" loudly"}]', 1, 32, 'escaped as \\"', id="inner-quote"
    ),
    pytest.param('{"id": "a"}\n{"id": "b"}\n', 2, 1, "JSON Lines", id="jsonl-as-json"),
    pytest.param(
        '{\n "id": "a"\n}\n\n{\n "id": "b"\n}\n', 5, 1, "several JSON values", id="concatenated"
    ),
    pytest.param('{"cases": [{"id": "a"}],}', 1, 24, "trailing comma", id="wrapper-trailing-comma"),
    pytest.param('"just text"', 1, 1, "single plain value", id="scalar"),
]


@pytest.mark.parametrize("chunk_size", [7, 1 << 16])
@pytest.mark.parametrize(("text", "line", "column", "phrase"), MALFORMED_JSON)
def test_malformed_json_is_located_and_explained(text, line, column, phrase, chunk_size):
    with pytest.raises(ImportFileError) as raised:
        read_all(text.encode(), "json", chunk_size=chunk_size)
    error = raised.value.error
    assert (error.line, error.column) == (line, column), error.message
    assert error.message.startswith(f"line {line}, column {column}: ")
    assert phrase in error.message
    assert error.found and "⟨here⟩" in error.found  # a snippet shows the spot


def test_error_inside_an_element_names_the_element():
    text = '[\n {"id": "a"},\n {"id": "b",\n  "t": "x\\qy"}\n]'
    with pytest.raises(ImportFileError) as raised:
        read_all(text.encode(), "json")
    error = raised.value.error
    assert error.index == 1
    assert "(in element 1, which starts on line 3)" in error.message
    assert error.where() == "element 1 (line 4, column 10)"


@pytest.mark.parametrize("data", [b"", b"  \n\t\n"])
def test_empty_json_file(data):
    report = check(data, "json")
    assert report.fatal
    assert report.errors[0].code == "empty_file"


def test_json_syntax_error_stops_the_report_but_keeps_counts_and_hash():
    text = '[{"id": "a", "text": "ok"}, {"id": "b", "text": "bad \\x"}]'
    data = text.encode()
    report = check(data, "json")
    assert report.fatal and report.rows_total == 1 and report.rows_ok == 1
    assert report.error_count == 1
    assert report.errors[0].code == "json_syntax"
    assert report.sha256 == hashlib.sha256(data).hexdigest()
    assert "nothing was imported" in report.summary()


def test_json_elements_carry_index_and_start_position():
    text = '[\n  {"id": "a", "text": "x"},\n  {"id": "b"},\n  7\n]'
    report = check(text.encode(), "json")
    assert report.rows_total == 3 and report.rows_ok == 1
    missing, not_object = report.errors
    assert (missing.index, missing.line, missing.column) == (1, 3, 3)
    assert missing.field == "text" and missing.code == "required"
    assert (not_object.index, not_object.line, not_object.column, not_object.code) == (
        2,
        4,
        3,
        "not_an_object",
    )


def test_wrapping_object_is_read_through_its_list():
    text = '{"metadata": {"n": 2}, "cases": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]}'
    reader = RecordReader(io.BytesIO(text.encode()), fmt="json")
    records = list(reader)
    assert [record.data["id"] for record in records] == ["a", "b"]
    assert reader.wrapper_key == "cases"
    assert reader.metadata == {"metadata": {"n": 2}}


def test_named_array_key_and_single_object():
    text = b'{"info": [1, 2], "questions": [{"id": "q1", "text": "x"}]}'
    records = read_all(text, "json", array_key="questions")
    assert [record.data["id"] for record in records] == ["q1"]
    single = read_all(b'{"id": "only", "text": "x"}', "json")
    assert len(single) == 1 and single[0].data["id"] == "only"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=4), max_size=8),
    indent=st.sampled_from([None, 1, 2]),
    chunk_size=st.integers(min_value=1, max_value=40),
)
def test_streamed_json_equals_json_load_at_any_chunk_size(rows, indent, chunk_size):
    text = json.dumps(rows, indent=indent, ensure_ascii=False)
    records = read_all(text.encode(), "json", chunk_size=chunk_size)
    assert [record.data for record in records] == rows
    lines = text.split("\n")
    for record in records:
        assert lines[record.line - 1][record.column - 1] == "{"


# -- JSON Lines ----------------------------------------------------------------------------


def test_jsonl_bad_line_is_a_row_error_and_reading_goes_on():
    data = b'{"id": "a", "text": "x"}\n\n{"id": "b", "text": "y",}\n{"id": "c", "text": "z"}\n'
    report = check(data, "jsonl")
    assert not report.fatal
    assert (report.rows_total, report.rows_ok, report.error_count) == (3, 2, 1)
    [error] = report.errors
    assert (error.line, error.column, error.code) == (3, 24, "json_syntax")
    assert "trailing comma" in error.message


def test_pretty_printed_json_given_as_jsonl_is_recognised():
    data = b'[\n  {"id": "a"}\n]\n'
    report = check(data, "jsonl")
    assert report.fatal
    assert "import it as JSON" in report.errors[0].message


# -- CSV -----------------------------------------------------------------------------------


def test_csv_missing_required_column_is_reported_once():
    data = b"id,score\n" + b"".join(f"r{n},1\n".encode() for n in range(50))
    report = check(data, "csv")
    assert report.fatal
    assert report.error_count == 1
    [error] = report.errors
    assert (error.line, error.field, error.code) == (1, "text", "missing_column")
    assert 'no column "text"' in error.message


def test_csv_cells_are_typed_from_text():
    data = (
        b"id,text,score,count,label,flag,tags,meta,source\n"
        b'r1,hello,7.5,3,yes,Yes,"a; b",{"k": [1]},extra-kept\n'
    )
    report = check(data, "csv")
    assert report.ok, report.errors
    [batch] = list(iter_clean_batches(io.BytesIO(data), fmt="csv", schema=SCHEMA))
    assert batch[0].data == {
        "id": "r1",
        "text": "hello",
        "score": 7.5,
        "count": 3,
        "label": "YES",
        "flag": True,
        "tags": ["a", "b"],
        "meta": {"k": [1]},
        "source": "extra-kept",
    }


def test_csv_row_with_wrong_cell_count_and_semicolons():
    data = b"id;text\nr1;fine\nr2;one;two\n"
    report = check(data, "csv")
    assert report.rows_total == 2 and report.rows_ok == 1
    [error] = report.errors
    assert (error.line, error.code) == (3, "csv_cells")
    assert "unquoted semicolon" in error.message


def test_csv_unclosed_quote_names_the_line_where_it_opens():
    data = b'id,text\nr1,fine\nr2,"never closed\nr3,more\n'
    report = check(data, "csv")
    assert report.fatal
    assert report.errors[0].line == 3
    assert "never closed" in report.errors[0].message


def test_csv_duplicate_header():
    report = check(b"id,text,Text\nr1,a,b\n", "csv")
    assert report.fatal and report.errors[0].code == "csv_header"
    assert "columns 2 and 3" in report.errors[0].message


def test_csv_unnamed_columns_are_refused_by_default_and_dropped_when_asked():
    data = b",id,text,\n0,r1,a,\n1,r2,b,x\n"
    with pytest.raises(ImportFileError) as caught:
        read_all(data, "csv")
    assert caught.value.error.code == "csv_header" and "column 1" in caught.value.error.message
    records = read_all(data, "csv", unnamed_columns="ignore")
    assert [(record.line, record.data) for record in records] == [
        (2, {"id": "r1", "text": "a"}),
        (3, {"id": "r2", "text": "b"}),
    ]
    with pytest.raises(ValueError):
        read_all(data, "csv", unnamed_columns="drop")


def test_csv_short_rows_are_errors_by_default_and_padded_when_asked():
    data = b"id,text,note\nr1,a\nr2,b,c,d\n"
    [short, long] = read_all(data, "csv")
    assert (short.line, short.error.code, short.error.found) == (2, "csv_cells", "2 cells")
    [padded, long] = read_all(data, "csv", pad_short_rows=True)
    assert padded.error is None and padded.data == {"id": "r1", "text": "a", "note": ""}
    assert (long.line, long.error.code, long.error.found) == (3, "csv_cells", "4 cells")


def test_csv_multiline_cell_keeps_physical_line_numbers():
    data = b'id,text\nr1,"two\nlines"\nr2,\n'
    report = check(data, "csv")
    [error] = report.errors
    assert (error.line, error.field, error.code) == (4, "text", "required")


# -- field checks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "field", "code", "phrase"),
    [
        ({"count": "many"}, "count", "wrong_type", "must be a whole number of at least 1"),
        ({"count": True}, "count", "wrong_type", "whole number"),
        ({"score": "high"}, "score", "wrong_type", "must be a number from 0 to 10"),
        ({"score": 12.5}, "score", "out_of_range", "found 12.5"),
        ({"count": 0}, "count", "out_of_range", "of at least 1; found 0"),
        ({"label": "MAYBE"}, "label", "unknown_choice", "one of YES, NO; found 'MAYBE'"),
        ({"flag": "sometimes"}, "flag", "wrong_type", "true or false"),
        ({"tags": "a;b"}, "tags", "wrong_type", "list of texts"),
        ({"text": "x" * 51}, "text", "too_long", "51 characters long; the limit is 50"),
        ({"text": "   "}, "text", "required", "missing or empty"),
        ({"meta": "[1, 2"}, "meta", "wrong_type", "looks like JSON"),
    ],
)
def test_field_errors_are_specific(row, field, code, phrase):
    base = {"id": "r1", "text": "hello"}
    data = jsonl({**base, **row})
    fmt = "jsonl"
    if field == "meta":  # JSON-in-text is only parsed from CSV cells
        data = b'id,text,meta\nr1,hello,"[1, 2"\n'
        fmt = "csv"
    report = check(data, fmt)
    [error] = report.errors
    assert (error.line, error.field, error.code) == (
        2 if fmt == "csv" else 1,
        field,
        code,
    )
    assert phrase in error.message
    assert error.expected


def test_choice_and_numbers_are_normalised():
    report = check(
        jsonl({"id": 7, "text": "x", "label": "no", "count": "4", "score": "3"}), "jsonl"
    )
    assert report.ok
    [[row]] = list(
        iter_clean_batches(
            io.BytesIO(jsonl({"id": 7, "text": "x", "label": "no", "count": "4", "score": "3"})),
            fmt="jsonl",
            schema=SCHEMA,
        )
    )
    assert row.external_id == "7"
    assert row.data["label"] == "NO" and row.data["count"] == 4 and row.data["score"] == 3.0


def test_extra_field_policies():
    row = {"id": "r1", "text": "x", "colour": "red"}
    keep = RowSchema.from_dict({**SCHEMA.to_dict(), "extra_fields": "keep"})
    reject = RowSchema.from_dict({**SCHEMA.to_dict(), "extra_fields": "reject"})
    ignore = RowSchema.from_dict({**SCHEMA.to_dict(), "extra_fields": "ignore"})
    assert keep.validate_row(row, 1)[0]["colour"] == "red"
    assert "colour" not in ignore.validate_row(row, 1)[0]
    clean, errors = reject.validate_row(row, 1)
    assert clean is None
    assert [(error.code, error.field) for error in errors] == [("unknown_field", "colour")]
    csv_report = check(b"id,text,colour\nr1,x,red\n", "csv", schema=reject)
    assert csv_report.fatal and csv_report.errors[0].code == "unknown_field"


def test_aliases_and_dotted_paths():
    schema = CAUSALT5K_SCHEMA
    raw = {
        "case_id": "T2-W7-MED-042",
        "tier": "l2",
        "scenario": "A scenario.",
        "ground_truth": "NO",
        "trap": {"type": "W7", "subtype": "confounding"},
        "difficulty": "medium",
        "is_ambiguous": "False",
    }
    clean, errors = schema.validate_row(raw, 1)
    assert errors == []
    assert clean["id"] == "T2-W7-MED-042"
    assert clean["pearl_level"] == "L2"
    assert clean["label"] == "NO"
    assert clean["trap_type"] == "W7"
    assert clean["difficulty"] == "Medium"
    assert clean["is_ambiguous"] is False
    assert clean["trap"] == {"type": "W7", "subtype": "confounding"}  # kept whole


def test_schema_round_trips_through_plain_data():
    assert (
        RowSchema.from_dict(json.loads(json.dumps(CAUSALT5K_SCHEMA.to_dict()))) == CAUSALT5K_SCHEMA
    )
    # A project's rows are held to the trap vocabulary; submissions are read as spelt.
    assert schema_for_kind("causalt5k") is CASES_SCHEMA
    assert schema_for_kind("no-such-kind").name == "generic"


def test_generic_schema_keeps_everything():
    clean, errors = generic_schema().validate_row({"id": " x1 ", "a": [1], "b": None}, 1)
    assert errors == []
    assert clean == {"external_id": "x1", "a": [1], "b": None}


# -- duplicates, policies, cap -------------------------------------------------------------


def test_duplicate_id_in_file_names_both_lines():
    data = jsonl(
        {"id": "a", "text": "1"},
        {"id": "b", "text": "2"},
        {"id": "a", "text": "3"},
    )
    for policy in ("reject", "update"):
        report = check(data, "jsonl", duplicate_policy=policy)
        [error] = report.errors
        assert (error.line, error.code) == (3, "duplicate_in_file")
        assert "line 1 and again on line 3" in error.message
        assert report.rows_ok == 2


def test_existing_ids_with_reject_policy():
    data = jsonl({"id": "a", "text": "1"}, {"id": "b", "text": "2"})
    report = check(data, "jsonl", existing_ids={"b"}, duplicate_policy="reject")
    [error] = report.errors
    assert (error.line, error.code, error.field) == (2, "duplicate_existing", "id")
    assert 'duplicate policy "update"' in error.message
    assert (report.rows_ok, report.rows_create, report.rows_update) == (1, 1, 0)


def test_existing_ids_with_update_policy_and_batched_lookup():
    rows = [{"id": f"r{n}", "text": "x"} for n in range(25)]
    calls: list[list[str]] = []

    def lookup(ids):
        calls.append(list(ids))
        return {identifier for identifier in ids if identifier in {"r3", "r20"}}

    data = jsonl(*rows)
    report = check(
        data, "jsonl", existing_ids=lookup, duplicate_policy="update", lookup_batch_size=10
    )
    assert report.ok
    assert (report.rows_ok, report.rows_create, report.rows_update) == (25, 23, 2)
    assert [len(call) for call in calls] == [10, 10, 5]
    batches = list(
        iter_clean_batches(
            io.BytesIO(data),
            fmt="jsonl",
            schema=SCHEMA,
            existing_ids=lookup,
            duplicate_policy="update",
            batch_size=10,
            expected_sha256=report.sha256,
        )
    )
    assert [len(batch) for batch in batches] == [10, 10, 5]
    updates = [row.external_id for batch in batches for row in batch if row.action == "update"]
    assert updates == ["r3", "r20"]


def test_error_cap_keeps_first_errors_and_true_count():
    rows = [{"id": f"r{n}", "text": "x", "score": 99} for n in range(250)]
    report = check(jsonl(*rows), "jsonl", error_cap=100)
    assert report.error_count == 250
    assert len(report.errors) == 100
    assert [error.line for error in report.errors] == list(range(1, 101))
    assert report.errors_truncated
    stored = json.loads(json.dumps(report.to_dict()))
    assert stored["error_count"] == 250
    assert ImportReport.from_dict(stored).to_dict() == report.to_dict()


def test_second_pass_refuses_a_changed_file():
    data = jsonl({"id": "a", "text": "x"})
    report = check(data, "jsonl")
    changed = jsonl({"id": "a", "text": "y"})
    with pytest.raises(ImportRejected, match="changed since it was validated"):
        list(
            iter_clean_batches(
                io.BytesIO(changed), fmt="jsonl", schema=SCHEMA, expected_sha256=report.sha256
            )
        )
    bad = jsonl({"id": "a", "text": "x"}, {"id": "a", "text": "x"})
    with pytest.raises(ImportRejected) as raised:
        list(iter_clean_batches(io.BytesIO(bad), fmt="jsonl", schema=SCHEMA))
    assert raised.value.report.errors[0].code == "duplicate_in_file"


def test_progress_is_reported_in_rows():
    seen: list[int] = []
    rows = [{"id": f"r{n}", "text": "x"} for n in range(2500)]
    check(jsonl(*rows), "jsonl", progress=seen.append, lookup_batch_size=1000)
    assert seen == [1000, 2000, 2500]


@pytest.mark.parametrize(
    ("filename", "head", "expected"),
    [
        ("cases.CSV", b"[", "csv"),
        ("cases.ndjson", b"", "jsonl"),
        ("cases.json", b"id,text", "json"),
        (None, b'\xef\xbb\xbf  [{"id": 1}]', "json"),
        (None, b'{"id": 1}\n{"id": 2}\n', "jsonl"),
        (None, b'{\n "cases": []\n}', "json"),
        (None, b"id,text\n", "csv"),
        # A first line nested too deep to decode (a RecursionError here was a 500): JSON, whose
        # reader then names where the nesting passes the limit.
        (None, b'{"id": ' + b"[" * 60_000 + b"\n", "json"),
    ],
)
def test_format_detection(filename, head, expected):
    assert detect_format(filename, head) == expected


def test_text_file_object_is_refused():
    with pytest.raises(TypeError, match="binary"):
        validate_stream(io.StringIO("id\n"), fmt="csv", schema=SCHEMA)


# -- memory --------------------------------------------------------------------------------


def _peak_reading(path: Path, fmt: str) -> int:
    tracemalloc.start()
    try:
        with open(path, "rb") as handle:
            for _record in RecordReader(handle, fmt=fmt):
                pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_readers_memory_does_not_grow_with_rows(tmp_path, fmt):
    def write(path: Path, count: int) -> None:
        with open(path, "w", encoding="utf-8") as handle:
            if fmt == "csv":
                handle.write("id,text\n")
                for n in range(count):
                    handle.write(f"r{n},some text for row {n}\n")
            elif fmt == "jsonl":
                for n in range(count):
                    handle.write(json.dumps({"id": f"r{n}", "text": f"row {n}"}) + "\n")
            else:
                handle.write("[\n")
                for n in range(count):
                    handle.write(
                        ("," if n else "") + json.dumps({"id": f"r{n}", "text": f"row {n}"}) + "\n"
                    )
                handle.write("]\n")

    small, large = tmp_path / "small", tmp_path / "large"
    write(small, 5_000)
    write(large, 50_000)
    peak_small = _peak_reading(small, fmt)
    peak_large = _peak_reading(large, fmt)
    assert large.stat().st_size > 9 * small.stat().st_size
    assert peak_large < 1.5 * peak_small + 64 * 1024, (peak_small, peak_large)


# -- real data -----------------------------------------------------------------------------

RAW_SUBMISSIONS_NOT_JSON = {
    # file: (line, column, words the message must contain)
    "groupD-submission-08.json": (455, 44, ['invalid escape "\\$"', "element 22"]),
    "groupD-submission-11.json": (26, 1, ["second JSON value", "several JSON values"]),
    "groupJ-submission-24.jsonl": (2, 1, ["second JSON value", "JSON Lines"]),
}


@pytest.mark.shared_data
def test_every_raw_causalt5k_submission():
    shared = shared_dir()
    if shared is None:
        pytest.skip("shared datasets not present")
    folder = shared / "datasets" / "CausalT5k" / "raw_submissions"
    if not folder.is_dir():
        pytest.skip("CausalT5k raw submissions not present")
    failing = {}
    for path in sorted(folder.iterdir()):
        data = path.read_bytes()
        # Read as a JSON document whatever the extension: three files are not one.
        try:
            records = list(RecordReader(io.BytesIO(data), fmt="json"))
        except ImportFileError as problem:
            failing[path.name] = problem.error
            continue
        expected = json.loads(data)
        if isinstance(expected, dict):
            expected = next(
                value for key, value in expected.items() if key in ("cases", "questions")
            )
        assert [record.data for record in records] == expected, path.name
        lines = data.decode("utf-8").split("\n")
        for record in records:
            assert lines[record.line - 1][record.column - 1] == "{", (path.name, record.index)
    assert set(failing) == set(RAW_SUBMISSIONS_NOT_JSON)
    for name, (line, column, words) in RAW_SUBMISSIONS_NOT_JSON.items():
        error = failing[name]
        assert (error.line, error.column) == (line, column), name
        assert error.message.startswith(f"line {line}, column {column}: "), name
        for word in words:
            assert word in error.message, (name, word)
    # With the format taken from the extension, the JSON Lines file is fine.
    jsonl_path = folder / "groupJ-submission-24.jsonl"
    with open(jsonl_path, "rb") as handle:
        report = validate_stream(
            handle, fmt=None, filename=jsonl_path.name, schema=CAUSALT5K_SCHEMA
        )
    assert report.fmt == "jsonl"
    assert report.ok and report.rows_ok == 230
    assert report.sha256 == hashlib.sha256(jsonl_path.read_bytes()).hexdigest()


def nested_value(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "where", "code"),
    [
        ({"notes": ["ok", "x\udfffy"]}, "payload.notes[1]", "invalid_text"),
        ({"a b": [1, {"c": float("inf")}]}, 'payload["a b"][1].c', "invalid_number"),
        ({"n\x00": 1}, "payload", "invalid_text"),  # a bad key: named at its object
        ([["ok"], ["a\x00", "\ud800"]], "payload[1][0]", "invalid_text"),  # the first, in order
        ({"deep": nested_value(70)}, "payload.deep" + "[0]" * 63, "too_deep"),
    ],
)
def test_a_value_the_database_cannot_store_is_named_by_its_path(value, where, code):
    from annotation.values import value_problem_at

    problem = value_problem_at(value)
    assert (problem.where("payload"), problem.code) == (where, code)
    assert value_problem_at({"fine": [1, 2.5, "é", None, {"x": True}]}) is None
