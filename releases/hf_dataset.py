"""A release as a Hugging Face dataset folder: ``hf_dataset/data/<config>/<split>-00000-of-0000N.parquet``
per configuration and split, and ``hf_dataset/README.md``, the dataset card (``releases.hf_card``).

What the folder holds is declared by the project's workflow through the plug-in interface
(``Plugin.release_datasets``, annotation/plugins.py): a ``DatasetLayout`` of ``DatasetConfig``
objects, each naming one file of the release (JSON Lines, or a CSV with its number columns
declared) and how its rows are split (a fixed split, or a function of the row) and, optionally,
turned into dataset rows (``rows``: one source row → any number of dataset rows, e.g. one METER
entry → its questions). A workflow that declares nothing gets one ``default`` configuration: the
release's ``items.jsonl`` as the ``train`` split. A configuration whose file the release does not
have, or which yields no row, is left out.

Two streaming passes over each source file (memory: one Parquet row group per open split, never
the file): the first counts the rows of each split and finds each column's type, the second
writes them (``releases.parquet.ParquetSink``). Column types: text, integers, numbers and booleans
keep their type; lists and objects keep their nested Arrow type when every row agrees on one
(a list of texts stays ``list<string>``), otherwise the column holds each value's compact JSON
text (``{"encoding": "json"}`` in the field's metadata, as the release's own Parquet copies).
Column order: first seen. A split over ``SHARD_ROWS`` rows is written as several shards.

Django-free: tests/releases/test_hf_dataset.py loads every demo release's folder with
``datasets.load_dataset`` and compares it with the release's own files.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

from releases.parquet import ParquetColumn, ParquetSink
from releases.writers import FileEntry, iter_jsonl

#: The folder of a release that holds its dataset (every file of it is in the manifest).
FOLDER = "hf_dataset"
#: Rows per Parquet shard of a split (the Hub's viewer and ``datasets`` read shards in parallel).
SHARD_ROWS = 500_000
#: Rows per row group (``releases.parquet.ROW_GROUP`` sized for wide item rows; smaller here as
#: several splits may be open at once).
ROW_GROUP = 16_384
#: Nested values gathered before their Arrow type is inferred (first pass).
INFER_BATCH = 2_048
_NAME = re.compile(r"[^A-Za-z0-9_]+")

Row = dict[str, Any]


@dataclass(frozen=True)
class DatasetConfig:
    """One configuration of a release's dataset.

    ``source``: a file of the release (its manifest name), or a glob pattern of several (read
    in name order). ``split``: the split of every row,
    or a function of the (dataset) row giving it. ``rows``: source row → dataset rows (default:
    the row itself). ``numbers`` / ``integers``: the CSV columns (glob patterns) that hold numbers (a CSV cell
    is text otherwise; an empty cell is null). ``description``: one line for the card."""

    name: str
    source: str
    split: str | Callable[[Row], str] = "train"
    rows: Callable[[Row], Iterable[Row]] | None = None
    numbers: Sequence[str] = ()
    integers: Sequence[str] = ()
    description: str = ""


@dataclass(frozen=True)
class DatasetLayout:
    """What a workflow's release holds as a dataset: its configurations (the first is the
    Hub's default) and the Hub's ``task_categories`` (when one fits)."""

    configs: Sequence[DatasetConfig]
    task_categories: Sequence[str] = ()


DEFAULT_LAYOUT = DatasetLayout(
    configs=[
        DatasetConfig(
            "default", "items.jsonl", description="The released items, as items.jsonl holds them."
        )
    ]
)
DATASET_LAYOUTS: dict[str, DatasetLayout] = {}


def register_dataset_layout(kind: str, layout: DatasetLayout) -> None:
    """Declare the dataset configurations of a project kind (replaces an earlier one)."""
    DATASET_LAYOUTS[kind] = layout


def dataset_layout_for_kind(kind: str) -> DatasetLayout:
    return DATASET_LAYOUTS.get(kind, DEFAULT_LAYOUT)


@dataclass
class SplitInfo:
    name: str
    rows: int = 0
    bytes: int = 0
    files: list[str] = field(default_factory=list)


@dataclass
class ConfigInfo:
    """What was written for one configuration (for the card and the manifest)."""

    name: str
    description: str
    schema: pa.Schema
    splits: list[SplitInfo]


@dataclass
class DatasetFolder:
    configs: list[ConfigInfo]
    entries: list[FileEntry]
    task_categories: Sequence[str] = ()


def safe_name(text: str) -> str:
    """A config or split name the Hub accepts (``\\w+``)."""
    return _NAME.sub("_", str(text)).strip("_") or "unnamed"


def _unspreadsheet(text: str) -> str:
    """A CSV cell of a release back to its text: ``annotation.web.spreadsheet_safe`` put a quote
    before text a spreadsheet would read as a formula."""
    if len(text) > 1 and text[0] == "'" and text[1] in "=+-@\t\r":
        return text[1:]
    return text


def _csv_rows(path: Path, config: DatasetConfig) -> Iterator[Row]:
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        numbers = {key for key in header if any(fnmatch(key, p) for p in config.numbers)}
        integers = {key for key in header if any(fnmatch(key, p) for p in config.integers)}
        for record in reader:
            row: Row = {}
            for key, cell in record.items():
                if cell == "" and (key in numbers or key in integers):
                    row[key] = None
                elif key in integers:
                    row[key] = int(cell)
                elif key in numbers:
                    row[key] = float(cell)
                else:
                    row[key] = _unspreadsheet(cell or "")
            yield row


def source_paths(folder: Path, config: DatasetConfig) -> list[Path]:
    """The release's files a configuration reads: ``source`` itself, or every file its glob
    pattern matches (in name order)."""
    if any(char in config.source for char in "*?["):
        return sorted(path for path in folder.glob(config.source) if path.is_file())
    path = folder / config.source
    return [path] if path.is_file() else []


def _source_rows(folder: Path, config: DatasetConfig) -> Iterator[Row]:
    for path in source_paths(folder, config):
        rows = _csv_rows(path, config) if path.suffix == ".csv" else iter_jsonl(path)
        for row in rows:
            if config.rows is None:
                yield row
            else:
                yield from config.rows(row)


def _split_of(config: DatasetConfig, row: Row) -> str:
    return safe_name(config.split(row) if callable(config.split) else config.split)


_SCALARS: dict[type, pa.DataType] = {
    bool: pa.bool_(),
    int: pa.int64(),
    float: pa.float64(),
    str: pa.string(),
}
_JSON = "json"


class _ColumnType:
    """The type of one column, found over the first pass: a scalar type, a nested Arrow type,
    or JSON text when the rows disagree."""

    def __init__(self) -> None:
        self.kinds: set[Any] = set()
        self.nested: pa.DataType | None = None
        self._pending: list[Any] = []

    def see(self, value: Any) -> None:
        if value is None or _JSON in self.kinds:
            return
        kind = type(value)
        if kind in _SCALARS:
            self.kinds.add(kind)
        elif isinstance(value, list | dict):
            self.kinds.add("nested")
            self._pending.append(value)
            if len(self._pending) >= INFER_BATCH:
                self._infer()
        else:
            self.kinds.add(_JSON)
        if len(self.kinds) > 1 and self.kinds != {int, float}:
            self.kinds = {_JSON}
            self._pending = []

    def _infer(self) -> None:
        try:
            found = pa.array(self._pending).type
            if self.nested is not None:
                found = (
                    pa.unify_schemas(
                        [pa.schema([("v", self.nested)]), pa.schema([("v", found)])],
                        promote_options="permissive",
                    )
                    .field("v")
                    .type
                )
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            self.kinds = {_JSON}
            found = None
        self.nested = found
        self._pending = []

    def column(self, name: str) -> ParquetColumn:
        if self._pending:
            self._infer()
        if self.kinds == {"nested"} and self.nested is not None and _plain(self.nested):
            return ParquetColumn(name, self.nested)
        if not self.kinds:
            return ParquetColumn(name, pa.string())  # never a value: null text
        if len(self.kinds) == 1 and next(iter(self.kinds)) in _SCALARS:
            return ParquetColumn(name, _SCALARS[next(iter(self.kinds))])
        if self.kinds == {int, float}:
            return ParquetColumn(name, pa.float64())
        return ParquetColumn(name, pa.string(), json=True)


def _plain(arrow_type: pa.DataType) -> bool:
    """A nested type Parquet and ``datasets`` both take as it is: lists and structs of
    scalars, with no null-typed part (only nulls or empty lists seen) and no empty struct."""
    if pa.types.is_list(arrow_type):
        return _plain(arrow_type.value_type)
    if pa.types.is_struct(arrow_type):
        return arrow_type.num_fields > 0 and all(
            _plain(arrow_type.field(i).type) for i in range(arrow_type.num_fields)
        )
    return arrow_type in set(_SCALARS.values())


def _first_pass(folder: Path, config: DatasetConfig) -> tuple[list[ParquetColumn], dict[str, int]]:
    types: dict[str, _ColumnType] = {}
    counts: dict[str, int] = {}
    for row in _source_rows(folder, config):
        split = _split_of(config, row)
        counts[split] = counts.get(split, 0) + 1
        for key, value in row.items():
            column = types.get(key)
            if column is None:
                column = types[key] = _ColumnType()
            column.see(value)
    return [column.column(name) for name, column in types.items()], counts


def _write_config(
    folder: Path, out: Path, config: DatasetConfig, shard_rows: int
) -> tuple[ConfigInfo, list[FileEntry]] | None:
    columns, counts = _first_pass(folder, config)
    if not counts:
        return None
    name = safe_name(config.name)
    target = out / "data" / name
    target.mkdir(parents=True, exist_ok=True)
    shards = {split: max(1, math.ceil(count / shard_rows)) for split, count in counts.items()}
    open_sinks: dict[str, tuple[int, ParquetSink]] = {}
    seen: dict[str, int] = dict.fromkeys(counts, 0)
    splits = {split: SplitInfo(split) for split in sorted(counts)}
    entries: list[FileEntry] = []

    def close(split: str) -> None:
        _, sink = open_sinks.pop(split)
        entry = sink.close()
        relative = f"{FOLDER}/data/{name}/{entry.name}"
        entries.append(replace(entry, name=relative))
        info = splits[split]
        info.rows += entry.rows or 0
        info.bytes += entry.bytes
        info.files.append(relative)

    if _read_by_arrow(folder, config, columns, counts, shard_rows):
        (split,) = counts
        path = target / f"{split}-00000-of-00001.parquet"
        open_sinks[split] = (0, ParquetSink(path, columns, row_group=ROW_GROUP))
        try:
            for batch in _arrow_batches(folder, config, columns):
                open_sinks[split][1].write_arrow(batch)
        finally:
            close(split)
        seen[split] = splits[split].rows
        if seen != counts:
            raise ValueError(f"{config.source} changed while its dataset was written")
        schema = pa.schema([column.field() for column in columns])
        return ConfigInfo(name, config.description, schema, list(splits.values())), entries
    try:
        for row in _source_rows(folder, config):
            split = _split_of(config, row)
            shard = seen[split] // shard_rows
            seen[split] += 1
            current = open_sinks.get(split)
            if current is not None and current[0] != shard:
                close(split)
                current = None
            if current is None:
                path = target / f"{split}-{shard:05d}-of-{shards[split]:05d}.parquet"
                current = open_sinks[split] = (
                    shard,
                    ParquetSink(path, columns, row_group=ROW_GROUP),
                )
            current[1].write(row)
    finally:
        for split in list(open_sinks):
            close(split)
    if seen != counts:
        raise ValueError(f"{config.source} changed while its dataset was written")
    schema = pa.schema([column.field() for column in columns])
    return ConfigInfo(name, config.description, schema, list(splits.values())), entries


#: Bytes of a JSON Lines file Arrow's reader parses at a time (memory: about this much text
#: and its Arrow columns at once).
ARROW_BLOCK = 1 << 20


def _read_by_arrow(
    folder: Path,
    config: DatasetConfig,
    columns: list[ParquetColumn],
    counts: dict[str, int],
    shard_rows: int,
) -> bool:
    """Whether the second pass may read the rows with Arrow's JSON reader (C++, no Python
    object per row) instead of ``json.loads``: a configuration of JSON Lines files taken as
    they are (no ``rows``), one fixed split in one shard, and no column of JSON text (Arrow
    would parse such a cell, not keep its text). The rows are then the same values, of the
    types the first pass found, cut into the same row groups and pages
    (``ParquetSink.write_arrow``): the file is the one the Python pass writes
    (tests/releases/test_hf_dataset.py compares their bytes)."""
    return (
        config.rows is None
        and not callable(config.split)
        and len(counts) == 1
        and next(iter(counts.values())) <= shard_rows
        and all(path.suffix == ".jsonl" for path in source_paths(folder, config))
        and not any(column.json for column in columns)
    )


def _arrow_batches(
    folder: Path, config: DatasetConfig, columns: list[ParquetColumn]
) -> Iterator[pa.RecordBatch]:
    schema = pa.schema([column.field() for column in columns])
    for path in source_paths(folder, config):
        reader = pa_json.open_json(
            path,
            read_options=pa_json.ReadOptions(use_threads=False, block_size=ARROW_BLOCK),
            parse_options=pa_json.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="error"
            ),
        )
        yield from reader


def write_dataset_folder(
    release_folder: str | os.PathLike[str],
    layout: DatasetLayout,
    *,
    shard_rows: int = SHARD_ROWS,
) -> DatasetFolder:
    """Write the Parquet files of ``layout`` into ``<release_folder>/hf_dataset/data/`` from
    the release's files already in ``release_folder``; their entries are named by their path in
    the release (``hf_dataset/data/default/train-00000-of-00001.parquet``). The card is written
    afterwards (``releases.hf_card.write_dataset_card``), from the datasheet."""
    folder = Path(release_folder)
    out = folder / FOLDER
    configs: list[ConfigInfo] = []
    entries: list[FileEntry] = []
    names: set[str] = set()
    for config in layout.configs:
        if safe_name(config.name) in names:
            raise ValueError(f"dataset config {config.name!r} is declared twice")
        names.add(safe_name(config.name))
        if not source_paths(folder, config):
            continue
        written = _write_config(folder, out, config, shard_rows)
        if written is not None:
            configs.append(written[0])
            entries.extend(written[1])
    return DatasetFolder(configs, entries, tuple(layout.task_categories))


def dataset_summary(dataset: DatasetFolder) -> list[Mapping[str, Any]]:
    """The configurations and splits written, with their row counts (stored with the release's
    figures, shown on the release page)."""
    return [
        {
            "name": config.name,
            "splits": [{"name": split.name, "rows": split.rows} for split in config.splits],
        }
        for config in dataset.configs
    ]
