"""Release files: writers, manifest, deterministic zip, diff, datasheet, constant memory."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tracemalloc
import zipfile

import pytest

from imports.core import FieldSpec, RowSchema, iter_clean_batches, validate_stream
from releases import (
    FileEntry,
    Manifest,
    build_zip,
    columns_from_rows,
    flatten_row,
    iter_jsonl,
    release_diff,
    render_datasheet,
    write_csv,
    write_jsonl,
)
from releases.writers import csv_timestamp, write_blocks

ROWS = [
    {
        "external_id": "T2-W7-MED-042",
        "label": "NO",
        "score": 9.5,
        "kept": True,
        "trap": {"type": "W7", "name": "confounding"},
        "variables": {"X": "coffee", "Z": ["age", "income"]},
        "tags": ["medicine", "l2"],
        "note": 'has "quotes", commas,\nand a line break — ünïcödé',
        "reviewers": 3,
    },
    {
        "external_id": "T1-S1-HIS-001",
        "label": "YES",
        "score": 10.0,
        "kept": False,
        "trap": {"type": "S1", "name": "RCT"},
        "variables": {"X": "treaty", "Z": []},
        "tags": [],
        "note": None,
        "reviewers": 2,
    },
]
COLUMNS = [
    "external_id",
    "label",
    "score",
    "kept",
    "trap.type",
    "trap.name",
    "variables",
    "tags",
    "note",
    "reviewers",
]
TYPED_SCHEMA = RowSchema(
    name="release-check",
    external_id_field="external_id",
    extra_fields="reject",
    fields=(
        FieldSpec("external_id", required=True),
        FieldSpec("label", "choice", choices=("YES", "NO")),
        FieldSpec("score", "float"),
        FieldSpec("kept", "bool"),
        FieldSpec("trap.type"),
        FieldSpec("trap.name"),
        FieldSpec("variables", "json"),
        FieldSpec("tags", "list[str]"),
        FieldSpec("note"),
        FieldSpec("reviewers", "int"),
    ),
)


def test_jsonl_round_trip_and_entry(tmp_path):
    entry = write_jsonl(iter(ROWS), tmp_path / "items.jsonl")
    assert list(iter_jsonl(tmp_path / "items.jsonl")) == ROWS
    data = (tmp_path / "items.jsonl").read_bytes()
    assert entry.name == "items.jsonl"
    assert entry.rows == 2
    assert entry.bytes == len(data)
    assert entry.sha256 == hashlib.sha256(data).hexdigest()
    assert data.count(b"\n") == 2  # the line break inside "note" is escaped
    assert "ünïcödé".encode() in data  # UTF-8, not \\u escapes


def test_jsonl_reads_back_through_the_importer(tmp_path):
    write_jsonl(ROWS, tmp_path / "items.jsonl")
    with open(tmp_path / "items.jsonl", "rb") as handle:
        batches = list(
            iter_clean_batches(handle, fmt=None, filename="items.jsonl", schema=_generic_keep_all())
        )
    assert [row.data for row in batches[0]] == ROWS


def _generic_keep_all() -> RowSchema:
    return RowSchema(
        name="all",
        external_id_field="external_id",
        fields=(FieldSpec("external_id", required=True),),
    )


def test_csv_flattens_declared_dotted_columns_and_json_encodes_the_rest(tmp_path):
    entry = write_csv(ROWS, tmp_path / "items.csv", columns=COLUMNS)
    with open(tmp_path / "items.csv", newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    assert table[0] == COLUMNS
    first = dict(zip(COLUMNS, table[1], strict=True))
    assert first["trap.type"] == "W7"
    assert first["kept"] == "true"
    assert json.loads(first["variables"]) == {"X": "coffee", "Z": ["age", "income"]}
    assert first["note"] == ROWS[0]["note"]
    second = dict(zip(COLUMNS, table[2], strict=True))
    assert second["note"] == ""
    assert second["score"] == "10.0"
    data = (tmp_path / "items.csv").read_bytes()
    assert entry.sha256 == hashlib.sha256(data).hexdigest() and entry.rows == 2


def test_csv_round_trips_through_the_importer_with_types(tmp_path):
    write_csv(ROWS, tmp_path / "items.csv", columns=COLUMNS)
    with open(tmp_path / "items.csv", "rb") as handle:
        report = validate_stream(handle, fmt="csv", schema=TYPED_SCHEMA)
    assert report.ok, report.errors
    with open(tmp_path / "items.csv", "rb") as handle:
        [batch] = list(iter_clean_batches(handle, fmt="csv", schema=TYPED_SCHEMA))
    for written, row in zip(ROWS, batch, strict=True):
        expected = {key: value for key, value in written.items() if key != "trap"}
        expected["trap.type"] = written["trap"]["type"]
        expected["trap.name"] = written["trap"]["name"]
        if expected["note"] is None:
            del expected["note"]  # an empty cell is "missing"
        assert row.data == expected


def test_csv_refuses_data_no_column_covers():
    with pytest.raises(ValueError, match=r"\['trap.name'\]"):
        flatten_row(ROWS[0], [c for c in COLUMNS if c != "trap.name"])
    with pytest.raises(ValueError, match=r"\['note'\]"):
        flatten_row(ROWS[0], [c for c in COLUMNS if c != "note"])
    cells = flatten_row(ROWS[0], ["external_id"], extra="ignore")
    assert cells == ["T2-W7-MED-042"]


def test_columns_from_rows_flattens_only_named_objects():
    columns = columns_from_rows(ROWS, flatten=["trap"])
    assert columns == COLUMNS


def test_manifest_hashes_match_hashlib_and_detect_tampering(tmp_path):
    manifest = Manifest()
    manifest.add(write_jsonl(ROWS, tmp_path / "items.jsonl"))
    manifest.add(write_csv(ROWS, tmp_path / "items.csv", columns=COLUMNS))
    (tmp_path / "README.md").write_text("# card\n", encoding="utf-8")
    manifest.add_file(tmp_path / "README.md")
    for name, entry in manifest.entries.items():
        data = (tmp_path / name).read_bytes()
        assert entry.sha256 == hashlib.sha256(data).hexdigest()
        assert entry.bytes == len(data)
    assert manifest.verify(tmp_path) == []
    restored = Manifest.from_dict(json.loads(manifest.to_json()))
    assert restored.entries == manifest.entries
    assert manifest.sha256sums().splitlines()[0].endswith("  README.md")
    (tmp_path / "items.csv").write_bytes(b"tampered")
    (tmp_path / "README.md").unlink()
    assert manifest.verify(tmp_path) == ["README.md", "items.csv"]
    with pytest.raises(ValueError):
        manifest.add_file(tmp_path / "items.jsonl")


def test_zip_bytes_depend_only_on_names_and_contents(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, stamp in ((first, 1_000_000_000), (second, 1_700_000_000)):
        folder.mkdir()
        write_jsonl(ROWS, folder / "items.jsonl")
        write_csv(ROWS, folder / "items.csv", columns=COLUMNS)
        (folder / "README.md").write_text("# card\n", encoding="utf-8")
        for path in folder.iterdir():
            os.utime(path, (stamp, stamp))
            path.chmod(0o600 if stamp == 1_000_000_000 else 0o664)
    paths_first = [first / "README.md", first / "items.jsonl", first / "items.csv"]
    paths_second = [second / "items.csv", second / "README.md", second / "items.jsonl"]
    entry_first = build_zip(paths_first, tmp_path / "first.zip")
    entry_second = build_zip(paths_second, tmp_path / "second.zip")
    bytes_first = (tmp_path / "first.zip").read_bytes()
    assert bytes_first == (tmp_path / "second.zip").read_bytes()
    assert entry_first.sha256 == entry_second.sha256 == hashlib.sha256(bytes_first).hexdigest()
    with zipfile.ZipFile(tmp_path / "first.zip") as archive:
        assert archive.testzip() is None
        assert archive.namelist() == ["README.md", "items.csv", "items.jsonl"]
        assert archive.read("items.jsonl") == (first / "items.jsonl").read_bytes()
    (second / "README.md").write_text("# card, edited\n", encoding="utf-8")
    build_zip(paths_second, tmp_path / "third.zip")
    assert (tmp_path / "third.zip").read_bytes() != bytes_first


def test_zip_refuses_two_files_with_one_name(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "items.jsonl").write_text("{}\n")
    with pytest.raises(ValueError, match="items.jsonl"):
        build_zip(
            [tmp_path / "a" / "items.jsonl", tmp_path / "b" / "items.jsonl"], tmp_path / "x.zip"
        )
    build_zip(
        {
            "a/items.jsonl": tmp_path / "a" / "items.jsonl",
            "b/items.jsonl": tmp_path / "b" / "items.jsonl",
        },
        tmp_path / "x.zip",
    )
    with zipfile.ZipFile(tmp_path / "x.zip") as archive:
        assert archive.namelist() == ["a/items.jsonl", "b/items.jsonl"]


def test_release_diff():
    old = [
        {"external_id": "a", "label": "YES", "meta": {"x": 1, "y": 2}},
        {"external_id": "b", "label": "NO"},
        {"external_id": "c", "label": "NO"},
    ]
    new = [
        {"label": "YES", "meta": {"y": 2, "x": 1}, "external_id": "a"},  # reordered keys only
        {"external_id": "c", "label": "YES"},
        {"external_id": "d", "label": "NO"},
    ]
    diff = release_diff(iter(old), iter(new))
    assert diff.added == ["d"]
    assert diff.removed == ["b"]
    assert diff.changed == ["c"]
    assert diff.unchanged == 1
    assert release_diff([{"id": 1, "v": 1}], [{"id": 1, "v": 1.0}], key="id").changed == ["1"]
    with pytest.raises(ValueError, match="repeats"):
        release_diff(old + old[:1], new)
    with pytest.raises(ValueError, match="no 'external_id'"):
        release_diff(old, [{"label": "YES"}])


def _generated_rows(count: int):
    for n in range(count):
        yield {
            "external_id": f"item-{n:07d}",
            "label": "YES" if n % 3 else "NO",
            "score": n % 11,
            "trap": {"type": f"W{n % 10 + 1}"},
            "text": f"scenario {n} " + "x" * 40,
        }


def _peak(function) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_writers_memory_does_not_grow_with_rows(tmp_path):
    columns = ["external_id", "label", "score", "trap.type", "text"]
    peaks = {}
    for count in (20_000, 200_000):

        def write_both(count=count):
            write_jsonl(_generated_rows(count), tmp_path / f"{count}.jsonl")
            write_csv(_generated_rows(count), tmp_path / f"{count}.csv", columns=columns)

        peaks[count] = _peak(write_both)
    assert (tmp_path / "200000.jsonl").stat().st_size > 9 * (
        tmp_path / "20000.jsonl"
    ).stat().st_size
    assert peaks[200_000] < 1.25 * peaks[20_000] + 64 * 1024, peaks
    assert peaks[200_000] < 8 * 1024 * 1024, peaks


def test_write_blocks_hashes_the_header_and_the_blocks(tmp_path):
    blocks = [b"one\n", memoryview(b"two\n"), bytearray(b"three\n")]
    entry = write_blocks(blocks, tmp_path / "f.txt", header=b"head\r\n", rows=3)
    data = (tmp_path / "f.txt").read_bytes()
    assert data == b"head\r\none\ntwo\nthree\n"
    assert entry == FileEntry("f.txt", hashlib.sha256(data).hexdigest(), len(data), 3)


def test_zip_memory_does_not_grow_with_file_size(tmp_path):
    small, large = tmp_path / "small.bin", tmp_path / "large.bin"
    small.write_bytes(os.urandom(1 << 20))
    large.write_bytes(os.urandom(1 << 20) * 16)
    peak_small = _peak(lambda: build_zip([small], tmp_path / "small.zip"))
    peak_large = _peak(lambda: build_zip([large], tmp_path / "large.zip"))
    assert peak_large < 1.25 * peak_small + 256 * 1024, (peak_small, peak_large)


# -- datasheet -------------------------------------------------------------------------------

DATASHEET = {
    "name": "CausalT5k-mini",
    "description": "Adversarially reviewed causal cases.",
    "version": "1.2.0",
    "created_at": "2026-03-01T12:00:00+00:00",
    "license": "CC-BY-4.0",
    "citation": "@inproceedings{causalt5k,\n  title={CausalT5k},\n  year={2026}\n}",
    "items": 5147,
    "annotators_by_role": {"reviewer": 40, "annotator": 120},
    "stages": [
        {
            "name": "Adversarial review",
            "task": "break",
            "overlap": 2,
            "items_in": 6151,
            "items_out": 5147,
            "agreement": {
                "metric": "cohen_kappa",
                "value": 0.87,
                "ci_low": 0.85,
                "ci_high": 0.89,
                "n_items": 6151,
                "n_annotators": 40,
            },
        },
        {"name": "Dedup", "task": "filter", "items_in": 7609, "items_out": 6151, "agreement": None},
    ],
    "fields": [
        {"name": "scenario", "type": "text", "required": True, "description": "The case | text."}
    ],
    "files": [
        {"name": "items.jsonl", "rows": 5147, "bytes": 123456, "sha256": "ab" * 32},
    ],
}


def test_datasheet_renders_every_section_from_plain_data():
    text = render_datasheet(DATASHEET)
    assert text.startswith("# CausalT5k-mini — release 1.2.0\n")
    for heading in (
        "## Annotators",
        "## Pipeline: items in and out of every stage",
        "## Agreement per stage",
        "## Fields",
        "## Files",
        "## Citation",
    ):
        assert heading in text
    assert "| annotator | 120 |" in text and "| **total** | 160 |" in text
    assert "| Adversarial review | break | 2 | 6,151 | 5,147 | 83.7 % |" in text
    assert "| Adversarial review | Cohen's κ | 0.870 | [0.850, 0.890] (95 %) | 6,151 | 40 |" in text
    assert "| Dedup | Not recorded. |" in text
    assert "The case \\| text." in text  # a pipe cannot break the table
    assert "```bibtex\n@inproceedings{causalt5k," in text
    assert "ab" * 32 in text
    assert "| License | CC-BY-4.0 |" in text


def test_datasheet_states_when_agreement_was_computed():
    """Figures of one build: the moment once, above the table; figures of other moments (or
    scopes): a Computed column per stage."""
    at = "2026-03-01T12:00:00+00:00"
    built = {"metric": "fleiss_kappa", "value": 0.5, "computed_at": at, "scope": "released items"}
    one = render_datasheet(
        {"name": "x", "version": "1", "stages": [{"name": "A", "agreement": built}]}
    )
    assert f"Computed at {at} (UTC), when this release was built" in one
    assert "| Computed |" not in one
    other = {**built, "computed_at": "2026-02-01T08:00:00+00:00", "scope": ""}
    two = render_datasheet(
        {"name": "x", "version": "1", "stages": [{"name": "A", "agreement": built},
                                                 {"name": "B", "agreement": other}]}
    )  # fmt: skip
    assert "| Computed |" in two and "| 2026-02-01T08:00:00+00:00 |" in two


def test_datasheet_says_not_recorded_for_missing_sections():
    text = render_datasheet({"name": "x", "version": "0.1"})
    assert text.count("Not recorded.") == 7


@pytest.mark.parametrize(
    "bad",
    [
        {"annotators_by_role": {"annotator": ["ann@example.org"]}},
        {"annotators_by_role": {"annotator": "alice, bob"}},
        {"annotators": ["alice"]},
    ],
)
def test_datasheet_never_takes_identities(bad):
    with pytest.raises(ValueError, match="never"):
        render_datasheet({"name": "x", "version": "1", **bad})


def test_datasheet_is_a_pure_function_of_its_input():
    assert render_datasheet(DATASHEET) == render_datasheet(json.loads(json.dumps(DATASHEET)))
    io.StringIO(render_datasheet(DATASHEET))  # plain text, nothing else


def test_csv_timestamps_are_iso_8601_in_utc_with_the_offset(tmp_path):
    """The one spelling of a time in every CSV: aware times converted to UTC, naive ones taken
    as UTC (the database's), never a bare local time a spreadsheet would misread."""
    from datetime import UTC, datetime, timedelta, timezone

    paris = timezone(timedelta(hours=1))
    assert csv_timestamp(datetime(2026, 3, 1, 13, 30, tzinfo=paris)) == "2026-03-01T12:30:00+00:00"
    assert csv_timestamp(datetime(2026, 3, 1, 12, 30, 5)) == "2026-03-01T12:30:05+00:00"
    rows = [
        {"at": datetime(2026, 3, 1, 12, 30, 0, 250, tzinfo=UTC)},
        {"at": datetime(2026, 3, 1, 23, 0, tzinfo=paris)},
    ]
    write_csv(rows, tmp_path / "t.csv", columns=["at"])
    cells = [row["at"] for row in csv.DictReader(io.StringIO((tmp_path / "t.csv").read_text()))]
    assert cells == ["2026-03-01T12:30:00.000250+00:00", "2026-03-01T22:00:00+00:00"]


def test_a_number_that_is_no_number_is_null_in_json_and_an_empty_cell_in_csv(tmp_path):
    rows = [
        {"id": "a", "score": float("nan"), "nested": {"x": [1.5, float("inf")]}},
        {"id": "b", "score": 2.0, "nested": {"x": []}},
    ]
    write_jsonl(iter(rows), tmp_path / "rows.jsonl")
    lines = (tmp_path / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"id":"a","score":null,"nested":{"x":[1.5,null]}}'
    assert lines[1] == '{"id":"b","score":2.0,"nested":{"x":[]}}'
    write_csv(iter(rows), tmp_path / "rows.csv", columns=["id", "score", "nested"])
    text = (tmp_path / "rows.csv").read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text
    assert text.splitlines()[1] == 'a,,"{""x"":[1.5,null]}"'
    assert rows[0]["score"] != rows[0]["score"]  # the caller's row is untouched


def test_the_compiled_csv_row_equals_the_cell_walk_on_every_kind_of_cell():
    """CsvLayout's generated function (one per column list) against the loop it unrolls: literal
    dotted keys win, parents that are no mapping or are missing give empty cells, a Mapping that
    is no dict is walked, formulas are made inert, numbers and JSON spelled as before."""
    from datetime import UTC, datetime
    from types import MappingProxyType

    from releases.writers import CsvLayout

    class Text(str):
        pass

    columns = ["id", "a.b", "a.c", "a.b.x", "s.v.state", "s.v.value", "s.w.value", "payload", "n"]
    layout = CsvLayout(columns)
    rows = [
        {"id": "=1+1", "a": {"b": "-2", "c": "+x"}, "s": {"v": {"state": "done", "value": 2.5}}},
        {"id": 7, "a.b": "literal", "a": {"b": "nested"}, "s": {"v": None}, "payload": [1, "x"]},
        {"id": True, "a": "not a mapping", "s": {"v": {"value": float("nan")}}, "n": None},
        {"id": Text("@sum"), "a": MappingProxyType({"b": {"x": 1}}), "s": {}, "n": -0.25},
        {"id": "", "a": {"b": {"x": "@"}, "c": False}, "s": {"w": {"value": {"k": [1.5]}}}},
        {"id": datetime(2026, 11, 27, 15, tzinfo=UTC), "payload": {"nan": float("inf")}},
        {},
    ]
    for row in rows:
        assert layout.cells(row) == layout.cells_walked(row), row
    assert layout.cells(rows[0])[:3] == ["'=1+1", "-2", "'+x"]
    assert layout.cells(rows[1])[1] == "literal"


def test_float_and_json_cells_are_spelled_as_json_spells_them():
    from releases.writers import _cell, finite_or_none

    for number in (0.1, 1e16, -0.0, 2.5, 1e-7, 123456789.123, 5e-324, 1.7976931348623157e308):
        assert _cell(number) == json.dumps(number)
    assert _cell(float("nan")) == _cell(float("-inf")) == ""
    for value in ({"a": [1.5, {"b": float("nan")}]}, [float("inf"), "x"], ("ü", 2), {"k": 1e16}):
        expected = json.dumps(finite_or_none(value), ensure_ascii=False, separators=(",", ":"))
        assert _cell(value) == expected
