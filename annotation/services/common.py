"""Side effects after commit and planner statistics: what every service module shares."""

from __future__ import annotations

import logging
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
