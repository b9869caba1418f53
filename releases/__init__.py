"""Django-free release core: streaming JSONL/CSV writers, manifest, deterministic zip, diff,
and the README.md datasheet."""

from releases.datasheet import render_datasheet
from releases.writers import (
    FileEntry,
    Manifest,
    ReleaseDiff,
    build_zip,
    columns_from_rows,
    csv_timestamp,
    flatten_row,
    iter_jsonl,
    release_diff,
    sha256_of_file,
    spreadsheet_safe,
    write_blocks,
    write_csv,
    write_jsonl,
    write_lines,
)

__all__ = [
    "FileEntry",
    "Manifest",
    "ReleaseDiff",
    "build_zip",
    "columns_from_rows",
    "csv_timestamp",
    "flatten_row",
    "iter_jsonl",
    "release_diff",
    "render_datasheet",
    "sha256_of_file",
    "spreadsheet_safe",
    "write_blocks",
    "write_csv",
    "write_jsonl",
    "write_lines",
]
