"""A release's zip assembled from members already deflated while they were written
(``releases.sinks.ByteSink(deflate=True)``), so that no byte is compressed twice and the
compression ran beside the database rather than after it.

Written by hand because no zip library takes a deflate stream made elsewhere (``zipfile``
compresses what it is given). The format is the one ``releases.writers.build_zip`` writes:
entries in sorted name order, the 1980-01-01 timestamp, Unix permissions 0644, no data
descriptors (sizes and CRC-32 are known up front), ZIP64 records exactly where a size, an
offset or the entry count needs them. Members given as plain files are deflated here (small
ones: the datasheet, the manifest, a layout's files) or stored as they are (``STORED_SUFFIXES``:
Parquet, already compressed). tests/releases/test_zip_assembly.py reads the result back with
``zipfile`` (CRC-checked) in both the plain and the ZIP64 shape.
"""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from releases.sinks import BLOCK, DEFLATE_LEVEL, Deflated
from releases.writers import FileEntry, HashingWriter

ZIP64_LIMIT = 0xFFFFFFFF
ZIP_FILE_MODE = 0o644
DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01
DOS_TIME = 0
STORED_SUFFIXES = (".parquet",)
DEFLATED, STORED = 8, 0


@dataclass(frozen=True)
class _Entry:
    name: bytes
    flags: int
    method: int
    crc32: int
    compressed: int
    size: int
    offset: int


def _deflate_file(path: Path, target: Path) -> Deflated:
    compressor = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, -15)
    crc, size, compressed = 0, 0, 0
    with open(path, "rb") as source, open(target, "wb") as out:
        while block := source.read(BLOCK):
            crc = zlib.crc32(block, crc)
            size += len(block)
            data = compressor.compress(block)
            compressed += len(data)
            out.write(data)
        data = compressor.flush()
        compressed += len(data)
        out.write(data)
    return Deflated(target, crc, size, compressed)


def _stored(path: Path) -> Deflated:
    crc, size = 0, 0
    with open(path, "rb") as source:
        while block := source.read(BLOCK):
            crc = zlib.crc32(block, crc)
            size += len(block)
    return Deflated(path, crc, size, size)


def _local_header(entry: _Entry, zip64: bool) -> bytes:
    extra = struct.pack("<HHQQ", 1, 16, entry.size, entry.compressed) if zip64 else b""
    sizes = (ZIP64_LIMIT, ZIP64_LIMIT) if zip64 else (entry.compressed, entry.size)
    return (
        struct.pack(
            "<IHHHHHIIIHH",
            0x04034B50,
            45 if zip64 else 20,
            entry.flags,
            entry.method,
            DOS_TIME,
            DOS_DATE,
            entry.crc32,
            *sizes,
            len(entry.name),
            len(extra),
        )
        + entry.name
        + extra
    )


def _central_header(entry: _Entry, limit: int) -> bytes:
    values = []
    size, compressed, offset = entry.size, entry.compressed, entry.offset
    if size >= limit:
        values.append(size)
        size = ZIP64_LIMIT
    if compressed >= limit:
        values.append(compressed)
        compressed = ZIP64_LIMIT
    if offset >= limit:
        values.append(offset)
        offset = ZIP64_LIMIT
    extra = struct.pack(f"<HH{len(values)}Q", 1, 8 * len(values), *values) if values else b""
    version = 45 if values else 20
    return (
        struct.pack(
            "<IHHHHHHIIIHHHHHII",
            0x02014B50,
            (3 << 8) | version,  # made by Unix, whatever machine builds the release
            version,
            entry.flags,
            entry.method,
            DOS_TIME,
            DOS_DATE,
            entry.crc32,
            compressed,
            size,
            len(entry.name),
            len(extra),
            0,
            0,
            0,
            (0o100000 | ZIP_FILE_MODE) << 16,
            offset,
        )
        + entry.name
        + extra
    )


def assemble_zip(
    members: Mapping[str, Deflated | str | os.PathLike[str]],
    zip_path: str | os.PathLike[str],
    *,
    zip64_limit: int = ZIP64_LIMIT,
) -> FileEntry:
    """Write the zip of ``members`` ({name in the zip: a ``Deflated`` stream, or a plain file
    deflated or stored here}); return the zip's entry. ``zip64_limit`` is lowered by tests
    only, to write the ZIP64 shape with small files."""
    zip_path = Path(zip_path)
    scratch = zip_path.with_name(zip_path.name + ".member")
    entries: list[_Entry] = []
    with open(zip_path, "wb") as raw:
        sink = HashingWriter(raw)
        offset = 0
        for name in sorted(members):
            source = members[name]
            if isinstance(source, Deflated):
                stream, method = source, DEFLATED
            elif str(source).endswith(STORED_SUFFIXES):
                stream, method = _stored(Path(source)), STORED
            else:
                stream, method = _deflate_file(Path(source), scratch), DEFLATED
            encoded = name.encode("utf-8")
            flags = 0 if name.isascii() else 0x800  # UTF-8 names
            entry = _Entry(encoded, flags, method, stream.crc32, stream.compressed, stream.size,
                           offset)  # fmt: skip
            zip64 = stream.size >= zip64_limit or stream.compressed >= zip64_limit
            header = _local_header(entry, zip64)
            sink.write(header)
            with open(stream.path, "rb") as data:
                shutil.copyfileobj(data, sink, BLOCK)
            offset += len(header) + stream.compressed
            entries.append(entry)
        directory = b"".join(_central_header(entry, zip64_limit) for entry in entries)
        sink.write(directory)
        count, size, start = len(entries), len(directory), offset
        if count >= 0xFFFF or size >= zip64_limit or start >= zip64_limit:
            end64 = offset + size
            sink.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, (3 << 8) | 45, 45, 0, 0,
                                   count, count, size, start))  # fmt: skip
            sink.write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
            count, size, start = min(count, 0xFFFF), min(size, ZIP64_LIMIT), min(start, ZIP64_LIMIT)
        sink.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, size, start, 0))
    scratch.unlink(missing_ok=True)
    return FileEntry(zip_path.name, sink.sha256, sink.bytes_written, None)
