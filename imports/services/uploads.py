"""Creating an import batch from an upload: the file stored and hashed while it is copied, its
size checked against ``RUNGWISE_UPLOAD_MAX_BYTES``, its format and options checked. Nothing is
read row by row here; ``imports.services.run`` does that."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, cast

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.db import transaction

from annotation.errors import ApplicationError
from annotation.models import Project
from annotation.values import shown
from imports.core.pipeline import DUPLICATE_POLICIES
from imports.core.readers import EXTENSIONS, FORMATS
from imports.models import ImportBatch

LAYOUTS = ("rows", "release")
MAX_FILENAME = 255
# Control characters and unpaired surrogates: never part of a file or column name.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def inline_max_bytes() -> int:
    return int(getattr(settings, "RUNGWISE_IMPORT_INLINE_MAX_BYTES", 1 << 20))


def upload_max_bytes() -> int:
    """The largest file any import takes (``settings.RUNGWISE_UPLOAD_MAX_BYTES``)."""
    return int(settings.RUNGWISE_UPLOAD_MAX_BYTES)


def _format_for(filename: str, fmt: str | None) -> str:
    if fmt:
        if fmt not in FORMATS:
            raise ApplicationError(
                f"Unknown file format {fmt!r}; use one of {', '.join(FORMATS)}.", {"format": fmt}
            )
        return fmt
    extension = Path(filename).suffix.lower()
    if extension not in EXTENSIONS:
        raise ApplicationError(
            f"Cannot tell the format of {filename!r} from its name; name it .csv, .jsonl or "
            f".json, or choose the format.",
            {"format": "csv, jsonl or json"},
        )
    return EXTENSIONS[extension]


def _clean_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    options = dict(options or {})
    policy = options.get("duplicate_policy") or "reject"
    if policy not in DUPLICATE_POLICIES:
        raise ApplicationError(
            f'Unknown duplicate policy {policy!r}: choose "reject" (ids already in the project '
            f'are errors) or "update" (they replace the stored items).',
            {"duplicate_policy": list(DUPLICATE_POLICIES)},
        )
    layout = options.get("layout") or "rows"
    if layout not in LAYOUTS:
        raise ApplicationError(
            f"Unknown layout {layout!r}; use one of {', '.join(LAYOUTS)}.",
            {"layout": list(LAYOUTS)},
        )
    clean = {"duplicate_policy": policy, "layout": layout}
    for key in (
        "group_field",
        "purpose_field",
        "source_field",
        "source",
        "array_key",
        "gold_field",
    ):
        value = options.get(key)
        if value not in (None, ""):
            if not isinstance(value, str) or len(value) > 200:
                raise ApplicationError(f"Option {key} must be a short text.", {key: "text"})
            if _CONTROL.search(value):
                # The options are stored as JSON, which PostgreSQL refuses with a NUL inside.
                raise ApplicationError(
                    f"Option {key} holds an invisible control character ({shown(value, 40)}); "
                    f"type the column name again.",
                    {key: "control character"},
                )
            clean[key] = value
    return clean


@transaction.atomic
def import_batch_create(
    *,
    project: Project,
    user: AbstractBaseUser | None,
    fileobj: IO[bytes],
    filename: str,
    fmt: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> ImportBatch:
    """Store an uploaded file as a pending ImportBatch (file saved, SHA-256 and size recorded).

    ``options``: ``duplicate_policy`` ("reject" | "update"), ``layout`` ("rows" | "release"),
    and for the default item mapper ``group_field``, ``purpose_field``, ``source_field``,
    ``source``, ``gold_field`` (imports.services.mapping). Run it with ``import_batch_start``.
    """
    filename = os.path.basename(str(filename or "").replace("\\", "/"))
    filename = _CONTROL.sub("", filename)[:MAX_FILENAME]
    if not filename:
        raise ApplicationError("Choose a file to import.", {"file": "required"})
    fmt = _format_for(filename, fmt)
    clean_options = _clean_options(options)
    if clean_options["layout"] == "release" and fmt == "csv":
        raise ApplicationError(
            "A release is re-imported from its items.jsonl; CSV keeps no types, so it cannot "
            "reproduce the items exactly.",
            {"layout": "release needs JSON Lines or JSON"},
        )
    digest = hashlib.sha256()
    size = 0

    class _Hashing:
        """Hash the upload while the storage copies it."""

        def __init__(self, raw: IO[bytes]) -> None:
            self.raw = raw

        def read(self, n: int = -1) -> bytes:
            nonlocal size
            data = self.raw.read(n)
            if isinstance(data, str):
                raise ApplicationError("The upload must be binary.", {"file": "binary"})
            digest.update(data)
            size += len(data)
            if size > limit:  # a stream that did not say its size
                raise ApplicationError(
                    f"{filename} is larger than {limit / 1e6:,.0f} MB, the most an import takes "
                    f"(RUNGWISE_UPLOAD_MAX_BYTES). Split the file.",
                    {"file": "too large", "max_bytes": limit},
                    status=413,
                )
            return data

        def __getattr__(self, name):
            return getattr(self.raw, name)

    limit = upload_max_bytes()
    declared = getattr(fileobj, "size", None)
    if declared is None and hasattr(fileobj, "seek") and hasattr(fileobj, "tell"):
        declared = fileobj.seek(0, os.SEEK_END)
    if declared is not None and declared > limit:
        raise ApplicationError(
            f"{filename} is {declared / 1e6:,.1f} MB; imports take at most "
            f"{limit / 1e6:,.0f} MB (RUNGWISE_UPLOAD_MAX_BYTES). Split the file.",
            {"file": "too large", "max_bytes": limit},
            status=413,
        )
    if hasattr(fileobj, "seek"):
        fileobj.seek(0)
    author: Any = user if user is not None and user.is_authenticated else None
    batch = ImportBatch(
        project=project,
        created_by=author,
        filename=filename,
        format=fmt,
        options=clean_options,
    )
    batch.file.save(filename, File(cast(IO[bytes], _Hashing(fileobj)), name=filename), save=False)
    if size == 0:
        batch.file.delete(save=False)
        raise ApplicationError(
            f"{filename} is empty: there is nothing to import.", {"file": "empty"}
        )
    batch.sha256 = digest.hexdigest()
    batch.file_size = size
    batch.save()
    return batch
