"""A stage's ``disagreements.csv`` written by PostgreSQL itself, in one statement.

The rows, their order and every cell are those of the Python writer
(``agreement.exports._disagreement_rows``, which SQLite uses): one line per item stage the
filter lists (``selectors.disagreement_items``) and rater who voted on it, newest decision
first, raters in the order of their first vote, each rater's newest current vote. Here the
whole file is one statement, read through a server-side cursor, whose rows are the lines of
one item stage each, spelled by PostgreSQL and sent in the file's order as it reads them (the
listed item stages in their index's order, each one's annotations beside it): no per-row
query, no sort of the whole file before its first line; Python joins each fetched block of
rows (``FIRST_BLOCK_ROWS``, then ``BLOCK_ROWS`` item stages).

Which item stages and annotations are read is the ORM's (``selectors.disagreement_items``, the
filter's one rule; ``annotations_visible``, the rule of which votes anyone may read; current
versions only), compiled to SQL and wrapped by the hand-written statement below, which the ORM
cannot say: a lateral join, a window per (item stage, rater) and the CSV text of each cell. Cells follow
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


def _item_parts() -> dict[str, Any]:
    """The parts of a listed item stage the ORM reads (alias: expression), the statement's
    ``p``: the cells every line of the item stage repeats, spelled once per item stage."""
    return {
        "c_id": F("pk"),
        "c_decided": F(selectors.DECIDED_AT),
        "c_external_id": F("item__external_id"),
        "c_item_payload": F("item__payload"),
        "c_status": F("resolution__status"),
        "c_value": F("resolution__value"),
        "c_reason": F("resolution__reason"),
        "c_decided_by": F("resolution__decided_by__username"),
    }


def _vote_parts() -> dict[str, Any]:
    """The parts of an annotation's line the ORM reads (alias: expression), the statement's
    ``a``, read per listed item stage."""
    return {
        "c_item_stage": F("item_stage_id"),
        "c_annotation": F("pk"),
        "c_annotator": F("annotator_id"),
        "c_external": F("external_rater"),
        "c_username": F("annotator__username"),
        "c_payload": F("payload"),
        "c_seconds": F("seconds_spent"),
    }


def _json_text_sql(value: str) -> str:
    """SQL of ``selectors.json_text`` for the jsonb expression ``value``; SQL NULL (no value) is
    spelled ``null`` too, as JSON null is. ``#>> '{}'`` is jsonb's text of the whole value, a
    string without its quotes: one function call, no ``jsonb_typeof`` test."""
    return f"coalesce(({value}) #>> '{{}}', 'null')"


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
    """The statement (its rows: one text per listed item stage that has a vote, its lines, in
    the file's order), its parameters and the database alias to run it on.

    The listed item stages come in the list's order (newest decision first, then the id:
    ``item_stage_decided_idx`` serves it) and each one's annotations are read beside it (a
    lateral join on the annotations' item stage index), so PostgreSQL sends the first item
    stage's lines before it has read the second: nothing waits for a sort of the whole file.
    The cells every line of an item stage repeats (its id, item, decision) are spelled once
    per item stage; ``OFFSET 0`` keeps each level's cells computed once, not once per use."""
    # A sparse filter with few rows reads its candidates first, as the list's page does
    # (agreement/pages.py): the stage's item stages are then never walked.
    few = (
        show in selectors.SPARSE_STATUSES
        and stored.disagreement_count_shown(stage, show)[0] <= selectors.FEW_LISTED
    )
    listed = (
        selectors.disagreement_items(stage, show=show, few=few).order_by().values(**_item_parts())
    )
    votes = annotations_visible(Annotation.objects.all(), None).order_by().values(**_vote_parts())
    using = listed.db
    listed_sql, listed_positional = listed.query.get_compiler(using=using).as_sql()
    votes_sql, votes_positional = votes.query.get_compiler(using=using).as_sql()
    listed_text, params = _named(listed_sql, listed_positional, "listed")
    votes_text, vote_params = _named(votes_sql, votes_positional, "votes")
    params.update(vote_params)
    params["pair_a"], params["pair_b"] = "sentence_a", "sentence_b"
    for number, field in enumerate(selectors.SUMMARY_FIELDS):
        params[f"summary_{number}"] = field
    vote = vote_sql(get_kind(stage.kind), payload="a.c_payload", params=params, name="vote")
    rater = "a.c_annotator, CASE WHEN a.c_annotator IS NULL THEN a.c_external END"
    unnamed = f"'rater ' || (-1 - (hashtext(a.c_external)::bigint + {int(_EXTERNAL_RATER_OFFSET)}))"
    item_texts = {
        "external_id": "p.c_external_id",
        "item": _summary_sql("p.c_item_payload"),
        "status": "p.c_status",
        "value": _json_text_sql("p.c_value"),
        "decided_by": "coalesce(p.c_decided_by, '')",
        "reason": "p.c_reason",
    }
    vote_texts = {
        "annotator": f"coalesce(a.c_username, nullif(a.c_external, ''), {unnamed})",
        "vote": _json_text_sql(vote),
        "comment": _comment_sql("a.c_payload"),
    }

    def texts(spelled: dict[str, str]) -> str:
        return ", ".join(f"{expression} AS t_{name}" for name, expression in spelled.items())

    def safe(spelled: dict[str, str], level: str) -> str:
        return ", ".join(
            f"{spreadsheet_safe_sql(f'{level}.t_{name}')} AS s_{name}" for name in spelled
        )

    def cells(spelled: dict[str, str], level: str) -> str:
        return " || ',' || ".join(csv_text_sql(f"{level}.s_{name}") for name in spelled)

    prefix = f"i.c_id::text || ',' || {cells(item_texts, 'i')} || ','"
    line = f"q.c_prefix || {cells(vote_texts, 'w')} || ',' || w.t_seconds"
    # The listed item stages stay in the outermost level, beside the lateral join and the
    # ORDER BY, so the planner may walk them in the index's order (a cursor is planned for its
    # first rows); a subquery there with OFFSET 0 would be planned for all of its rows, sorted.
    # Each item stage's own cells are spelled once, in the lateral's first level (q); its
    # votes' level (w) names q, so q is read first.
    statement = f"""
        SELECT b.lines
        FROM ({listed_text}) p
        CROSS JOIN LATERAL (
            SELECT string_agg({line} || {_sql_literal(CSV_LINE_END)}, '' ORDER BY w.c_first)
                       AS lines
            FROM (
                SELECT i.c_id, {prefix} AS c_prefix
                FROM (
                    SELECT t.c_id, {safe(item_texts, "t")}
                    FROM (SELECT p.c_id, {texts(item_texts)} OFFSET 0) t
                    OFFSET 0
                ) i
                OFFSET 0
            ) q
            CROSS JOIN LATERAL (
                SELECT v.c_first, v.t_seconds, {safe(vote_texts, "v")}
                FROM (
                    SELECT {texts(vote_texts)},
                           {_seconds_sql("a.c_seconds")} AS t_seconds,
                           row_number() OVER (PARTITION BY {rater}
                                              ORDER BY a.c_annotation DESC) AS c_newest,
                           min(a.c_annotation) OVER (PARTITION BY {rater}) AS c_first
                    FROM ({votes_text}) a
                    WHERE a.c_item_stage = q.c_id
                ) v
                WHERE v.c_newest = 1
                OFFSET 0
            ) w
        ) b
        WHERE b.lines IS NOT NULL
        ORDER BY p.c_decided DESC, p.c_id DESC"""
    return statement, params, using


def _sql_literal(text: str) -> str:
    """A PostgreSQL escape-string literal of ``text`` (CR and LF spelled ``\\r``, ``\\n``)."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\r", "\\r")
    return "E'" + escaped.replace("\n", "\\n") + "'"


def disagreement_csv_lines(stage: Stage, show: str) -> Iterator[str]:
    """The lines of the stage's ``disagreements.csv`` after its header, in blocks, as
    PostgreSQL spells them. The statement is built now (a bad stage fails here, before the
    response starts); it runs as the blocks are read (one server-side cursor)."""
    try:
        statement, params, using = disagreement_csv_statement(stage, show)
    except EmptyResultSet:  # a sparse filter without a candidate: nothing to read
        return iter(())
    return _fetched(statement, params, using)


#: What the statement's transaction sets. JIT compilation cost 0.8 s of the check stage's 3.6 s
#: (EXPLAIN ANALYZE, 120 functions emitted for the cells' expressions) and saves nothing here.
#: A random page costs about what a sequential one does (the tables read are in memory or on
#: SSD): at the default (4) the planner hashed the whole users' table once per item stage for
#: its three votes rather than probe its primary key three times.
STATEMENT_SETTINGS = ("SET LOCAL jit = off", "SET LOCAL random_page_cost = 1.1")
#: Item stages in the first block (its lines go out at once) and in each block after it.
FIRST_BLOCK_ROWS = 50
BLOCK_ROWS = 1000


def _fetched(statement: str, params: dict[str, Any], using: str) -> Iterator[str]:
    # A server-side cursor, not COPY: PostgreSQL plans a cursor for its first rows
    # (cursor_tuple_fraction), so it walks the listed item stages in the index's order
    # (item_stage_decided_idx) rather than read and sort all of them before the first line;
    # COPY is planned for its last row. The raw connection's named cursor is psycopg's
    # server-side one (DECLARE, then FETCH per block).
    connection = connections[using]
    with transaction.atomic(using=using):
        with connection.cursor() as cursor:
            for setting in STATEMENT_SETTINGS:
                cursor.execute(setting)
        with connection.connection.cursor(name="disagreements_csv") as cursor:
            cursor.execute(statement, params)
            size = FIRST_BLOCK_ROWS
            while rows := cursor.fetchmany(size):
                yield "".join(lines for (lines,) in rows)
                size = BLOCK_ROWS
