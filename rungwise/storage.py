"""Files on an S3-compatible object store: the ``default`` storage when RUNGWISE_S3_BUCKET is set
(rungwise/settings.py, "Files on object storage"; docs/deployment.md, "Files").

Every file the site keeps (import uploads, release archives) is written and read through
Django's storage API, so any web or worker host reads what another wrote. django-storages'
``S3Storage`` writes with boto3's transfer manager (multipart above ``multipart_threshold``,
part by part, never the whole file in memory). Its reads, though, download the whole object into
a ``SpooledTemporaryFile`` that by default never rolls over to disk: a 2 GB release would sit in
a web process's memory. Here a file opened for reading is a seekable stream of ranged GETs
(``RangedObjectReader``): a download streams, and ``zipfile`` reads a release's central
directory and the one member it opens, not the archive.
"""

from __future__ import annotations

import io
from typing import IO, Any, cast

from botocore.exceptions import ClientError
from django.core.files.base import File
from storages.backends.s3 import S3Storage
from storages.utils import clean_name

#: The first GET after a seek asks for this many bytes (a zip's central directory, a header);
#: each further sequential GET asks for twice the previous, up to ``MAX_RANGE``. The bytes of a
#: range are streamed off the socket as they are read, so a range's size costs no memory.
FIRST_RANGE = 256 * 1024
MAX_RANGE = 64 * 1024 * 1024
#: What a reader keeps in memory: the ``io.BufferedReader`` buffer in front of the ranges.
READ_BUFFER = 1024 * 1024


class RangedObjectReader(io.RawIOBase):
    """A seekable, read-only raw stream over one object, read with ranged GetObject calls.

    Sequential reads drain one open response (its range grows from ``FIRST_RANGE`` to
    ``MAX_RANGE``); a seek elsewhere drops it, and the next read opens a range at the new
    position. Memory: whatever the caller asks ``readinto`` for, never the object."""

    def __init__(self, client: Any, bucket: str, key: str, size: int) -> None:
        super().__init__()
        self._client = client
        self._bucket = bucket
        self._key = key
        self._size = size
        self._position = 0
        self._body: Any = None
        self._body_end = 0  # the position just past the open response's last byte
        self._next_range = FIRST_RANGE

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            target = offset
        elif whence == io.SEEK_CUR:
            target = self._position + offset
        elif whence == io.SEEK_END:
            target = self._size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if target < 0:
            raise ValueError(f"negative seek position {target}")
        if target != self._position:
            self._drop_body()
            self._next_range = FIRST_RANGE
            self._position = target
        return self._position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._position >= self._size or not len(view):
            return 0
        if self._body is None or self._position >= self._body_end:
            self._open_range()
        wanted = min(len(view), self._body_end - self._position)
        data = self._body.read(wanted)
        if not data:  # the store ended the response early: ask again from here
            self._drop_body()
            return self.readinto(view)
        view[: len(data)] = data
        self._position += len(data)
        return len(data)

    def close(self) -> None:
        self._drop_body()
        super().close()

    def _open_range(self) -> None:
        self._drop_body()
        last = min(self._size, self._position + self._next_range) - 1
        response = self._client.get_object(
            Bucket=self._bucket, Key=self._key, Range=f"bytes={self._position}-{last}"
        )
        self._body = response["Body"]
        self._body_end = last + 1
        self._next_range = min(self._next_range * 2, MAX_RANGE)

    def _drop_body(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None


class ObjectFile(File):
    """A stored object opened for reading: a ``File`` over a buffered ``RangedObjectReader``.
    ``open()`` after ``close()`` starts a new reader (a FieldFile opens its file again)."""

    def __init__(self, storage: ObjectStorage, name: str, mode: str) -> None:
        self._storage = storage
        self._mode = mode
        super().__init__(self._reader(name), name=name)

    def _reader(self, name: str) -> IO[Any]:
        stored = self._storage._normalize_name(clean_name(name))
        try:
            head = self._storage.connection.meta.client.head_object(
                Bucket=self._storage.bucket_name, Key=stored
            )
        except ClientError as error:
            if error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                raise FileNotFoundError(f"File does not exist: {name}") from error
            raise
        raw = RangedObjectReader(
            self._storage.connection.meta.client,
            self._storage.bucket_name,
            stored,
            int(head["ContentLength"]),
        )
        buffered = io.BufferedReader(raw, buffer_size=READ_BUFFER)
        if "b" in self._mode:
            return cast(IO[Any], buffered)
        return cast(IO[Any], io.TextIOWrapper(buffered, encoding="utf-8"))

    @property
    def size(self) -> int:
        raw = self.file
        assert raw is not None  # set in __init__ and open()
        position = raw.tell()
        end = raw.seek(0, io.SEEK_END)
        raw.seek(position)
        return end

    def open(self, mode: str | None = None, *args: Any, **kwargs: Any) -> ObjectFile:
        if mode and mode != self._mode:
            raise ValueError("An object opened for reading cannot be opened again to write.")
        if self.closed:
            self.file = self._reader(self.name or "")
        else:
            self.seek(0)
        return self


class _ReadOnce:
    """A file being saved, offered to boto3 as a stream that cannot seek. Given a seekable
    file, boto3 reads a small one twice (its checksum, then the request body); a caller that
    hashes what the storage reads (imports.services.uploads) would count it twice. Unseekable,
    every byte is read once, in order, and boto3 keeps a part in memory while it sends it."""

    closed = False

    def __init__(self, content: Any) -> None:
        self._content = content
        self.name = getattr(content, "name", None)

    def read(self, size: int = -1) -> bytes:
        return self._content.read(size)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


class ObjectStorage(S3Storage):
    """``S3Storage`` whose reads stream (``ObjectFile``) and whose writes read the content
    once (``_ReadOnce``), in parts (a multipart upload above the transfer configuration's
    threshold). Opening for writing is refused: every file here is saved whole with
    ``Storage.save`` (``FieldFile.save``)."""

    def _save(self, name: str, content: Any) -> str:
        if getattr(content, "seekable", lambda: False)():
            content.seek(0)
        return super()._save(name, _ReadOnce(content))

    def _open(self, name: str, mode: str = "rb") -> File:
        if "w" in mode or "a" in mode or "+" in mode:
            raise ValueError(f"Files on the object store are read-only once saved ({mode!r}).")
        return ObjectFile(self, name, mode)
