"""Side effects after commit, planner statistics and bulk writes' foreign-key checks: what
every service module shares."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction
from kombu.exceptions import OperationalError as BrokerUnavailable

logger = logging.getLogger(__name__)


# --- Enqueueing side effects ------------------------------------------------------------------


def enqueue_on_commit(task: Any, *args: Any) -> None:
    """Send a Celery task after the current transaction commits.

    A broker outage must delay results, never fail a submission that has already been stored:
    publishing errors are logged and the beat sweeps (annotation.tasks) repair what was missed.
    """

    def send() -> None:
        try:
            task.delay(*args)
        except BrokerUnavailable as error:
            # Expected during an outage, once per publish: one line, not a traceback each.
            logger.warning(
                "could not run or enqueue %s%r: the broker is unavailable (%s); the sweep will "
                "retry", task.name, args, error,
            )  # fmt: skip
        except Exception:  # an eager task's failure, or anything unexpected
            logger.exception("could not run or enqueue %s%r; the sweep will retry", task.name, args)

    transaction.on_commit(send)


def sweep_each(ids: Any, action: Any, what: str) -> int:
    """Run ``action(id)`` for each id of a beat sweep; one bad row is logged and left for the
    next run instead of stopping the sweep. Returns how many succeeded."""
    done = 0
    for pk in ids:
        try:
            action(pk)
        except Exception:
            logger.exception("sweep: could not handle %s %s", what, pk)
        else:
            done += 1
    if done:
        logger.warning("sweep handled %d %s", done, what)
    return done


def planner_statistics_refresh(*models: Any) -> None:
    """ANALYZE the tables of `models` after a bulk load (PostgreSQL only).

    Autovacuum analyses a table only some time after a large COPY; until then the planner may
    still believe it holds the few rows it had, and choose nested loops that take minutes over
    tens of thousands of rows. Bulk imports call this before their reads."""
    if connection.vendor != "postgresql":
        return
    tables = ", ".join(connection.ops.quote_name(model._meta.db_table) for model in models)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")


# --- Foreign keys checked once for a bulk write -----------------------------------------------


def may_skip_row_checks() -> bool:
    """Whether this session may set ``session_replication_role`` (a superuser, or on
    PostgreSQL 15 and later a role granted ``SET`` on it) and has not set it already."""
    privilege = (
        "has_parameter_privilege('session_replication_role', 'SET')"
        if connection.pg_version >= 150000  # type: ignore[attr-defined]  # PostgreSQL's wrapper
        else "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT current_setting('session_replication_role') = 'origin' AND {privilege}"
        )
        return bool(cursor.fetchone()[0])


def row_locked_for_key_share(cursor: Any, model: Any, pk: int) -> bool:
    """Lock the ``model`` row ``pk`` ``FOR KEY SHARE`` (the lock PostgreSQL's own per-row
    foreign-key check takes; hand-written: the ORM's select_for_update has no such mode) and
    say whether it exists. For the ``check`` of :func:`foreign_keys_checked_once`."""
    table = connection.ops.quote_name(model._meta.db_table)
    column = connection.ops.quote_name(model._meta.pk.column)
    cursor.execute(f"SELECT 1 FROM {table} WHERE {column} = %s FOR KEY SHARE", [pk])
    return cursor.fetchone() is not None


@contextmanager
def foreign_keys_checked_once(check: Callable[[Any], None]) -> Iterator[None]:
    """Run the block's statements without PostgreSQL's per-row foreign-key checks (queued per
    row and run at COMMIT), after ``check(cursor)`` has checked once what they would check for
    every row. PostgreSQL only, inside the caller's transaction.

    Precondition (the caller's promise, kept by ``check``): every foreign key the block writes
    is NULL, a row this transaction wrote itself (no other session can see it, so none can
    remove it), or a row locked ``FOR KEY SHARE`` or more strongly (as PostgreSQL's own check
    would lock it) before a reference to it is written, by ``check`` or by the block itself,
    so that nobody removes it before this transaction ends; ``check`` raises when one is
    missing. The block runs with ``session_replication_role
    = replica`` (set LOCAL: an error inside the block rolls the setting back with the
    transaction or its savepoint), which fires no trigger left in its default mode, the
    foreign-key checks among them; the items' own triggers fire always (migration
    ``0022_item_search_triggers_always``). When the session may not set the role
    (:func:`may_skip_row_checks`), ``check`` is not called and the block runs with its per-row
    checks. Users: imports/services/staged.py, annotation/services/historic_bulk.py."""
    if not may_skip_row_checks():
        yield
        return
    with connection.cursor() as cursor:
        check(cursor)
        cursor.execute("SET LOCAL session_replication_role = replica")
    yield
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = origin")
