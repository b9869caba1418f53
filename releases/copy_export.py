"""annotations.jsonl and annotations.csv written by PostgreSQL itself.

The largest files of a release are built as text in SQL, one line per annotation, and streamed
with ``COPY (SELECT line …) TO STDOUT`` through psycopg's ``cursor.copy()`` straight into the
file (hashed as it is written): no row ever becomes a Python object, and memory stays flat
whatever the row count.

The lines are the Python path's (``release_annotation_rows`` → ``write_jsonl`` /
``write_csv``): same keys in the same order, the same values when parsed, Python's spelling of
every scalar (``json.dumps`` strings, ``4.0`` floats, ``isoformat()`` timestamps, ``R0001``
pseudonyms), Python's CSV quoting and ``\r\n``. The one difference: the payload (and a vote
that is an object or array) is PostgreSQL's own JSON text, ``{"value": "keep", "n": 0.00001}``
where Python writes ``{"value":"keep","n":1e-05}`` (a space after ``:`` and ``,``, numbers as
stored). Removing those spaces exactly (not inside strings) halved the speed on payloads with
prose; annotations.jsonl on PostgreSQL has always carried the database's text.
``release_annotation_lines`` (the Python fallback on PostgreSQL) writes the same bytes.

* JSONL: ``FORMAT csv`` with a delimiter and a quote byte (0x01, 0x02) that JSON text from
  PostgreSQL never holds (``to_json`` and jsonb's text output escape every control
  character), so the one column is never quoted and arrives verbatim with its ``\n``
  (checked as the stream goes by: a quote byte or an empty line raises).
* CSV: the line is built with Python's minimal quoting (a cell holding ``,``, ``"``, ``\r``
  or ``\n`` is quoted, quotes doubled; an empty or absent value is an empty cell) and its
  ``\r\n`` ending, and read with ``FORMAT binary`` (``writers.copy_binary_values``): COPY's
  own CSV ends lines with ``\n`` and its text format escapes backslashes.

Rater pseudonyms are numbered in SQL by each rater's first (smallest) annotation id among the
exported rows, exactly as the Python path numbers them as it meets them. Only kinds whose vote
is ``payload["value"]`` (those that keep ``TaskKind.vote_value``) can be written this way:
``copy_export_supported`` says whether a project qualifies (PostgreSQL, every stage's kind).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from django.db import connection, transaction

from annotation.kinds import KINDS, TaskKind
from annotation.models import Annotation, Item, ItemStage, Project, Stage
from releases.writers import FileEntry, copy_binary_values, write_blocks

#: COPY options under which a line of JSON text is never quoted (see the module docstring).
JSONL_COPY_OPTIONS = "FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02'"
_JSONL_QUOTE = b"\x02"


def copy_export_supported(project: Project) -> bool:
    """Whether annotations.jsonl/.csv of ``project`` can be written by COPY: PostgreSQL, and
    every stage's kind votes with ``payload["value"]`` (a kind overriding ``vote_value`` needs
    Python for each row)."""
    if connection.vendor != "postgresql":
        return False
    kinds = Stage.objects.filter(project=project).values_list("kind", flat=True)
    return all(_votes_with_value(KINDS.get(kind)) for kind in kinds)


def _votes_with_value(kind: TaskKind | None) -> bool:
    return kind is None or kind.vote_field == "value"


# --- SQL for Python's spelling of values ------------------------------------------------------

#: ``datetime.isoformat()`` of an aware UTC timestamp: microseconds only when not zero.
ISO_CREATED_AT = (
    """to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') """
    "|| CASE WHEN date_trunc('second', a.created_at) = a.created_at THEN '' "
    "ELSE to_char(a.created_at AT TIME ZONE 'UTC', '.US') END || '+00:00'"
)


def python_float(expression: str) -> str:
    """SQL text of a float8 as Python's ``repr``/``json.dumps`` spells it (NULL stays NULL).

    Both print the shortest digits that read back exactly (PostgreSQL with
    ``extra_float_digits = 1``, set by the caller), but Python adds ``.0`` to whole numbers and
    switches to exponents at 1e16 where PostgreSQL does at 1e15; ``NaN``/``Infinity`` agree.
    From 1e16 up the two may pick different shortest spellings of one number when two tie
    (``9.999999999999999e+22`` for Python's ``1e+23``; about 1 in 5,000 such numbers): the
    same value when read, and 1e16 seconds are 300 million years."""
    x = expression
    return (
        f"CASE WHEN {x} = trunc({x}) AND abs({x}) < 1e15 THEN {x}::text || '.0' "
        f"WHEN abs({x}) >= 1e15 AND abs({x}) < 1e16 THEN CASE WHEN {x} = trunc({x}) "
        f"THEN {x}::bigint::text || '.0' ELSE {x}::text::numeric::text END "
        f"ELSE {x}::text END"
    )


def csv_cell(text: str) -> str:
    """SQL text of a cell as Python's ``csv`` module writes it (QUOTE_MINIMAL, ``\\r\\n``)."""
    return (
        f"CASE WHEN ({text}) ~ '[\",\\r\\n]' "
        f"THEN '\"' || replace({text}, '\"', '\"\"') || '\"' ELSE {text} END"
    )


def pseudonym(prefix: str, number: str) -> str:
    """SQL text of ``f"{prefix}{number:04d}"`` (at least four digits, more when needed)."""
    return f"{prefix} || lpad({number}::text, greatest(4, length({number}::text)), '0')"


#: A row's parts, each computed once (see ``_select``); the lines below are made of them.
_PARTS = {
    "external_id": "i.external_id",
    "stage": "st.slug",
    "rater": "coalesce(p.code, e.code)",
    # The vote as JSON; as a CSV cell: a string bare, None (or absent) empty, JSON otherwise.
    "value_json": "coalesce((a.payload -> 'value')::text, 'null')",
    "value_text": "coalesce(a.payload ->> 'value', '')",
    "payload": "a.payload::text",
    "seconds": python_float("a.seconds_spent"),
    "created_at": ISO_CREATED_AT,
}

JSONL_LINE = (
    """'{"external_id":' || to_json(x.external_id)::text"""
    """ || ',"stage":' || to_json(x.stage)::text"""
    """ || ',"rater":"' || x.rater || '","value":' || x.value_json"""
    """ || ',"payload":' || x.payload"""
    """ || ',"seconds_spent":' || coalesce(x.seconds, 'null')"""
    """ || ',"created_at":"' || x.created_at || '"}'"""
)

#: SQL text of each annotations.csv cell, by column name.
CSV_CELLS = {
    "external_id": csv_cell("x.external_id"),
    "stage": csv_cell("x.stage"),
    "rater": "x.rater",
    "value": csv_cell("x.value_text"),
    "payload": csv_cell("x.payload"),
    "seconds_spent": "coalesce(x.seconds, '')",
    "created_at": "x.created_at",
}


def _csv_line(columns: Sequence[str]) -> str:
    unknown = [column for column in columns if column not in CSV_CELLS]
    if unknown or not columns:
        raise ValueError(f"annotations.csv has no column {unknown} (it has {list(CSV_CELLS)})")
    return " || ',' || ".join(CSV_CELLS[column] for column in columns) + " || E'\\r\\n'"


def _select(line: str) -> str:
    """The lines of every annotation of the project's released items, in id order. The
    parameters are bound by psycopg on the client (COPY takes none of its own).

    The parts of a row are computed in a subquery kept apart by ``OFFSET 0``: merged into the
    outer query, a part used twice in a line (a CSV cell is tested, then quoted) would be
    computed twice."""
    annotation = Annotation._meta.db_table
    item_stage = ItemStage._meta.db_table
    item = Item._meta.db_table
    stage = Stage._meta.db_table
    exported = f"""
        FROM {annotation} a
        JOIN {item_stage} s ON s.id = a.item_stage_id
        JOIN {item} i ON i.id = s.item_id
        WHERE s.stage_id = ANY(%(stages)s) AND i.status = ANY(%(statuses)s)"""
    parts = ",\n".join(f"{sql} AS {name}" for name, sql in _PARTS.items())
    return f"""
        WITH raters AS MATERIALIZED (
            SELECT annotator_id, external_rater,
                   {pseudonym("CASE WHEN annotator_id IS NULL THEN 'E' ELSE 'R' END", "number")}
                       AS code
            FROM (
                SELECT a.annotator_id,
                       CASE WHEN a.annotator_id IS NULL THEN a.external_rater END
                           AS external_rater,
                       row_number() OVER (PARTITION BY a.annotator_id IS NULL
                                          ORDER BY min(a.id)) AS number
                {exported}
                GROUP BY 1, 2
            ) numbered
        )
        SELECT {line}
        FROM (
            SELECT a.id, {parts}
            FROM {annotation} a
            JOIN {item_stage} s ON s.id = a.item_stage_id
            JOIN {item} i ON i.id = s.item_id
            JOIN {stage} st ON st.id = s.stage_id
            LEFT JOIN raters p ON p.annotator_id = a.annotator_id
            LEFT JOIN raters e ON a.annotator_id IS NULL AND e.annotator_id IS NULL
                              AND e.external_rater = a.external_rater
            WHERE s.stage_id = ANY(%(stages)s) AND i.status = ANY(%(statuses)s)
            OFFSET 0
        ) x
        ORDER BY x.id"""


# --- Writing ----------------------------------------------------------------------------------


def _copy(
    project: Project,
    *,
    statuses: Iterable[str],
    line: str,
    options: str,
    path: Path,
    read: Callable[[Iterable[memoryview]], Iterable[bytes | memoryview]],
    header: bytes = b"",
) -> FileEntry:
    stages = list(Stage.objects.filter(project=project).values_list("pk", flat=True))
    params: dict[str, Any] = {"stages": stages, "statuses": list(statuses)}
    names = list(COPY_SETTINGS)
    change = "SELECT " + ", ".join("set_config(%s, %s, true)" for _ in names)
    with transaction.atomic(), connection.cursor() as cursor:
        # For this COPY only: restored after it, should a caller's transaction enclose this one.
        cursor.execute("SELECT " + ", ".join("current_setting(%s)" for _ in names), names)
        saved = cursor.fetchone()
        cursor.execute(change, [part for name in names for part in (name, COPY_SETTINGS[name])])
        raw = cursor.cursor
        with raw.copy(f"COPY ({_select(line)}) TO STDOUT ({options})", params) as copy:
            entry = write_blocks(read(copy), path, header=header)
        rows = raw.rowcount  # from the server's "COPY n"
        cursor.execute(change, [part for pair in zip(names, saved, strict=True) for part in pair])
    return FileEntry(entry.name, entry.sha256, entry.bytes, rows)


#: Settings for the COPY. Python's float spelling needs the shortest exact digits (the
#: default, made sure of); JIT compilation costs more than it saves here; and the rater table's
#: rough size estimate would lead the planner into a merge join fed by an index scan over the
#: whole annotation table in annotator order (random reads; a third slower when cached).
COPY_SETTINGS = {"extra_float_digits": "1", "jit": "off", "enable_mergejoin": "off"}


def _checked_jsonl(blocks: Iterable[memoryview]) -> Iterator[bytes]:
    """The blocks of the JSONL COPY, refusing a quoted line (it held a byte JSON text from
    PostgreSQL never holds) and an empty one (a NULL line: some part of it was NULL)."""
    previous_ended = True  # the stream starts at the start of a line
    for block in blocks:
        data = bytes(block)
        if not data:
            continue
        if _JSONL_QUOTE in data:
            raise ValueError("COPY quoted a JSON line; the export would be corrupt")
        if (previous_ended and data[0] == 10) or b"\n\n" in data:
            raise ValueError("COPY wrote an empty JSON line (a NULL line)")
        previous_ended = data[-1] == 10
        yield data


def copy_annotations_jsonl(
    project: Project, path: str | Path, *, statuses: Iterable[str]
) -> FileEntry:
    """Write annotations.jsonl of ``project`` (the annotations of its items whose status is in
    ``statuses``) by COPY; the caller checks ``copy_export_supported`` first."""
    return _copy(project, statuses=statuses, line=JSONL_LINE, options=JSONL_COPY_OPTIONS,
                 path=Path(path), read=_checked_jsonl)  # fmt: skip


def copy_annotations_csv(
    project: Project, path: str | Path, *, statuses: Iterable[str], columns: Sequence[str]
) -> FileEntry:
    """Write annotations.csv of ``project`` by COPY: a header of ``columns`` (any of
    external_id, stage, rater, value, payload, seconds_spent, created_at, in any order), then
    one line per annotation."""
    header = io.StringIO()
    csv.writer(header, lineterminator="\r\n").writerow(columns)
    return _copy(project, statuses=statuses, line=_csv_line(columns), options="FORMAT binary",
                 path=Path(path), read=copy_binary_values,
                 header=header.getvalue().encode("utf-8"))  # fmt: skip
