"""The historic ratings import's bulk path on PostgreSQL (ratings.historic uses it): the file
goes through COPY into a staging table, is checked by set-based statements and is written by
the engine's bulk historic import (``annotation.api.historic_values_import``), with no Python
object per rating.

It takes only plain files and gives up (``None``, having written nothing) on anything else, so
that the per-row path (``ratings.importing.parse_ratings``) handles it and reports every
problem by line as before: a CSV (comma) or TSV file whose header names only ``pair_id``,
``order``, ``connective``, ``rating`` and optionally ``rater`` (ratings.importing's header
rules), where every row names an existing item by its exact key, ``order`` is AB or BA, the
connective is in lower case, the rating is a whole number on the scale written as digits, the
pair id, connective and rater are printable ASCII without quotes, backslashes or stray spaces,
no named rater rates an item twice (in the file or in an earlier import), and the file has a
row. Any such row that the per-row path would accept is stored identically by both paths
(tests/ratings/test_historic_bulk.py); a file with any other row goes the per-row way, which
stores or refuses it as it always did.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from django.db import DatabaseError, connection, transaction

from annotation import api as engine
from annotation.models import Annotation, Item, ItemStage
from ratings import importing
from ratings.importing import RatingRow

CHUNK = 1 << 20
_COLUMNS = ("pair_id", "order", "connective", "rater", "rating")
_REQUIRED = {"pair_id", "order", "connective", "rating"}
ENGINE_STAGING = "ratings_historic_bulk"
_RAW = "ratings_historic_raw"
# Text the per-row path reads unchanged and the fingerprint writes without JSON escapes, as one
# regular expression per field: printable ASCII but the quote and the backslash
# ([]!#-[^-~]: "]", "!", "#" to "[", "^" to "~"), words separated by single spaces, no leading
# or trailing space; empty allowed (the join with the items refuses an empty key part).
_WORD = "[]!#-[^-~]"
_PLAIN = f"^({_WORD}+( {_WORD}+)*)?$"
_NO_SPACE = f"^{_WORD}*$"


class _GiveUp(Exception):
    """The bulk path does not take this file (module docstring); roll back its savepoint."""


def _chunks(content: bytes | str | IO[bytes]) -> Iterator[bytes]:
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogatepass")
    if isinstance(content, bytes | bytearray):
        view = memoryview(content)
        for start in range(0, len(view), CHUNK):
            yield bytes(view[start : start + CHUNK])
        return
    content.seek(0)
    while chunk := content.read(CHUNK):
        yield chunk


def _columns(header: bytes, filename: str) -> tuple[bytes, list[str]]:
    """The delimiter and normalised column names of a plain header, else ``_GiveUp``."""
    suffix = Path(filename).suffix.lower()
    try:
        text = header.removeprefix(importing.UTF8_BOM).decode("ascii").rstrip("\r")
    except UnicodeDecodeError:
        raise _GiveUp from None
    delimiter = {".tsv": "\t", ".csv": ","}.get(suffix)
    if delimiter is None or '"' in text or any(c in text for c in ";\t," if c != delimiter):
        raise _GiveUp
    names = [importing._normalise_header(name) for name in text.split(delimiter)]
    if len(set(names)) != len(names) or not _REQUIRED <= set(names) <= set(_COLUMNS):
        raise _GiveUp
    return delimiter.encode(), names


def ratings_file_stage(
    *,
    content: bytes | str | IO[bytes],
    filename: str,
    project_id: int,
    historic_stage_id: int | None,
    scale: tuple[int, int],
) -> tuple[int, str] | None:
    """Check a historic ratings file and fill the engine's staging table with its ratings
    (module docstring), inside the caller's transaction. Returns (ratings, content
    fingerprint: ``importing.ratings_fingerprint`` of the same rows), or ``None`` — nothing
    staged — when the file is one the per-row path must read."""
    try:
        with transaction.atomic():
            return _stage(content, filename, project_id, historic_stage_id, scale)
    except (_GiveUp, DatabaseError):
        return None
    finally:
        if not isinstance(content, bytes | bytearray | str):
            content.seek(0)


def _stage(
    content: bytes | str | IO[bytes],
    filename: str,
    project_id: int,
    historic_stage_id: int | None,
    scale: tuple[int, int],
) -> tuple[int, str]:
    chunks = _chunks(content)
    first = b""
    for chunk in chunks:
        first += chunk
        if b"\n" in first:
            break
    header, newline, rest = first.partition(b"\n")
    if not newline:
        raise _GiveUp
    delimiter, names = _columns(header, filename)
    q = connection.ops.quote_name
    raw_columns = ", ".join(q(name) for name in names)
    with engine.bulk_work_mem(), connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {_RAW}")  # left by a file that gave up
        cursor.execute(
            f"CREATE TEMPORARY TABLE {_RAW} (ordinal bigint GENERATED ALWAYS AS IDENTITY, "
            + ", ".join(f"{q(name)} text" for name in names)
            + ") ON COMMIT DROP"
        )
        with cursor.copy(
            f"COPY {_RAW} ({raw_columns}) FROM STDIN (FORMAT csv, DELIMITER %s)",
            [delimiter.decode()],
        ) as copy:
            copy.write(rest)
            for chunk in chunks:
                copy.write(chunk)
        rows = cursor.rowcount
        if rows <= 0:
            raise _GiveUp
        cursor.execute(f"ANALYZE {_RAW}")  # temporary tables are never analysed on their own
        staging = engine.staging_create(ENGINE_STAGING)
        rater = "coalesce(r.rater, '')" if "rater" in names else "''"
        key = "r.pair_id || ':' || r.\"order\" || ':' || r.connective"
        low, high = scale
        checks = (
            "r.pair_id ~ %(no_space)s AND r.\"order\" IN ('AB', 'BA')"
            " AND r.connective ~ %(plain)s AND r.connective = lower(r.connective)"
            f" AND {rater} ~ %(plain)s AND r.rating ~ '^[0-9]{{1,9}}$'"
        )
        cursor.execute(
            f"INSERT INTO {staging} (ordinal, item_id, external_rater, value)"
            f" SELECT r.ordinal, i.id, {rater}, r.rating::integer FROM {_RAW} r"
            f" JOIN {q(Item._meta.db_table)} i ON i.project_id = %(project)s"
            f" AND i.purpose = %(purpose)s AND i.external_id = {key}"
            f" WHERE CASE WHEN {checks} THEN r.rating::integer BETWEEN %(low)s AND %(high)s"
            " ELSE false END",
            {
                "project": project_id, "purpose": Item.Purpose.REGULAR, "low": low,
                "high": high, "plain": _PLAIN, "no_space": _NO_SPACE,
            },
        )  # fmt: skip
        if cursor.rowcount != rows:
            raise _GiveUp
        if historic_stage_id is not None:
            cursor.execute(
                f"SELECT 1 FROM {staging} s JOIN {q(ItemStage._meta.db_table)} x"
                " ON x.stage_id = %s AND x.item_id = s.item_id"
                f" JOIN {q(Annotation._meta.db_table)} a ON a.item_stage_id = x.id"
                " AND a.external_rater = s.external_rater WHERE s.external_rater <> '' LIMIT 1",
                [historic_stage_id],
            )
            if cursor.fetchone():
                raise _GiveUp
        fingerprint = _fingerprint(cursor, key, rater)
        cursor.execute(f"DROP TABLE {_RAW}")
    return rows, fingerprint


def _fingerprint(cursor, key: str, rater: str) -> str:
    """``importing.ratings_fingerprint`` computed by the database from the checked raw rows,
    or ``_GiveUp`` when a named rater rates an item twice in the file: for plain text (module
    docstring) ``json.dumps([key, rater, rating])`` is the concatenation below, and byte order
    (COLLATE "C") is Python's order of ASCII strings. One sort serves both: the window's
    (a repeat is a row equal to the one before it in item key and rater); the aggregate's own
    ORDER BY, over rows that come sorted, is checked in one pass."""
    order = 'k COLLATE "C", rater COLLATE "C", v'
    cursor.execute(
        "SELECT encode(sha256(convert_to(string_agg('[\"' || k || '\", \"' || rater"
        f" || '\", ' || v || E']\\n', '' ORDER BY {order}), 'UTF8')), 'hex'),"
        " coalesce(bool_or(repeat), false) FROM (SELECT k, rater, v, rater <> ''"
        " AND k = lag(k) OVER w AND rater = lag(rater) OVER w AS repeat"
        f" FROM (SELECT {key} AS k, {rater} AS rater, r.rating::integer AS v FROM {_RAW} r) c"
        f" WINDOW w AS (ORDER BY {order}) ORDER BY {order}) lines"
    )
    fingerprint, repeat = cursor.fetchone()
    if repeat:
        raise _GiveUp
    return fingerprint


def ratings_stage(ratings: Sequence[RatingRow], item_ids: Mapping[str, int]) -> str:
    """Fill the engine's staging table with checked ratings (``historic_ratings_create``'s
    input), by COPY; returns the table's name."""
    staging = engine.staging_create(ENGINE_STAGING)
    with connection.cursor() as cursor:
        with cursor.copy(
            f"COPY {staging} (ordinal, item_id, external_rater, value) FROM STDIN"
        ) as copy:
            for ordinal, rating in enumerate(ratings):
                copy.write_row(
                    (ordinal, item_ids[rating.item_key], rating.rater, int(rating.rating))
                )
    return staging
