"""Parquet copies of a release's plain files (``items.parquet``, ``annotations.parquet``):
the rows of the JSONL files, column for column, written in row groups while the rows stream
(memory: one row group as Arrow data plus ``PYTHON_ROWS`` rows as Python values, whatever the row
count; ``benchmarks/hf_dataset_write.py`` measures it at two sizes).

Columns: the JSONL row's keys, in its order. Text and numbers keep their type (``string``,
``int64``, ``double``); a value that is JSON of any shape (a payload, an item's stages, a vote,
which may be a string, a number, a list or null) is a ``string`` column holding its compact JSON
text, marked ``{"encoding": "json"}`` in the field's metadata, so ``json.loads`` of a cell is
the JSONL value (a missing value is a Parquet null). Timestamps stay the ISO 8601 text of the
JSONL (``csv_timestamp``). Compression: zstd; the zip stores Parquet files as they are.

Three ways in: ``ParquetSink.write(row)`` for rows built in Python (the items), and
``ParquetSink.write_csv_block(data)`` for rows PostgreSQL has already spelled as CSV (the
annotations, ``releases.copy_export``), parsed by Arrow's CSV reader without a Python object
per row; and ``ParquetSink.write_arrow(batch)`` for rows Arrow has read itself (the dataset
folder's JSON Lines, ``releases.hf_dataset``), cut as rows given one by one are.
tests/releases/test_parquet.py reads every demo release's Parquet files back and
compares them with the JSONL rows.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from releases.writers import FileEntry, finite_or_none, sha256_of_file

#: Rows per row group: about 10–40 MiB of Arrow data for a release's rows.
ROW_GROUP = 65_536
#: Rows given one by one (``ParquetSink.write``) held as Python values before they become Arrow
#: arrays: a Python string costs several times its Arrow bytes, so a row group's worth of them
#: was most of a build's Parquet memory. A multiple of Arrow's write batch (1,024 rows), so the
#: pages are cut where they were.
PYTHON_ROWS = 4_096
COMPRESSION = "zstd"
JSON = {b"encoding": b"json"}


@dataclass(frozen=True)
class ParquetColumn:
    """One column: its name (the JSONL key), Arrow type and whether it holds JSON text."""

    name: str
    type: pa.DataType
    json: bool = False

    def field(self) -> pa.Field:
        return pa.field(self.name, self.type, nullable=True, metadata=JSON if self.json else None)


def text_column(name: str) -> ParquetColumn:
    return ParquetColumn(name, pa.string())


def integer_column(name: str) -> ParquetColumn:
    return ParquetColumn(name, pa.int64())


def number_column(name: str) -> ParquetColumn:
    return ParquetColumn(name, pa.float64())


def json_column(name: str) -> ParquetColumn:
    return ParquetColumn(name, pa.string(), json=True)


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _json_cell(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return _dumps(value)
    except ValueError:  # NaN: null, as in the JSONL (releases.writers.finite_or_none)
        return _dumps(finite_or_none(value))


class ParquetSink:
    """A Parquet file of ``columns``: rows buffered up to ``row_group`` and written as one row
    group. ``close()`` returns the file's entry (hashed once written: Parquet writes its footer
    last)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        columns: Sequence[ParquetColumn],
        *,
        row_group: int = ROW_GROUP,
    ) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        self.schema = pa.schema([column.field() for column in self.columns])
        self._row_group = row_group
        self._writer = pq.ParquetWriter(self.path, self.schema, compression=COMPRESSION)
        self._values: list[list[Any]] = [[] for _ in self.columns]
        self._tables: list[pa.Table] = []
        self._carry: pa.Table | None = None  # rows of write_arrow short of PYTHON_ROWS
        self._pending = 0
        self.rows = 0
        self._convert = [_json_cell if column.json else None for column in self.columns]
        # One thread: a block is a few thousand rows, and each of Arrow's CSV threads kept
        # buffers of its own (16 MiB more at the peak, whatever the row count, for no speed).
        self._csv_options = (
            pa_csv.ReadOptions(
                column_names=[column.name for column in self.columns], use_threads=False
            ),
            pa_csv.ParseOptions(newlines_in_values=True),
            pa_csv.ConvertOptions(
                column_types={column.name: column.type for column in self.columns},
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
                null_values=[""],
            ),
        )

    def write(self, row: Mapping[str, Any]) -> None:
        for values, column, convert in zip(self._values, self.columns, self._convert, strict=True):
            value = row.get(column.name)
            values.append(convert(value) if convert is not None else value)
        self._pending += 1
        self.rows += 1
        if self._pending >= self._row_group:
            self._flush()
        elif self._values and len(self._values[0]) >= PYTHON_ROWS:
            self._take_values()

    def write_values(self, values: Sequence[Any]) -> None:
        """One row as its values in column order, JSON columns already spelled as JSON text
        (``_json_cell``'s spelling, None for null): for a writer that has encoded them for
        another file too (``releases.services.rows.write_item_files``)."""
        for column_values, value in zip(self._values, values, strict=True):
            column_values.append(value)
        self._pending += 1
        self.rows += 1
        if self._pending >= self._row_group:
            self._flush()
        elif self._values and len(self._values[0]) >= PYTHON_ROWS:
            self._take_values()

    def write_csv_block(self, data: bytes) -> None:
        """Rows spelled as CSV (no header; the columns in order; an empty unquoted cell is
        null, ``""`` an empty string; JSON columns as JSON text)."""
        if not data:
            return
        self._take_values()
        read, parse, convert = self._csv_options
        table = pa_csv.read_csv(
            io.BytesIO(data), read_options=read, parse_options=parse, convert_options=convert
        ).cast(self.schema)
        self._tables.append(table)
        self._pending += table.num_rows
        self.rows += table.num_rows
        if self._pending >= self._row_group:
            self._flush()

    def write_arrow(self, batch: pa.Table | pa.RecordBatch) -> None:
        """Rows Arrow has already read (a table or record batch of ``schema``'s columns):
        cut into tables of ``PYTHON_ROWS`` rows, one chunk each, as rows given one by one
        are, so the row groups and pages are those ``write`` would make of the same rows
        (``releases.hf_dataset`` reads a JSON Lines file this way)."""
        if self._values and self._values[0]:
            raise ValueError("write_arrow after rows given one by one would cut other pages")
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        self._carry = table if self._carry is None else pa.concat_tables([self._carry, table])
        while self._carry.num_rows >= PYTHON_ROWS:
            self._add_table(self._carry.slice(0, PYTHON_ROWS))
            self._carry = self._carry.slice(PYTHON_ROWS)

    def _add_table(self, table: pa.Table) -> None:
        self._tables.append(table.combine_chunks())
        self._pending += table.num_rows
        self.rows += table.num_rows
        if self._pending >= self._row_group:
            self._flush()

    def _take_values(self) -> None:
        """The rows given one by one so far, as a table after the tables before them."""
        if self._values and self._values[0]:
            arrays = [
                pa.array(values, type=column.type)
                for values, column in zip(self._values, self.columns, strict=True)
            ]
            self._tables.append(pa.Table.from_arrays(arrays, schema=self.schema))
            self._values = [[] for _ in self.columns]

    def _flush(self) -> None:
        self._take_values()
        if self._tables:
            table = pa.concat_tables(self._tables)
            self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self._tables = []
        self._pending = 0

    def close(self) -> FileEntry:
        if self._carry is not None:
            carry, self._carry = self._carry, None
            if carry.num_rows:
                self._add_table(carry)
        if self._pending:
            self._flush()
        self._writer.close()
        digest, size = sha256_of_file(self.path)
        return FileEntry(self.path.name, digest, size, self.rows)


def parquet_name(jsonl_name: str) -> str:
    """``items.jsonl`` → ``items.parquet``."""
    return jsonl_name.rsplit(".", 1)[0] + ".parquet"


def read_parquet_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a release's Parquet file as the JSONL has them (JSON columns parsed): for
    checks and tests; reads the whole file."""
    table = pq.read_table(path)
    json_columns = {
        field.name for field in table.schema if (field.metadata or {}).get(b"encoding") == b"json"
    }
    rows = table.to_pylist()
    for row in rows:
        for name in json_columns:
            if row[name] is not None:
                row[name] = json.loads(row[name])
    return rows


def parquet_text(data: bytes) -> str:
    """Every cell of a Parquet file (its bytes) as text, one row per line: what a search for a
    name in a release's files reads (the file itself is compressed)."""
    table = pq.read_table(io.BytesIO(data))
    return "\n".join(json.dumps(row, ensure_ascii=False, default=str) for row in table.to_pylist())
