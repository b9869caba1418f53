"""Per-file writers of a release, pluggable: each takes rows (or bytes) one at a time, holds
at most one buffer of them, and on ``close()`` returns the file's ``FileEntry`` (SHA-256, size,
rows). A build feeds one pass of rows to several of them at once (``write_rows``): the items
are read once and written as JSONL, CSV and Parquet together. Any layout (a kind's benchmark
files, a dataset folder) can reuse them.

* ``ByteSink`` — the bytes of one file: written, hashed (SHA-256 and the CRC-32 a zip needs)
  and, when asked, deflated into a side file as they come (``deflate=True``), all in a
  background thread fed through a bounded queue (hashlib and zlib release the GIL, so the
  producer keeps running on the other core; memory is a few 1 MiB blocks). The release's zip
  is then assembled from the deflated copies without compressing anything again
  (``releases.zip_assembly``).
* ``JsonlSink`` / ``CsvSink`` — the spellings of ``releases.writers`` (``write_jsonl``,
  ``write_csv``), row by row.
* ``ParquetSink`` (``releases.parquet``) — the same rows as Parquet, in row groups.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import queue
import threading
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from releases.writers import CsvLayout, FileEntry, finite_or_none

BLOCK = 1 << 20
#: Blocks waiting for the background thread: memory is at most this many blocks per file.
QUEUE_BLOCKS = 4
#: zlib level of the deflated copies. 1 writes 2–3 times faster than the default 6 for a zip
#: about a quarter larger: the build is CPU-bound, the archive is downloaded a few times.
DEFLATE_LEVEL = 1


@dataclass(frozen=True, slots=True)
class Deflated:
    """The raw deflate stream of a file (``path``), with what a zip entry states about it."""

    path: Path
    crc32: int
    size: int
    compressed: int


class RowSink(Protocol):
    """A file written one row at a time; ``close()`` finishes it and returns its entry."""

    def write(self, row: Mapping[str, Any]) -> None: ...

    def close(self) -> FileEntry: ...


class ByteSink:
    """Bytes into ``path`` through a background thread that hashes them (SHA-256, CRC-32) and,
    with ``deflate=True``, deflates a copy into ``path`` + ``.deflate`` (``deflated``).
    ``write`` takes any bytes (buffered to ``BLOCK``); ``close`` waits for the thread and
    raises what it raised."""

    def __init__(self, path: str | os.PathLike[str], *, deflate: bool = False) -> None:
        self.path = Path(path)
        self.rows: int | None = None
        self._buffer = bytearray()
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUE_BLOCKS)
        self._error: BaseException | None = None
        self._sha256 = hashlib.sha256()
        self._crc32 = 0
        self._bytes = 0
        self._deflate = deflate
        self.deflated: Deflated | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"sink {self.path.name}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        compressor = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, -15) if self._deflate else None
        side = self.path.with_name(self.path.name + ".deflate")
        compressed = 0
        try:
            with (
                open(self.path, "wb") as raw,
                open(side, "wb") if compressor else io.BytesIO() as packed,
            ):
                while (block := self._queue.get()) is not None:
                    self._sha256.update(block)
                    self._crc32 = zlib.crc32(block, self._crc32)
                    self._bytes += len(block)
                    raw.write(block)
                    if compressor is not None:
                        data = compressor.compress(block)
                        compressed += len(data)
                        packed.write(data)
                if compressor is not None:
                    data = compressor.flush()
                    compressed += len(data)
                    packed.write(data)
            if compressor is not None:
                self.deflated = Deflated(side, self._crc32, self._bytes, compressed)
        except BaseException as error:  # handed to close(); keep draining so writers never block
            self._error = error
            while self._queue.get() is not None:
                pass

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data
        if len(self._buffer) >= BLOCK:
            self._queue.put(bytes(self._buffer))
            self._buffer.clear()

    def close(self) -> FileEntry:
        if self._buffer:
            self._queue.put(bytes(self._buffer))
            self._buffer.clear()
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error
        return FileEntry(self.path.name, self._sha256.hexdigest(), self._bytes, self.rows)


class JsonlSink:
    """``releases.writers.write_jsonl``'s spelling, one row at a time."""

    def __init__(self, path: str | os.PathLike[str], *, deflate: bool = False) -> None:
        self.sink = ByteSink(path, deflate=deflate)
        self._dumps = json.JSONEncoder(
            ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode
        self.rows = 0

    def write(self, row: Mapping[str, Any]) -> None:
        try:
            line = self._dumps(row)
        except ValueError:  # a NaN somewhere: the rare row pays for the walk
            line = self._dumps(finite_or_none(row))
        self.sink.write(line.encode("utf-8") + b"\n")
        self.rows += 1

    def close(self) -> FileEntry:
        self.sink.rows = self.rows
        return self.sink.close()


class _SinkText(io.TextIOBase):
    """What ``csv.writer`` writes into: text, handed on as UTF-8 bytes."""

    def __init__(self, sink: ByteSink) -> None:
        self._sink = sink

    def write(self, text: str) -> int:
        self._sink.write(text.encode("utf-8"))
        return len(text)


class CsvSink:
    """``releases.writers.write_csv``'s spelling (the header of ``columns``, then one line per
    row; the spreadsheet-safe cell rule), one row at a time."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        columns: Sequence[str],
        extra: Literal["error", "ignore"] = "error",
        deflate: bool = False,
    ) -> None:
        self.sink = ByteSink(path, deflate=deflate)
        self._layout = CsvLayout(columns)
        self._extra = extra
        self._writer = csv.writer(_SinkText(self.sink), lineterminator="\r\n")
        self._writer.writerow(columns)
        self.rows = 0

    def write(self, row: Mapping[str, Any]) -> None:
        self._writer.writerow(self._layout.row(row, self._extra))
        self.rows += 1

    def close(self) -> FileEntry:
        self.sink.rows = self.rows
        return self.sink.close()


def write_rows(rows: Iterable[Mapping[str, Any]], sinks: Sequence[RowSink]) -> list[FileEntry]:
    """Feed one pass of ``rows`` to every sink, close them all (each even when another
    failed) and return their entries in order."""
    try:
        for row in rows:
            for sink in sinks:
                sink.write(row)
    except BaseException:
        close_all(sinks, raise_failure=False)
        raise
    return close_all(sinks)


def close_all(sinks: Sequence[Any], *, raise_failure: bool = True) -> list[FileEntry]:
    """Close every sink, each even when another failed, and return their entries in order.
    The first failure to close is raised once all are closed, unless ``raise_failure`` is off
    (the pass that fed them failed, and its error is the one to raise)."""
    entries: list[FileEntry] = []
    failure: BaseException | None = None
    for sink in sinks:
        try:
            entries.append(sink.close())
        except BaseException as error:
            failure = failure or error
    if failure is not None and raise_failure:
        raise failure
    return entries
