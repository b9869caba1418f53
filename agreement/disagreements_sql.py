"""A stage's ``disagreements.csv`` written by PostgreSQL itself, in one statement.

The rows, their order and every cell are those of the Python writer
(``agreement.exports._disagreement_rows``, which SQLite uses): one line per item stage the
filter lists (``selectors.disagreement_items``) and rater who voted on it, newest decision
first, raters in the order of their first vote, each rater's newest current vote. Here the
whole file is one ``COPY (SELECT …) TO STDOUT`` whose rows are blocks of ``BLOCK_LINES`` CSV
lines that PostgreSQL spelled: no per-row query, no row becomes a Python object, one pass over
the stage's listed item stages and their annotations instead of a keyset query per chunk.

Which item stages and annotations are read is the ORM's (``selectors.disagreement_items``, the
filter's one rule; ``annotations_visible``, the rule of which votes anyone may read; current
versions only), compiled to SQL and wrapped by the hand-written statement below, which the ORM
cannot say: a window per (item stage, rater) and the CSV text of each cell. Cells follow
``annotation.web``'s rule: ``spreadsheet_safe_sql`` (formula-injection guard) then
``csv_text_sql`` (``csv.writer``'s quoting), lines ending as ``csv.writer`` ends them. JSON
values are spelled as ``selectors.json_text`` says (jsonb's text); seconds as Python prints a
float (``12.0``). tests/agreement/test_disagreements_sql.py compares the two writers byte for
byte. PostgreSQL only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections, transaction
from django.db.models import F

from agreement import selectors, stored
from agreement.votes import _EXTERNAL_RATER_OFFSET, vote_sql
from annotation.kinds import get_kind
from annotation.models import Annotation, Stage
from annotation.selectors import annotations_visible
from annotation.web import CSV_LINE_END, csv_text_sql, spreadsheet_safe_sql

#: CSV lines PostgreSQL joins into one COPY row: Python handles one row per block.
BLOCK_LINES = 1000


def _parts() -> dict[str, Any]:
    """The parts of an annotation's line the ORM reads (alias: expression), the statement's x."""
    return {
        "c_item_stage": F("item_stage_id"),
        "c_decided": selectors.decided_at("item_stage__"),
        "c_annotation": F("pk"),
        "c_annotator": F("annotator_id"),
        "c_external": F("external_rater"),
        "c_username": F("annotator__username"),
        "c_payload": F("payload"),
        "c_seconds": F("seconds_spent"),
        "c_external_id": F("item_stage__item__external_id"),
        "c_item_payload": F("item_stage__item__payload"),
        "c_status": F("item_stage__resolution__status"),
        "c_value": F("item_stage__resolution__value"),
        "c_reason": F("item_stage__resolution__reason"),
        "c_decided_by": F("item_stage__resolution__decided_by__username"),
    }


def _json_text_sql(value: str) -> str:
    """SQL of ``selectors.json_text`` for the jsonb expression ``value`` (NULL stays NULL)."""
    return f"(CASE WHEN jsonb_typeof({value}) = 'string' THEN {value} #>> '{{}}' ELSE ({value})::text END)"


def _summary_sql(payload: str) -> str:
    """SQL of ``selectors.item_summary`` for the jsonb item payload ``payload``."""
    pair = (
        f"WHEN jsonb_typeof({payload}) = 'object' AND {payload} ? 'sentence_a' "
        f"AND {payload} ? 'sentence_b' THEN {_json_text_sql(f'({payload} -> %(pair_a)s)')} "
        f"|| ' → ' || {_json_text_sql(f'({payload} -> %(pair_b)s)')}"
    )
    fields = " ".join(
        f"WHEN jsonb_typeof({payload} -> %(summary_{number})s) = 'string' "
        f"THEN {payload} ->> %(summary_{number})s"
        for number in range(len(selectors.SUMMARY_FIELDS))
    )
    rest = f"left(coalesce({payload}, '{{}}'::jsonb)::text, {int(selectors.SUMMARY_JSON_LENGTH)})"
    return f"(CASE {pair} {fields} ELSE {rest} END)"


def _comment_sql(payload: str) -> str:
    """SQL of a vote's comment as the Python writer spells it: text as it is, nothing (or a
    falsy JSON value) as an empty cell, anything else as ``json_text``."""
    comment = f"({payload} -> 'comment')"
    falsy = "'null'::jsonb, 'false'::jsonb, '0'::jsonb, '[]'::jsonb, '{}'::jsonb, '\"\"'::jsonb"
    return (
        f"(CASE WHEN {comment} IS NULL OR {comment} IN ({falsy}) THEN '' "
        f"ELSE {_json_text_sql(comment)} END)"
    )


def _seconds_sql(seconds: str) -> str:
    """SQL of a float as Python's ``repr`` (``csv.writer``) spells it: a whole number with
    ``.0``; otherwise PostgreSQL's shortest exact digits, which are Python's below 10^15."""
    return (
        f"(CASE WHEN {seconds} IS NULL THEN '' "
        f"WHEN {seconds} = trunc({seconds}) AND abs({seconds}) < 1e15 "
        f"THEN trunc({seconds})::bigint::text || '.0' ELSE {seconds}::text END)"
    )


def _named(sql: str, params: Sequence[Any], prefix: str) -> tuple[str, dict[str, Any]]:
    """``sql`` with its positional placeholders (``%s``) named ``%(prefix_n)s``, and the
    parameters by those names: the ORM's compiled SQL joins a statement with named ones."""
    named: dict[str, Any] = {}

    def name(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%%"
        key = f"{prefix}_{len(named)}"
        named[key] = params[len(named)]
        return f"%({key})s"

    text = re.sub(r"%%|%s", name, sql)
    if len(named) != len(params):
        raise ValueError("the compiled query's placeholders do not match its parameters")
    return text, named


def disagreement_csv_statement(stage: Stage, show: str) -> tuple[str, dict[str, Any], str]:
    """The statement (its rows: one text of ``BLOCK_LINES`` lines each, in the file's order),
    its parameters and the database alias to run it on."""
    # A sparse filter with few rows reads its candidates first, as the list's page does
    # (agreement/pages.py): the stage's item stages are then never walked.
    few = (
        show in selectors.SPARSE_STATUSES
        and stored.disagreement_count_shown(stage, show)[0] <= selectors.FEW_LISTED
    )
    listed = selectors.disagreement_items(stage, show=show, few=few).order_by().values("pk")
    parts = (
        annotations_visible(Annotation.objects.filter(item_stage__in=listed), None)
        .order_by()
        .values(**_parts())
    )
    using = parts.db
    compiled, positional = parts.query.get_compiler(using=using).as_sql()
    inner, params = _named(compiled, positional, "orm")
    params["pair_a"], params["pair_b"] = "sentence_a", "sentence_b"
    for number, field in enumerate(selectors.SUMMARY_FIELDS):
        params[f"summary_{number}"] = field
    vote = vote_sql(get_kind(stage.kind), payload="x.c_payload", params=params, name="vote")
    rater = "x.c_annotator, CASE WHEN x.c_annotator IS NULL THEN x.c_external END"
    unnamed = f"'rater ' || (-1 - (hashtext(x.c_external)::bigint + {int(_EXTERNAL_RATER_OFFSET)}))"
    texts = {
        "external_id": "x.c_external_id",
        "item": _summary_sql("x.c_item_payload"),
        "status": "x.c_status",
        "value": f"coalesce({_json_text_sql('x.c_value')}, 'null')",
        "decided_by": "coalesce(x.c_decided_by, '')",
        "reason": "x.c_reason",
        "annotator": f"coalesce(x.c_username, nullif(x.c_external, ''), {unnamed})",
        "vote": f"coalesce({_json_text_sql(vote)}, 'null')",
        "comment": _comment_sql("x.c_payload"),
    }
    text_columns = ", ".join(f"{expression} AS t_{name}" for name, expression in texts.items())
    safe_columns = ", ".join(f"{spreadsheet_safe_sql(f'y.t_{name}')} AS s_{name}" for name in texts)
    cells = [
        "z.c_item_stage::text",
        *(csv_text_sql(f"z.s_{name}") for name in texts),
        "z.t_seconds",
    ]
    line = " || ',' || ".join(cells) + f" || {_sql_literal(CSV_LINE_END)}"
    statement = f"""
        SELECT string_agg(lines.line, '' ORDER BY lines.n)
        FROM (
            SELECT {line} AS line,
                   row_number() OVER (ORDER BY z.c_decided DESC, z.c_item_stage DESC,
                                      z.c_first) AS n
            FROM (
                SELECT y.c_item_stage, y.c_decided, y.c_first, y.t_seconds, {safe_columns}
                FROM (
                    SELECT x.c_item_stage, x.c_decided, {text_columns},
                           {_seconds_sql("x.c_seconds")} AS t_seconds,
                           row_number() OVER (PARTITION BY x.c_item_stage, {rater}
                                              ORDER BY x.c_annotation DESC) AS c_newest,
                           min(x.c_annotation) OVER (PARTITION BY x.c_item_stage, {rater})
                               AS c_first
                    FROM ({inner}) x
                ) y
                WHERE y.c_newest = 1
                OFFSET 0
            ) z
        ) lines
        GROUP BY (lines.n - 1) / {int(BLOCK_LINES)}
        ORDER BY (lines.n - 1) / {int(BLOCK_LINES)}"""
    return statement, params, using


def _sql_literal(text: str) -> str:
    """A PostgreSQL escape-string literal of ``text`` (CR and LF spelled ``\\r``, ``\\n``)."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\r", "\\r")
    return "E'" + escaped.replace("\n", "\\n") + "'"


def disagreement_csv_lines(stage: Stage, show: str) -> Iterator[str]:
    """The lines of the stage's ``disagreements.csv`` after its header, in blocks, as
    PostgreSQL spells them. The statement is built now (a bad stage fails here, before the
    response starts); it runs as the blocks are read (one ``COPY … TO STDOUT``, binary rows)."""
    try:
        statement, params, using = disagreement_csv_statement(stage, show)
    except EmptyResultSet:  # a sparse filter without a candidate: nothing to read
        return iter(())
    return _copied(statement, params, using)


def _copied(statement: str, params: dict[str, Any], using: str) -> Iterator[str]:
    # JIT compilation cost 0.8 s of the check stage's 3.6 s (EXPLAIN ANALYZE, 120 functions
    # emitted for the cells' expressions) and saves nothing here: off for this transaction.
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        with cursor.cursor.copy(f"COPY ({statement}) TO STDOUT (FORMAT binary)", params) as copy:
            copy.set_types(["text"])
            for (block,) in copy.rows():
                yield block
