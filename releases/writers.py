"""Release files: streaming JSONL and CSV writers, a SHA-256 manifest, a deterministic zip and
a diff between two releases. Plain Python: it needs no Django settings nor app registry (the
spreadsheet-safe cell rule it shares with every CSV download comes from annotation/web.py).

Every writer takes an iterator of dicts and holds one row at a time: memory does not grow with
the number of rows. Bytes are hashed as they are written, so a file's SHA-256 costs no second
read.

JSONL: one ``json.dumps(row, ensure_ascii=False, separators=(",", ":"))`` per line, keys in the
row's own order, UTF-8, ``\\n`` line endings. A number that is no number (NaN, ±infinity, as
pandas and numpy give for a missing value) is ``null`` (``json.dumps`` would write ``NaN``, which
is not JSON); in CSV it is an empty cell, like ``None`` (``finite_or_none``: the one rule).

``write_blocks`` writes bytes a database has already encoded (a ``COPY … TO STDOUT`` stream)
as they come.

CSV (RFC 4180 style, UTF-8 without BOM, ``\\r\\n`` line endings, minimal quoting): the columns
are declared up front, so the header is fixed before the first row. Nested JSON is handled in
two complementary ways, chosen per column by the caller:

* a dotted column ``"trap.type"`` takes ``row["trap"]["type"]`` (a literal ``"trap.type"`` key
  wins if present) — use it for the few nested scalars people filter on;
* any dict or list that reaches a cell is written as compact JSON text (``{"X":"a"}``) — so a
  column ``"variables"`` carries the whole object and nothing is lost.

Scalars: ``None`` is an empty cell, booleans ``true``/``false`` (as in JSON), numbers via
``repr``-exact ``json.dumps``, strings as they are except that a string a spreadsheet would run
as a formula gets a leading single quote (``spreadsheet_safe``; numbers are never touched),
timestamps in ISO 8601, in UTC, with their offset (``csv_timestamp``: the one spelling of a time in
every CSV the project writes, releases and downloads alike; a naive one is taken as UTC). A
row holding a key that no column covers raises ``ValueError`` (``extra="error"``, the default)
so data are never dropped silently; pass ``extra="ignore"`` to drop them on purpose. ``columns_from_rows`` proposes a column list.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

# The spreadsheet-safe cell rule is the one every CSV download uses too (annotation/web.py).
from annotation.web import FORMULA_STARTS, csv_timestamp, spreadsheet_safe

ZIP_TIMESTAMP = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry can hold
ZIP_FILE_MODE = 0o644
COPY_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One release file: its name inside the release, SHA-256, size in bytes, rows (if known)."""

    name: str
    sha256: str
    bytes: int
    rows: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class HashingWriter(io.RawIOBase):
    """A binary sink that hashes and counts what passes through it to ``target``."""

    def __init__(self, target: IO[bytes]) -> None:
        self._target = target
        self._hash = hashlib.sha256()
        self.bytes_written = 0

    def writable(self) -> bool:
        return True

    def write(self, data: ReadableBuffer, /) -> int:
        size = memoryview(data).nbytes
        self._hash.update(data)
        self.bytes_written += size
        self._target.write(data)
        return size

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


def sha256_of_file(path: str | os.PathLike[str]) -> tuple[str, int]:
    """(hex SHA-256, size in bytes) of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(COPY_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def finite_or_none(value: Any) -> Any:
    """``value`` with every NaN and ±infinity, however deep, replaced by None: how a released
    file spells a missing number (``null`` in JSON, an empty cell in CSV), never ``NaN``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_none(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(inner) for inner in value]
    return value


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> FileEntry:
    """Write one JSON object per line; return the file's entry (name = file name). NaN and
    ±infinity are written as ``null`` (``finite_or_none``)."""
    path = Path(path)
    count = 0
    with open(path, "wb") as raw:
        sink = HashingWriter(raw)
        buffered = io.BufferedWriter(sink, buffer_size=COPY_CHUNK)
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
        for row in rows:
            try:
                line = dumps(row)
            except ValueError:  # a NaN somewhere: the rare row pays for the walk
                line = dumps(finite_or_none(row))
            buffered.write(line.encode("utf-8"))
            buffered.write(b"\n")
            count += 1
        buffered.flush()
        buffered.detach()
    return FileEntry(path.name, sink.sha256, sink.bytes_written, count)


def write_lines(lines: Iterable[str], path: str | os.PathLike[str]) -> FileEntry:
    """Write pre-encoded JSON Lines (one JSON text per item, no newline); return the entry.
    For producers that splice JSON the database already holds, instead of parsing and
    re-encoding it (``write_jsonl`` for dicts)."""
    path = Path(path)
    count = 0
    with open(path, "wb") as raw:
        sink = HashingWriter(raw)
        buffered = io.BufferedWriter(sink, buffer_size=COPY_CHUNK)
        for line in lines:
            buffered.write(line.encode("utf-8"))
            buffered.write(b"\n")
            count += 1
        buffered.flush()
        buffered.detach()
    return FileEntry(path.name, sink.sha256, sink.bytes_written, count)


def write_blocks(
    blocks: Iterable[bytes | bytearray | memoryview],
    path: str | os.PathLike[str],
    *,
    header: bytes = b"",
    rows: int | None = None,
) -> FileEntry:
    """Write ``header`` then byte blocks exactly as they come (a ``COPY … TO STDOUT`` stream:
    the producer has already encoded the lines); return the entry, with ``rows`` if given."""
    path = Path(path)
    with open(path, "wb") as raw:
        sink = HashingWriter(raw)
        buffered = io.BufferedWriter(sink, buffer_size=COPY_CHUNK)
        buffered.write(header)
        for block in blocks:
            buffered.write(block)
        buffered.flush()
        buffered.detach()
    return FileEntry(path.name, sink.sha256, sink.bytes_written, rows)


def _cell(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return spreadsheet_safe(value)
    if value is None:
        return ""
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:  # json's spelling of a finite float is its repr
        return float.__repr__(value) if math.isfinite(value) else ""
    if isinstance(value, str):
        return spreadsheet_safe(str(value))
    if isinstance(value, datetime):
        return csv_timestamp(value)
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    if isinstance(value, (dict, list, tuple)):
        try:
            return _strict_json(value)
        except ValueError:  # a NaN somewhere: the rare cell pays for the walk
            return _compact_json(finite_or_none(value))
    return _compact_json(value)


_compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_strict_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_ABSENT = object()


class CsvLayout:
    """Columns compiled once: how to fetch each cell and which row keys they cover.

    A plain column covers its key; a dotted column ``a.b`` covers ``row["a"]["b"]`` (and a
    literal ``"a.b"`` key). A row key that is covered neither way is "uncovered".
    """

    def __init__(self, columns: Sequence[str]) -> None:
        if len(set(columns)) != len(columns):
            raise ValueError("CSV columns repeat")
        self.columns = list(columns)
        self._paths = [tuple(column.split(".")) if "." in column else None for column in columns]
        self._covered = frozenset(columns)
        self._parents = frozenset(
            ".".join(column.split(".")[:depth])
            for column in columns
            if "." in column
            for depth in range(1, column.count(".") + 1)
        )
        # {"trap": {"type": True}, "label": True}: True covers the whole subtree.
        tree: dict[str, Any] = {}
        for column in sorted(columns, key=lambda column: column.count("."), reverse=True):
            *parents, leaf = column.split(".")
            node = tree
            for part in parents:
                child = node.setdefault(part, {})
                if child is True:
                    break
                node = child
            else:
                node[leaf] = True
        self._tree = tree
        self._cells = _compiled_cells(self.columns)

    def cells(self, row: Mapping[str, Any]) -> list[str]:
        """The row's cells, one per column (the rules in the module docstring)."""
        return self._cells(row)

    def cells_walked(self, row: Mapping[str, Any]) -> list[str]:
        """:meth:`cells` spelled as a loop over the columns: the reference the compiled
        function is tested against (tests/releases/test_writers.py)."""
        cells = []
        for column, path in zip(self.columns, self._paths, strict=True):
            value = row.get(column, _ABSENT)
            if value is _ABSENT and path is not None:
                value = row
                for part in path:
                    # type() first: the abstract Mapping check is the slow part of a cell.
                    if (type(value) is not dict and not isinstance(value, Mapping)) or (
                        part not in value
                    ):
                        value = _ABSENT
                        break
                    value = value[part]
            cells.append("" if value is _ABSENT else _cell(value))
        return cells

    def uncovered(self, row: Mapping[str, Any]) -> list[str]:
        """Leaf paths of ``row`` that no column covers (a column covers its whole subtree)."""
        missing = []
        stack: list[tuple[str, Any]] = [(key, value) for key, value in row.items()]
        while stack:
            path, value = stack.pop()
            if path in self._covered:
                continue
            if path in self._parents and isinstance(value, Mapping) and value:
                stack.extend((f"{path}.{key}", child) for key, child in value.items())
            else:
                missing.append(path)
        return sorted(missing)

    def row(self, row: Mapping[str, Any], extra: Literal["error", "ignore"] = "error") -> list[str]:
        if extra == "error" and not self._is_covered(row):
            raise ValueError(
                f"row has data in {self.uncovered(row)} that no CSV column covers; add the "
                f"columns or pass extra='ignore'"
            )
        return self._cells(row)

    def _is_covered(self, row: Mapping[str, Any]) -> bool:
        covered = self._covered
        for key, value in row.items():
            if key in covered:
                continue
            node = self._tree.get(key)
            if node is None or not _is_mapping(value) or not _tree_covers(node, value):
                return False
        return True


def _compiled_cells(columns: Sequence[str]) -> Any:
    """One function per column list, ``row -> cells``: :meth:`CsvLayout.cells_walked` unrolled
    into straight-line code, each dotted column's parents looked up once per row (the columns
    ``stages.verify.*`` share ``row["stages"]["verify"]``) and a text cell's common case (no
    formula start) decided inline. Generated with ``exec`` because the loop's per-cell dispatch
    was half of a release's item CSV (benchmarks/README.md, "Release build"); the column names
    enter the code only as ``repr`` literals."""
    lines = ["def cells(row):", "    get = row.get"]
    parents: dict[tuple[str, ...], str] = {(): "row"}

    def parent(path: tuple[str, ...]) -> str:
        if path not in parents:
            above, name = parent(path[:-1]), f"p{len(parents)}"
            lines.append(
                f"    {name} = {above}[{path[-1]!r}] if {above} is not _ABSENT and "
                f"(type({above}) is dict or isinstance({above}, Mapping)) and "
                f"{path[-1]!r} in {above} else _ABSENT"
            )
            parents[path] = name
        return parents[path]

    cells = []
    for number, column in enumerate(columns):
        value = f"c{number}"
        lines.append(f"    {value} = get({column!r}, _ABSENT)")
        if "." in column:
            *above, leaf = column.split(".")
            holder = parent(tuple(above))
            lines.append(
                f"    if {value} is _ABSENT and {holder} is not _ABSENT and "
                f"(type({holder}) is dict or isinstance({holder}, Mapping)) and {leaf!r} in {holder}:"
                f"\n        {value} = {holder}[{leaf!r}]"
            )
        cells.append(
            f"({value} if not {value} or {value}[0] not in _STARTS else _safe({value})) "
            f"if type({value}) is str else '' if {value} is _ABSENT or {value} is None "
            f"else _cell({value})"
        )
    lines.append("    return [" + ", ".join(cells) + "]")
    scope: dict[str, Any] = {
        "_ABSENT": _ABSENT, "Mapping": Mapping, "_STARTS": FORMULA_STARTS,
        "_safe": spreadsheet_safe, "_cell": _cell,
    }  # fmt: skip
    exec("\n".join(lines), scope)  # the code above: column names only as repr literals
    return scope["cells"]


def _tree_covers(tree: dict[str, Any], mapping: Mapping[str, Any]) -> bool:
    for key, value in mapping.items():
        node = tree.get(key)
        if node is True:
            continue
        if node is None or not _is_mapping(value) or not _tree_covers(node, value):
            return False
    return True


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def flatten_row(
    row: Mapping[str, Any],
    columns: Sequence[str],
    *,
    extra: Literal["error", "ignore"] = "error",
) -> list[str]:
    """The CSV cells of ``row`` for ``columns`` (see the module docstring for the rules)."""
    return CsvLayout(columns).row(row, extra)


def columns_from_rows(
    rows: Iterable[Mapping[str, Any]], *, flatten: Sequence[str] = ()
) -> list[str]:
    """Columns for ``rows`` in first-seen order; keys named in ``flatten`` (objects) become
    dotted columns one level deep (``"trap"`` -> ``"trap.type"``, ``"trap.subtype"``), others
    stay whole (JSON cells). Reads all of ``rows``: pass a sample or a schema's field list."""
    columns: dict[str, None] = {}
    for row in rows:
        for key, value in row.items():
            if key in flatten and isinstance(value, Mapping):
                for child in value:
                    columns.setdefault(f"{key}.{child}", None)
            else:
                columns.setdefault(key, None)
    return list(columns)


def write_csv(
    rows: Iterable[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str],
    extra: Literal["error", "ignore"] = "error",
) -> FileEntry:
    """Write a header of ``columns`` and one line per row; return the file's entry."""
    path = Path(path)
    layout = CsvLayout(columns)
    count = 0
    with open(path, "wb") as raw:
        sink = HashingWriter(raw)
        buffered = io.BufferedWriter(sink, buffer_size=COPY_CHUNK)
        text = io.TextIOWrapper(buffered, encoding="utf-8", newline="", write_through=False)
        writer = csv.writer(text, lineterminator="\r\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(layout.row(row, extra))
            count += 1
        text.flush()
        text.detach()
        buffered.flush()
        buffered.detach()
    return FileEntry(path.name, sink.sha256, sink.bytes_written, count)


@dataclass
class Manifest:
    """SHA-256 and size of every file of a release, keyed by name; serialises deterministically.

    ``verify(directory)`` re-hashes the files and returns the names whose content differs.
    """

    entries: dict[str, FileEntry] = field(default_factory=dict)

    def add(self, entry: FileEntry) -> FileEntry:
        if entry.name in self.entries:
            raise ValueError(f"{entry.name!r} is already in the manifest")
        self.entries[entry.name] = entry
        return entry

    def add_file(
        self, path: str | os.PathLike[str], *, name: str | None = None, rows: int | None = None
    ) -> FileEntry:
        digest, size = sha256_of_file(path)
        return self.add(FileEntry(name or Path(path).name, digest, size, rows))

    def to_dict(self) -> dict[str, Any]:
        return {
            "algorithm": "sha256",
            "files": [self.entries[name].to_dict() for name in sorted(self.entries)],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def sha256sums(self) -> str:
        """The manifest in ``sha256sum -c`` format."""
        return "".join(f"{self.entries[name].sha256}  {name}\n" for name in sorted(self.entries))

    def write(self, path: str | os.PathLike[str]) -> FileEntry:
        data = self.to_json().encode("utf-8")
        Path(path).write_bytes(data)
        return FileEntry(Path(path).name, hashlib.sha256(data).hexdigest(), len(data))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Manifest:
        manifest = cls()
        for entry in data["files"]:
            manifest.add(FileEntry(**entry))
        return manifest

    def verify(self, directory: str | os.PathLike[str]) -> list[str]:
        """Names of files that are missing or whose SHA-256 or size no longer match."""
        bad = []
        for name in sorted(self.entries):
            path = Path(directory) / name
            if not path.is_file():
                bad.append(name)
                continue
            digest, size = sha256_of_file(path)
            entry = self.entries[name]
            if digest != entry.sha256 or size != entry.bytes:
                bad.append(name)
        return bad


def build_zip(
    paths: Iterable[str | os.PathLike[str]] | Mapping[str, str | os.PathLike[str]],
    zip_path: str | os.PathLike[str],
) -> FileEntry:
    """Stream files into a zip whose bytes depend only on the names and contents.

    ``paths`` is a list of files (stored under their base names) or a mapping
    ``{name in zip: path}``. Entries are written in sorted name order with a fixed timestamp
    (1980-01-01), fixed permissions (0644), a fixed creator system and zlib's default deflate
    level; file contents are copied in 1 MiB chunks, and the zip is written as a stream (sizes in
    data descriptors). Identical inputs give identical bytes on one zlib version. Returns the zip's own entry.
    """
    if isinstance(paths, Mapping):
        members = {str(name): Path(path) for name, path in paths.items()}
    else:
        members = {}
        for path in paths:
            path = Path(path)
            if path.name in members:
                raise ValueError(f"two files are named {path.name!r}; pass a mapping of names")
            members[path.name] = path
    zip_path = Path(zip_path)
    with open(zip_path, "wb") as raw:
        sink = HashingWriter(raw)
        with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name in sorted(members):
                info = zipfile.ZipInfo(name, date_time=ZIP_TIMESTAMP)
                info.compress_type = zipfile.ZIP_DEFLATED  # zlib's default level
                info.create_system = 3  # Unix, whatever machine builds the release
                info.external_attr = (0o100000 | ZIP_FILE_MODE) << 16
                size = members[name].stat().st_size
                with (
                    open(members[name], "rb") as source,
                    archive.open(info, "w", force_zip64=size >= zipfile.ZIP64_LIMIT) as target,
                ):
                    while chunk := source.read(COPY_CHUNK):
                        target.write(chunk)
    return FileEntry(zip_path.name, sink.sha256, sink.bytes_written, None)


# -- diff between releases -------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseDiff:
    """Ids added, removed and changed (any value differs) between two releases, each sorted."""

    added: list[str]
    removed: list[str]
    changed: list[str]
    unchanged: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "unchanged": self.unchanged,
        }


def _row_digest(row: Mapping[str, Any]) -> bytes:
    canonical = json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).digest()


def _keyed_digests(
    rows: Iterable[Mapping[str, Any]], key: str, side: str
) -> Iterator[tuple[str, bytes]]:
    for position, row in enumerate(rows):
        if key not in row:
            raise ValueError(f"{side} row {position} has no {key!r}")
        yield str(row[key]), _row_digest(row)


def release_diff(
    old_rows: Iterable[Mapping[str, Any]],
    new_rows: Iterable[Mapping[str, Any]],
    key: str = "external_id",
) -> ReleaseDiff:
    """Compare two releases row by row, matched on ``key``.

    A row is "changed" when its canonical JSON (sorted keys) differs, so key order does not
    count but ``1`` vs ``1.0`` does. Memory: a 16-byte digest per id of the old release and the
    set of ids seen in the new one (about 100-200 bytes per id), never the rows themselves; both inputs are read
    once, in any order. A repeated id in either input raises ``ValueError``.
    """
    old: dict[str, bytes] = {}
    for identifier, digest in _keyed_digests(old_rows, key, "old"):
        if identifier in old:
            raise ValueError(f"old release repeats id {identifier!r}")
        old[identifier] = digest
    added, changed = [], []
    seen: set[str] = set()
    unchanged = 0
    for identifier, digest in _keyed_digests(new_rows, key, "new"):
        if identifier in seen:
            raise ValueError(f"new release repeats id {identifier!r}")
        seen.add(identifier)
        previous = old.pop(identifier, None)
        if previous is None:
            added.append(identifier)
        elif previous != digest:
            changed.append(identifier)
        else:
            unchanged += 1
    return ReleaseDiff(sorted(added), sorted(old), sorted(changed), unchanged)


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Read a JSONL release file back, one row at a time (for diffs and checks)."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)
