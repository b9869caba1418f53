"""The import core's reading rules added for the plug-ins' files: lone-CR line ends, nested
values where a flat one is expected, checks a schema declares, rows without an id column."""

from __future__ import annotations

import io

import pytest

from imports.core import FieldSpec, RecordReader, RowSchema, validate_stream
from imports.core.pipeline import iter_clean_batches
from imports.core.readers import ImportFileError, read_json_document
from imports.core.schema import content_id

ROWS = RowSchema(
    name="rows",
    external_id_field="id",
    fields=(FieldSpec("id"), FieldSpec("text", required=True), FieldSpec("n", "int")),
)


def records(data: bytes, fmt: str | None = None, chunk_size: int = 1 << 16) -> list:
    reader = RecordReader(io.BytesIO(data), fmt=fmt, chunk_size=chunk_size)
    return [(record.line, record.data, record.error) for record in reader]


# -- line ends ----------------------------------------------------------------------------


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_csv_reads_every_line_end_alike(end):
    data = end.join([b"id,text", b"a,one", b'b,"two', b'lines"', b"c,three"]) + end
    got = records(data, fmt="csv")
    assert [(line, row) for line, row, _ in got] == [
        (2, {"id": "a", "text": "one"}),
        (3, {"id": "b", "text": "two" + end.decode() + "lines"}),
        (5, {"id": "c", "text": "three"}),
    ]


def test_a_lone_cr_file_reports_the_line_of_a_bad_row():
    report = validate_stream(io.BytesIO(b"id,text\ra,one\rb\rc,three\r"), fmt="csv", schema=ROWS)
    assert [(error.line, error.code) for error in report.errors] == [(3, "csv_cells")]


@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 16])
def test_json_lines_with_lone_cr_keep_their_line_numbers(chunk):
    data = b'{"id": "a", "text": "x"}\r\r{"id": "b", "text": "y"}\r{"id": "c", "text": }\r'
    got = records(data, fmt="jsonl", chunk_size=chunk)
    assert [line for line, _, _ in got] == [1, 3, 4]
    assert got[2][2].message.startswith("line 4, column 21:")


def test_a_crlf_split_between_reads_is_one_line_end():
    class Trickle(io.RawIOBase):
        """Hands out one byte per read, so a CRLF always straddles two reads."""

        def __init__(self, data: bytes) -> None:
            self.data = data

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            piece, self.data = self.data[:1], self.data[1:]
            return piece

    reader = RecordReader(Trickle(b"id,text\r\na,one\r\nb,two\r\n"), fmt="csv")
    assert [record.line for record in reader] == [2, 3]


def test_an_encoding_error_after_lone_crs_names_its_line():
    with pytest.raises(ImportFileError) as refused:
        records(b"id,text\ra,one\rb,t\xe9\r", fmt="csv")
    assert refused.value.error.line == 3
    assert refused.value.error.column == 4


@pytest.mark.parametrize("chunk", [4, 1 << 16])
def test_a_json_array_with_lone_cr_names_the_right_line(chunk):
    data = b'[\r{"id": "a", "text": "x"},\r{"id": "b" "text": "y"}\r]'
    with pytest.raises(ImportFileError) as refused:
        records(data, fmt="json", chunk_size=chunk)
    assert refused.value.error.message.startswith("line 3, column 12:")


def test_one_json_document_with_lone_cr_names_the_right_line():
    with pytest.raises(ImportFileError) as refused:
        read_json_document('{\r"a": 1,\r"b" 2\r}')
    assert refused.value.error.message.startswith("line 3, column 5:")


# -- nested values -------------------------------------------------------------------------


def test_an_object_where_text_is_expected_names_record_and_field():
    data = b'{"id": "a", "text": "fine"}\n{"id": "b", "text": {"en": "nested"}}\n'
    report = validate_stream(io.BytesIO(data), fmt="jsonl", schema=ROWS)
    (error,) = report.errors
    assert (error.line, error.field, error.code) == (2, "text", "nested_value")
    assert str(error).startswith("line 2: Field \"text\" holds an object ({'en': 'nested'})")
    assert "flat value" in error.message


def test_a_list_inside_a_list_of_texts_is_named():
    schema = RowSchema(
        name="t", external_id_field="id", fields=(FieldSpec("id"), FieldSpec("tags", "list[str]"))
    )
    report = validate_stream(
        io.BytesIO(b'[{"id": "a", "tags": ["x", ["y"]]}]'), fmt="json", schema=schema
    )
    (error,) = report.errors
    assert (error.index, error.field, error.code) == (0, "tags", "nested_value")
    assert "a list inside" in error.message


def test_a_json_field_allows_nesting():
    schema = RowSchema(
        name="t", external_id_field="id", fields=(FieldSpec("id"), FieldSpec("graph", "json"))
    )
    report = validate_stream(
        io.BytesIO(b'{"id": "a", "graph": {"edges": [["x", "y"]]}}\n'), fmt="jsonl", schema=schema
    )
    assert report.ok


# -- declared checks ---------------------------------------------------------------------------


def even(value):
    return None if value % 2 == 0 else f"{value} is odd; give an even number"


def ordered(clean):
    if clean.get("low", 0) > clean.get("high", 0):
        return [("low", "low is above high")]
    return None


CHECKED = RowSchema(
    name="checked",
    external_id_field="id",
    fields=(FieldSpec("id"), FieldSpec("low", "int", check=even), FieldSpec("high", "int")),
    record_checks=(ordered,),
)


def test_a_field_check_refuses_a_value_naming_line_and_field():
    data = b"id,low,high\na,2,4\nb,3,4\n"
    report = validate_stream(io.BytesIO(data), fmt="csv", schema=CHECKED)
    (error,) = report.errors
    assert (error.line, error.field, error.code) == (3, "low", "invalid_value")
    assert str(error) == "line 3: 3 is odd; give an even number"


def test_a_record_check_runs_only_on_records_whose_fields_passed():
    data = b"id,low,high\na,6,4\nb,x,4\n"
    report = validate_stream(io.BytesIO(data), fmt="csv", schema=CHECKED)
    assert [(error.line, error.field, error.code) for error in report.errors] == [
        (2, "low", "invalid_value"),
        (3, "low", "wrong_type"),
    ]


def test_with_checks_binds_more_checks_and_leaves_the_schema_alone():
    def not_seven(value):
        return "seven is refused" if value == 7 else None

    def whole_row(clean):
        return "this row is refused" if clean["id"] == "z" else None

    bound = CHECKED.with_checks(whole_row, field_checks={"high": not_seven})
    report = validate_stream(io.BytesIO(b"id,low,high\nz,2,4\ny,2,7\n"), fmt="csv", schema=bound)
    assert [(error.line, error.field, error.message) for error in report.errors] == [
        (2, None, "this row is refused"),
        (3, "high", "seven is refused"),
    ]
    assert validate_stream(io.BytesIO(b"id,low,high\nz,2,4\ny,2,7\n"), fmt="csv", schema=CHECKED).ok
    with pytest.raises(ValueError, match="no fields named"):
        CHECKED.with_checks(field_checks={"nope": not_seven})


def test_checks_are_not_data():
    data = CHECKED.to_dict()
    assert "check" not in data["fields"][1]
    assert RowSchema.from_dict(data).fields[1].check is None


# -- rows without an id ------------------------------------------------------------------------


def test_a_schema_needs_exactly_one_way_to_id_rows():
    with pytest.raises(ValueError, match="either external_id_field or derived_id"):
        RowSchema(name="none", fields=(FieldSpec("text"),))
    with pytest.raises(ValueError, match="either external_id_field or derived_id"):
        RowSchema(name="both", fields=(FieldSpec("id"),), external_id_field="id", derived_id="row")
    with pytest.raises(ValueError, match="derived_id must be"):
        RowSchema(name="odd", fields=(FieldSpec("text"),), derived_id="hash")  # type: ignore[arg-type]


def test_row_numbers_are_ids_when_the_schema_says_so():
    schema = RowSchema(name="rows", fields=(FieldSpec("text", required=True),), derived_id="row")
    data = b"text\nfirst\n\nsecond\n"
    report = validate_stream(io.BytesIO(data), fmt="csv", schema=schema)
    assert report.ok and report.rows_ok == 2
    (batch,) = list(iter_clean_batches(io.BytesIO(data), fmt="csv", schema=schema))
    assert [(row.external_id, row.data) for row in batch] == [
        ("1", {"text": "first"}),
        ("2", {"text": "second"}),
    ]
    assert RowSchema.from_dict(schema.to_dict()).derived_id == "row"


def test_content_ids_make_a_repeated_row_a_duplicate():
    schema = RowSchema(
        name="rows",
        fields=(FieldSpec("text", required=True), FieldSpec("n", "int")),
        derived_id="content",
    )
    data = b"text,n\nsame,1\nother,1\nsame,1\n"
    report = validate_stream(io.BytesIO(data), fmt="csv", schema=schema)
    (error,) = report.errors
    assert (error.line, error.code) == (4, "duplicate_in_file")
    assert error.message.startswith("This row repeats line 2 exactly")
    assert schema.row_id({"text": "same", "n": 1}, 9) == content_id({"n": 1, "text": "same"})
    assert len(content_id({"text": "same"})) == 16


def test_an_int_too_large_for_a_float_is_a_wrong_value_not_a_crash():
    schema = RowSchema(name="f", derived_id="row", fields=(FieldSpec("x", "float"),))
    clean, [error] = schema.validate_row({"x": 10**400}, 3)
    assert clean is None and (error.line, error.field, error.code) == (3, "x", "wrong_type")
