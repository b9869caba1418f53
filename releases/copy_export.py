"""annotations.jsonl and annotations.csv written by PostgreSQL itself.

On PostgreSQL the largest files of a release are written by the database, whatever the stages'
kinds: one ``COPY (SELECT …) TO STDOUT`` each, read block by block with psycopg's
``cursor.copy()`` straight into the file (hashed as it is written). No row ever becomes a
Python object, and memory stays flat whatever the row count. (On SQLite ``releases.services``
writes the same rows with Python.)

The rows are those of ``releases.services.release_annotation_rows`` (same columns, same order,
the same values once parsed), in PostgreSQL's own spelling:

* JSONL: one ``json_build_object(…)`` per line, keys in ``ANNOTATION_COLUMNS`` order,
  ``"key" : value`` with spaces, the payload as jsonb text, floats in their shortest exact
  digits (``12``, ``1e+15``), timestamps as ``to_json`` spells them in UTC
  (``2026-03-04T05:06:07.001+00:00``). The COPY runs as ``FORMAT csv`` with a delimiter and a
  quote byte (0x01, 0x02) that JSON text from PostgreSQL never holds (it escapes every control
  character), so the one column is never quoted and arrives verbatim with its ``\\n``
  (checked as the stream goes by: a quote byte or an empty line raises).
* CSV: COPY's own CSV (a header, minimal quoting, ``\\n`` line ends, an absent value as an
  empty cell): the vote bare when it is a JSON string, as JSON text otherwise; text cells that
  a spreadsheet would run as a formula get a leading single quote (``spreadsheet_safe_sql``,
  the SQL spelling of ``releases.writers.spreadsheet_safe``).

Each stage's vote is read in SQL as its kind declares it (``agreement.selectors.vote_sql``),
raters are numbered as ``releases.pseudonyms`` says, and names in payloads are treated as
``releases.identities`` says (its SQL spelling). tests/releases/test_copy_export.py
compares both paths row by row, parsed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.db import connection, transaction

from agreement.selectors import vote_sql
from annotation.kinds import KINDS
from annotation.models import Annotation, Item, ItemStage, Project, Stage
from annotation.sql import quoted, table
from annotation.web import spreadsheet_safe_sql  # the cell rule's SQL spelling, shared
from releases.identities import identity_rule, salt_for
from releases.pseudonyms import pseudonym_sql
from releases.writers import FileEntry, write_blocks

#: COPY options under which a line of JSON text is never quoted (see the module docstring).
JSONL_COPY_OPTIONS = "FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02'"
CSV_COPY_OPTIONS = "FORMAT csv, HEADER"
_JSONL_QUOTE = b"\x02"

#: The annotation and its item stage, as every statement here names them (aliases a and s).
_A, _S = quoted(Annotation, "a"), quoted(ItemStage, "s")

#: Settings for the COPY, restored after it. Floats in their shortest exact digits (the
#: default, made sure of); timestamps in UTC; JIT compilation costs more than it saves here;
#: and the rater table's rough size estimate would lead the planner into a merge join fed by an
#: index scan over the whole annotation table in annotator order (random reads; a third slower
#: when cached).
COPY_SETTINGS = {
    "extra_float_digits": "1",
    "TimeZone": "UTC",
    "jit": "off",
    "enable_mergejoin": "off",
}


#: SQL text of each annotations.csv cell, by column name (``x``: the row's parts, see _select).
CSV_CELLS = {
    "external_id": spreadsheet_safe_sql("x.external_id"),
    "stage": spreadsheet_safe_sql("x.stage"),
    "rater": "x.rater",
    # A string bare, NULL (no vote) empty, any other JSON as its text; a number never matches
    # the formula test (it is a plain number).
    "value": spreadsheet_safe_sql("x.vote_text"),
    "payload": "x.payload_text",
    "seconds_spent": "x.seconds_spent",
    "created_at": "x.created_at_text",
    "item_version": "x.item_version",
}

JSONL_LINE = (
    "json_build_object('external_id', x.external_id, 'stage', x.stage, 'rater', x.rater, "
    "'value', x.vote, 'payload', x.payload, 'seconds_spent', x.seconds_spent, "
    "'created_at', x.created_at, 'item_version', x.item_version)::text"
)


def _csv_columns(columns: Sequence[str]) -> str:
    unknown = [column for column in columns if column not in CSV_CELLS]
    if unknown or not columns:
        raise ValueError(f"annotations.csv has no column {unknown} (it has {list(CSV_CELLS)})")
    return ", ".join(f'{CSV_CELLS[column]} AS "{column}"' for column in columns)


def _stage_votes(stages: list[Stage], params: dict[str, Any]) -> str:
    """SQL (jsonb) of the vote of an annotation of any of ``stages``: each kind's declaration,
    chosen by the item stage's stage (stages whose kinds declare the same vote share one
    branch)."""
    groups: dict[Any, list[Stage]] = {}
    for stage in stages:
        kind = KINDS.get(stage.kind)
        declared = ("value", None) if kind is None else (kind.vote_field, kind.vote_fields)
        key = (declared[0], tuple((declared[1] or {}).items()))
        groups.setdefault(key, []).append(stage)
    expressions = [
        vote_sql(KINDS.get(group[0].kind), payload=_A.payload, params=params, name=f"vote_{n}")
        for n, group in enumerate(groups.values())
    ]
    if len(expressions) <= 1:
        return expressions[0] if expressions else "NULL::jsonb"
    cases = []
    for number, (group, expression) in enumerate(zip(groups.values(), expressions, strict=True)):
        params[f"vote_stages_{number}"] = [stage.pk for stage in group]
        cases.append(f"WHEN {_S.stage_id} = ANY(%(vote_stages_{number})s) THEN {expression}")
    return f"(CASE {' '.join(cases)} END)"


def _select(
    output: str,
    stages: list[Stage],
    params: dict[str, Any],
    payload: str,
    *,
    grouped: bool = False,
) -> str:
    """``output`` for every current annotation (``is_current``: superseded versions of changed
    answers are left out, as in ``release_annotation_rows``) of the project's released items,
    in id order. The
    parameters are bound by psycopg on the client (COPY takes none of its own).

    The parts of a row are computed in a subquery kept apart by ``OFFSET 0``: merged into the
    outer query, a part used more than once in a line (a CSV cell is tested, then quoted) would
    be computed each time. Parts the line does not use are dropped by the planner. The parts
    are sorted there, before the lines are spelled from them (the outer query finds them in
    order): the sort, on disk at a million rows, then carries the parts, not the lines.
    ``payload``: SQL (jsonb) of the released payload from ``a.payload`` (the identity rule).

    ``grouped``: ``output`` is the aggregates of a chunk's rows over x: one row per chunk of
    annotations (ids in one ``CHUNK_IDS`` range) instead of one per annotation, chunks in id
    order. The parts are then sorted by (chunk, id), so the grouping finds them in order and
    never sorts the lines."""
    a, s, i, st = _A, _S, quoted(Item, "i"), quoted(Stage, "st")
    exported = f"""
        FROM {table(Annotation)} a
        JOIN {table(ItemStage)} s ON {s.id} = {a.item_stage_id}
        JOIN {table(Item)} i ON {i.id} = {s.item_id}
        WHERE {s.stage_id} = ANY(%(stages)s) AND {i.status} = ANY(%(statuses)s)
          AND {a.is_current}"""
    vote = _stage_votes(stages, params)
    # raters' columns are named here (annotator_id, external_rater, number, code), so the
    # statement refers to them unquoted, as to x's parts.
    code = pseudonym_sql(person="annotator_id IS NOT NULL", number="number")
    params.setdefault("chunk_ids", CHUNK_IDS)
    order = f"{a.id} / %(chunk_ids)s, {a.id}" if grouped else f"{a.id}"
    parts = f"""(
            SELECT {a.id} AS id, {i.external_id} AS external_id, {st.slug} AS stage,
                   coalesce(p.code, e.code) AS rater,
                   {vote} AS vote, {vote} #>> '{{}}' AS vote_text, ({vote})::text AS vote_json,
                   {payload} AS payload, ({payload})::text AS payload_text,
                   {a.seconds_spent} AS seconds_spent, {a.created_at} AS created_at,
                   to_json({a.created_at}) #>> '{{}}' AS created_at_text,
                   {a.item_version} AS item_version, {a.id} / %(chunk_ids)s AS chunk
            FROM {table(Annotation)} a
            JOIN {table(ItemStage)} s ON {s.id} = {a.item_stage_id}
            JOIN {table(Item)} i ON {i.id} = {s.item_id}
            JOIN {table(Stage)} st ON {st.id} = {s.stage_id}
            LEFT JOIN raters p ON p.annotator_id = {a.annotator_id}
            LEFT JOIN raters e ON {a.annotator_id} IS NULL AND e.annotator_id IS NULL
                              AND e.external_rater = {a.external_rater}
            WHERE {s.stage_id} = ANY(%(stages)s) AND {i.status} = ANY(%(statuses)s)
              AND {a.is_current}
            ORDER BY {order}
            OFFSET 0
        ) x"""
    if grouped:
        body = f"""SELECT {output}
        FROM {parts}
        GROUP BY x.chunk
        ORDER BY x.chunk"""
    else:
        body = f"""SELECT {output}
        FROM {parts}
        ORDER BY x.id"""
    return f"""
        WITH raters AS MATERIALIZED (
            SELECT annotator_id, external_rater, {code} AS code
            FROM (
                SELECT {a.annotator_id} AS annotator_id,
                       CASE WHEN {a.annotator_id} IS NULL THEN {a.external_rater} END
                           AS external_rater,
                       row_number() OVER (PARTITION BY {a.annotator_id} IS NULL
                                          ORDER BY min({a.id})) AS number
                {exported}
                GROUP BY 1, 2
            ) numbered
        )
        {body}"""


# --- Writing ----------------------------------------------------------------------------------


@contextmanager
def _copy_settings(cursor: Any) -> Iterator[None]:
    """``COPY_SETTINGS`` for the statements inside, in a transaction; the caller's restored
    after (should a caller's transaction enclose this one)."""
    names = list(COPY_SETTINGS)
    setting = {f"setting_{number}": name for number, name in enumerate(names)}
    change = "SELECT " + ", ".join(
        f"set_config(%(setting_{number})s, %(value_{number})s, true)"
        for number in range(len(names))
    )
    cursor.execute("SELECT " + ", ".join(f"current_setting(%({key})s)" for key in setting), setting)
    saved = cursor.fetchone()
    values = {f"value_{number}": COPY_SETTINGS[name] for number, name in enumerate(names)}
    cursor.execute(change, {**setting, **values})
    yield
    cursor.execute(
        change, {**setting, **{f"value_{number}": value for number, value in enumerate(saved)}}
    )


def _query_parts(
    project: Project, statuses: Iterable[str]
) -> tuple[list[Stage], dict[str, Any], str]:
    stages = list(Stage.objects.filter(project=project))
    params: dict[str, Any] = {
        "stages": [stage.pk for stage in stages],
        "statuses": list(statuses),
        "identity_salt": salt_for(project),
    }
    # Names in answers' payloads: the rule every file of the release applies (one spelling in
    # SQL, releases.identities).
    payload = identity_rule(project.kind).sql(_A.payload, salt_param="identity_salt")
    return stages, params, payload


def _copy(
    project: Project,
    *,
    statuses: Iterable[str],
    output: str,
    options: str,
    path: Path,
    read: Callable[[Iterable[memoryview]], Iterable[bytes | memoryview]],
) -> FileEntry:
    stages, params, payload = _query_parts(project, statuses)
    query = _select(output, stages, params, payload)
    with transaction.atomic(), connection.cursor() as cursor, _copy_settings(cursor):
        raw = cursor.cursor
        with raw.copy(f"COPY ({query}) TO STDOUT ({options})", params) as copy:
            entry = write_blocks(read(copy), path)
        rows = raw.rowcount  # from the server's "COPY n"
    return FileEntry(
        entry.name, entry.sha256, entry.bytes, rows
    )  # COPY's count leaves out the header


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


def _as_is(blocks: Iterable[memoryview]) -> Iterable[memoryview]:
    return blocks


def copy_annotations_jsonl(
    project: Project, path: str | Path, *, statuses: Iterable[str]
) -> FileEntry:
    """Write annotations.jsonl of ``project`` (the annotations of its items whose status is in
    ``statuses``) by COPY. PostgreSQL only."""
    return _copy(project, statuses=statuses, output=JSONL_LINE, options=JSONL_COPY_OPTIONS,
                 path=Path(path), read=_checked_jsonl)  # fmt: skip


def copy_annotations_csv(
    project: Project, path: str | Path, *, statuses: Iterable[str], columns: Sequence[str]
) -> FileEntry:
    """Write annotations.csv of ``project`` by COPY: a header of ``columns`` (any of
    external_id, stage, rater, value, payload, seconds_spent, created_at, item_version, in any
    order), then
    one line per annotation. PostgreSQL only."""
    return _copy(project, statuses=statuses, output=_csv_columns(columns),
                 options=CSV_COPY_OPTIONS, path=Path(path), read=_as_is)  # fmt: skip


# --- Every annotation file in one statement ---------------------------------------------------

#: Annotation ids per chunk of the combined export (``copy_annotation_files``): PostgreSQL
#: joins the lines of a chunk into one text per file, so Python handles one message per chunk
#: (at most this many rows), not one per annotation.
CHUNK_IDS = 4096

#: SQL text of each Parquet column (``releases.parquet``: JSON columns as JSON text), from x.
PARQUET_PARTS = {
    "external_id": "x.external_id",
    "stage": "x.stage",
    "rater": "x.rater",
    "value": "x.vote_json",
    "payload": "x.payload_text",
    "seconds_spent": "x.seconds_spent::text",
    "created_at": "x.created_at_text",
    "item_version": "x.item_version::text",
}


def copy_csv_cell_sql(text: str) -> str:
    """SQL text of the CSV cell COPY's own CSV writes for the text value ``text`` (a column
    reference: it is read several times): NULL an empty cell; an empty string, or one holding
    a comma, a double quote, CR or LF, quoted with its quotes doubled; anything else bare."""
    return (
        f"CASE WHEN {text} IS NULL THEN '' "
        f"WHEN {text} = '' OR strpos({text}, ',') > 0 OR strpos({text}, '\"') > 0 "
        f"OR strpos({text}, chr(10)) > 0 OR strpos({text}, chr(13)) > 0 "
        f"THEN '\"' || replace({text}, '\"', '\"\"') || '\"' ELSE {text} END"
    )


def copy_csv_header(columns: Sequence[str]) -> bytes:
    """The header line COPY's CSV writes for ``columns`` (the same quoting rule)."""
    cells = []
    for name in columns:
        quote = name == "" or any(character in name for character in ',"\r\n')
        cells.append('"' + name.replace('"', '""') + '"' if quote else name)
    return (",".join(cells) + "\n").encode("utf-8")


#: Cells of annotations.csv and of the Parquet rows that never need CSV quoting: codes, numbers
#: and timestamps are never empty and never hold a comma, a quote or a line break.
BARE_CELLS = {"rater", "seconds_spent", "created_at", "item_version"}


def _csv_line(cells: list[tuple[str, str]]) -> str:
    return " || ',' || ".join(
        f"coalesce({reference}, '')" if column in BARE_CELLS else copy_csv_cell_sql(reference)
        for column, reference in cells
    )


def copy_annotation_files(
    project: Project,
    *,
    statuses: Iterable[str],
    jsonl: Any = None,
    csv: Any = None,
    csv_columns: Sequence[str] = (),
    parquet: Any = None,
) -> int:
    """Write annotations.jsonl, annotations.csv and the Parquet rows of ``project``'s
    annotations (of items whose status is in ``statuses``) in ONE statement, each byte for byte
    what ``copy_annotations_jsonl`` and ``copy_annotations_csv`` write; return the row count.

    ``jsonl`` and ``csv`` take bytes (``releases.sinks.ByteSink``), ``parquet`` CSV blocks
    (``releases.parquet.ParquetSink.write_csv_block``); any may be None. PostgreSQL computes
    each row's parts and cells once, spells every file's line from them and joins the lines of
    a chunk of annotations (``CHUNK_IDS`` ids) into one text per file: one binary COPY row per
    chunk, so Python never handles a row, only chunks. The CSV lines are spelled as COPY's CSV
    spells them (``copy_csv_cell_sql``). PostgreSQL only."""
    stages, params, payload = _query_parts(project, statuses)
    # Every part a line reads more than once (a CSV cell is tested, then quoted) is a column
    # of x, computed once per row before the sort: jsonb spelled as text above all.
    lines: list[str] = []
    if jsonl is not None:
        lines.append(JSONL_LINE)
    if csv is not None:
        _csv_columns(csv_columns)  # refuses unknown columns
        lines.append(_csv_line([(name, f"({CSV_CELLS[name]})::text") for name in csv_columns]))
    if parquet is not None:
        names = [column.name for column in parquet.columns]
        lines.append(_csv_line([(name, PARQUET_PARTS[name]) for name in names]))
    if not lines:
        return 0
    aggregates = [f"string_agg({line} || chr(10), '' ORDER BY x.id)" for line in lines]
    query = _select(", ".join([*aggregates, "count(*)"]), stages, params, payload, grouped=True)
    targets = [sink for sink in (jsonl, csv, parquet) if sink is not None]
    if csv is not None:
        csv.write(copy_csv_header(csv_columns))
    rows = 0
    with transaction.atomic(), connection.cursor() as cursor, _copy_settings(cursor):
        with cursor.cursor.copy(f"COPY ({query}) TO STDOUT (FORMAT binary)", params) as copy:
            copy.set_types(["bytea"] * len(targets) + ["int8"])
            for *blocks, count in copy.rows():
                rows += count
                for target, block in zip(targets, blocks, strict=True):
                    if target is parquet:
                        target.write_csv_block(block)
                    else:
                        target.write(block)
    return rows
