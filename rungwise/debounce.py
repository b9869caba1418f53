"""Debounced background work: mark dirty, enqueue once, sweep.

A computation that many changes make stale (a stage's agreement figures, a ratings project's
analysis) is recomputed by a Celery task, once per burst of changes rather than once per change.
Its state lives in one database row of the app that owns it, with a nullable timestamp column
(``queued_at`` unless told otherwise) that is set while a message is on its way:

1. *Request* (:func:`debounce_request`): one ``UPDATE … SET queued_at = now WHERE … queued_at IS
   NULL``. Of any number of concurrent callers exactly one changes the row, and only that one
   sends the task, after the transaction commits and with a countdown, so the burst that follows
   finds the mark set and sends nothing. A failed publish (the broker down) is logged, never
   raised, and the mark is cleared again so that the next change tries again.
2. *Consume* (:func:`debounce_consume`): the task clears the mark before it reads, so a change
   that arrives while it computes sends the next message.
3. *Sweep* (:func:`unqueued_or_overdue`): a message lost with the broker or a killed worker
   leaves the mark set; a condition selects the rows whose mark is missing or older than a grace
   period, for a beat sweep to recompute directly or for the next request to take over.

What "dirty" means stays with the app (a change counter compared with the one last computed, a
data version): this module only coalesces the messages. It imports no app, so every app can use
it (CONTRIBUTING.md, "Apps and boundaries"). Tasks are sent by their registered name
(:func:`enqueue_on_commit`), so a services module need not import its tasks module, which
imports the services (CONTRIBUTING.md, "Celery tasks": tasks are named after their module).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from importlib import import_module
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailable

logger = logging.getLogger(__name__)

#: The column that holds a row's "a message is on its way" mark, unless a caller names another.
QUEUED_FIELD = "queued_at"


def task_named(name: str) -> Any:
    """The registered Celery task called ``name`` (e.g. ``"agreement.tasks.refresh_agreement"``).

    Task modules register their tasks when imported, and tasks are named after their module
    (CONTRIBUTING.md, "Celery tasks"): if this process has not imported the module yet, it is
    imported now (the module part of the name). Sending through the task object, not
    ``app.send_task``, keeps ``CELERY_TASK_ALWAYS_EAGER`` (tasks run in-process when no broker
    is configured: after the request that sent them, rungwise/inprocess.py). Raises KeyError (Celery's NotRegistered) for a name no module registers."""
    from celery import current_app

    tasks = current_app.tasks
    if name not in tasks:
        module = name.rpartition(".")[0]
        try:
            import_module(module)
        except ModuleNotFoundError as error:
            # No such module: the name is unknown. A module that exists but fails to import
            # something of its own is a real error and propagates.
            if not error.name or not (module + ".").startswith(error.name + "."):
                raise
    return tasks[name]


def enqueue_on_commit(
    task_name: str,
    args: Sequence[Any] = (),
    *,
    countdown: float | None = None,
    on_failure: Callable[[], None] | None = None,
    what: str = "",
) -> None:
    """Send the task ``task_name`` with ``args`` after the current transaction commits (at once
    outside a transaction), ``countdown`` seconds later if given.

    A broker outage must delay the work, never fail the change that asked for it: a publish
    error (or an eager task's failure) is logged as "could not enqueue <what>" (default: the
    task and its arguments), not raised, and ``on_failure()`` is called, e.g. to clear a debounce
    mark; the owner's sweep repairs what was missed."""
    arguments = tuple(args)
    what = what or f"{task_name}{arguments!r}"

    def send() -> None:
        try:
            options = {} if countdown is None else {"countdown": countdown}
            task_named(task_name).apply_async(arguments, **options)
        except BrokerUnavailable as error:
            # Expected during an outage, once per publish: one line, not a traceback each.
            logger.warning(
                "could not enqueue %s: the broker is unavailable (%s); the sweep will retry",
                what,
                error,
            )
        except Exception:
            logger.exception("could not enqueue %s; the sweep will retry", what)
        else:
            return
        if on_failure is not None:
            on_failure()

    transaction.on_commit(send)


def unqueued_or_overdue(
    grace_seconds: float, *, field: str = QUEUED_FIELD, now: datetime | None = None
) -> Q:
    """The rows whose mark is missing, or was set more than ``grace_seconds`` ago (its message
    overdue: lost with the broker or a killed worker)."""
    overdue = (now or timezone.now()) - timedelta(seconds=grace_seconds)
    return Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__lt": overdue})


def debounce_request(
    row: QuerySet[Any],
    *,
    task_name: str,
    args: Sequence[Any] = (),
    countdown: float | Callable[[], float] = 0.0,
    field: str = QUEUED_FIELD,
    overdue_after: float | None = None,
    force: bool = False,
    what: str = "",
) -> bool:
    """Ask for the computation whose state is ``row`` (a queryset of that one row) to run soon.

    Sets the row's mark unless it is already set; only the call that set it sends
    ``task_name(*args)``, after commit, and returns True (False: a message is already on its way,
    or the row does not exist). ``overdue_after``: a mark older than that many seconds is taken
    over (for owners without a beat sweep). ``force``: set the mark and send even if one is set
    (a follow-up the running task asks for itself). ``countdown`` may be a function, called only
    when this call sends (e.g. to read when the figures were last computed). A failed publish
    clears the mark this call set, so the next request sends again; it is logged as "could not
    enqueue <what>" (:func:`enqueue_on_commit`)."""
    now = timezone.now()
    claim = row
    if not force:
        if overdue_after is None:
            claim = claim.filter(**{f"{field}__isnull": True})
        else:
            claim = claim.filter(unqueued_or_overdue(overdue_after, field=field, now=now))
    if not claim.update(**{field: now}):
        return False
    seconds = countdown() if callable(countdown) else countdown

    def clear_the_mark() -> None:
        row.filter(**{field: now}).update(**{field: None})

    enqueue_on_commit(task_name, args, countdown=seconds, on_failure=clear_the_mark, what=what)
    return True


def debounce_request_stored(model: Any, key: dict[str, Any], **request: Any) -> bool:
    """:func:`debounce_request` for a stored figure's state row: the row of ``model`` with
    ``key`` (e.g. ``{"project_id": 3}``), created empty first when it is missing (two
    creators at once are harmless: the second insert is ignored). ``request``: the keywords
    of :func:`debounce_request`."""
    row = model.objects.filter(**key)
    if not row.exists():
        model.objects.bulk_create([model(**key)], ignore_conflicts=True)
    return debounce_request(row, **request)


def debounce_consume(row: QuerySet[Any], *, field: str = QUEUED_FIELD) -> None:
    """The task that a request sent has started: clear the mark (before reading the data), so a
    change from now on sends the next message."""
    row.update(**{field: None})
