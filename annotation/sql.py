"""Hand-written SQL for the annotator's hot path (next item, submit, token sign-in).

Every next+submit runs a handful of statements; building them with the ORM cost more CPU
(about 8 ms per next+submit, mostly query compilation) than PostgreSQL spent running them.
Here each statement's text is built once per process from the models' metadata, and rows are
turned into model instances with Django's own converters, so the result is what the ORM would
have returned. The SQL is portable between PostgreSQL and SQLite (the embedded default); only
the row-lock clauses are PostgreSQL's (SQLite's IMMEDIATE transactions serialise writers).

Used by annotation.access (the stage and lease checks), annotation.services (the candidate
search, the locked assignment) and api.auth (tokens). Tests: tests/annotation/
test_sql.py (instances equal the ORM's, on both backends) and the engine's own tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model

M = TypeVar("M", bound=Model)

# A prime above 2**31 (also in services): random_key × salt mod this prime is a permutation
# of the keys, different for every salt, so each annotator gets their own order.
ORDER_PRIME = 2_147_483_659


def table(model: type[Model]) -> str:
    """The model's table name, quoted."""
    return connection.ops.quote_name(str(model._meta.db_table))


class Quoted:
    """A model's columns as a statement names them: ``Quoted(ItemStage, "c").round`` is
    ``c."round"``, ``Quoted(ItemStage).round`` is ``"round"`` (for SET and INSERT lists). Any
    field name or attname (``item`` or ``item_id``) is taken; the column comes from the
    model's metadata and is quoted by the backend (``connection.ops.quote_name``), so a
    misspelt or renamed field fails when the statement is built, not in the database. The
    project's rule for hand-written SQL: CONTRIBUTING.md, "SQL you can change safely"."""

    __slots__ = ("_model", "_prefix")

    def __init__(self, model: type[Model], alias: str = "") -> None:
        self._model = model
        self._prefix = f"{alias}." if alias else ""

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        column = getattr(self._model._meta.get_field(name), "column", None)
        if not column:  # a reverse relation or a many-to-many field: no column here
            raise AttributeError(f"{self._model.__name__}.{name} has no column")
        return f"{self._prefix}{connection.ops.quote_name(str(column))}"


def quoted(model: type[Model], alias: str = "") -> Any:
    """:class:`Quoted` for ``model`` (typed ``Any``: its attributes are the model's fields)."""
    return Quoted(model, alias)


def columns(model: type[Model], alias: str) -> str:
    """The model's concrete columns, qualified by `alias`, in field order."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(str(field.column))}" for field in model._meta.concrete_fields)


def width(model: type[Model]) -> int:
    return len(model._meta.concrete_fields)


@cache
def _converters(
    model: type[Model], vendor: str
) -> tuple[tuple[int, Any, tuple[Callable, ...]], ...]:
    """(position, column, converters) for the fields whose database values need converting on
    this backend: the converters the ORM's compiler applies to a plain column."""
    found = []
    for position, field in enumerate(model._meta.concrete_fields):
        column = field.get_col(model._meta.db_table)
        chain = tuple(
            connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        )
        if chain:
            found.append((position, column, chain))
    return tuple(found)


@cache
def _attnames(model: type[Model]) -> tuple[str, ...]:
    """The attribute names of the model's concrete fields, in field order (what from_db
    receives with a full row)."""
    return tuple(field.attname for field in model._meta.concrete_fields)


def load(model: type[M], row: Sequence[Any], start: int = 0, db: Any = None) -> M:
    """A `model` instance from `row[start:start + width(model)]` (columns as `columns()`),
    converted as the ORM converts them. `db`: the default connection itself, when the caller
    has it (unpack; each lookup through ``django.db.connection`` costs a thread-local read)."""
    if db is None:
        db = connections[DEFAULT_DB_ALIAS]
    attnames = _attnames(model)
    values = list(row[start : start + len(attnames)])
    for position, column, chain in _converters(model, db.vendor):
        value = values[position]
        for converter in chain:
            value = converter(value, column, db)
        values[position] = value
    return model.from_db(db.alias, attnames, values)


def unpack(
    row: Sequence[Any], models: Sequence[type[Model]], extras: Sequence[str] = ()
) -> tuple[list[Model], dict[str, Any]]:
    """The instances of ``models`` from a row that selected ``columns(model, alias)`` for each
    in that order, and the columns after them by the names in ``extras`` (which must match
    the statement's extra columns in number and order)."""
    db = connections[DEFAULT_DB_ALIAS]
    instances, start = [], 0
    for model in models:
        instances.append(load(model, row, start, db))
        start += len(_attnames(model))
    return instances, dict(zip(extras, row[start:], strict=True))


def in_range(model: type[Model], pk: int) -> bool:
    """Whether `pk` fits the model's primary key column (a forged id beyond it would make
    PostgreSQL raise instead of finding nothing, as the ORM does)."""
    low, high = connection.ops.integer_field_range(model._meta.pk.get_internal_type())
    return (low is None or pk >= low) and (high is None or pk <= high)


def cursor():
    """Django's own cursor. On PostgreSQL the settings turn on server-side binding
    (rungwise/settings.py, "Database"), so psycopg prepares these statements after a few runs on
    a connection; the execute wrappers (query counts, the debug log) see every statement."""
    return connection.cursor()


def fetchone(sql: str, params: Mapping[str, Any]) -> tuple | None:
    """The first row of a statement with named parameters (``%(name)s``), or None."""
    with cursor() as cursor_:
        cursor_.execute(sql, params)
        return cursor_.fetchone()


def lock(*aliases: str, skip_locked: bool = False) -> str:
    """The row-lock clause on PostgreSQL (nothing on SQLite, whose writers are serialised)."""
    if connection.vendor != "postgresql":
        return ""
    clause = " FOR UPDATE"
    if aliases:
        clause += " OF " + ", ".join(aliases)
    return clause + (" SKIP LOCKED" if skip_locked else "")


def annotator_lock(stage_id: int, annotator_id: int) -> None:
    """Hold, until the transaction ends, a lock on (stage, annotator) on PostgreSQL: the
    annotator's next search in this stage waits for the one under way (nothing on SQLite, whose
    writers are serialised). The ORM has no advisory locks; the single 64-bit key space used
    here never meets the two-key locks of agreement.services."""
    if connection.vendor != "postgresql":
        return
    with cursor() as handle:
        handle.execute(
            "SELECT pg_advisory_xact_lock(%(key)s)",
            {"key": ((stage_id % 2**31) << 32) | (annotator_id % 2**32)},
        )
