"""Researchers' reads off the primary: a PostgreSQL streaming replica, used only where a view
asks for it (docs/deployment.md, "Reads off the primary").

Contract:

* ``RUNGWISE_REPLICA_URL`` adds the database alias ``replica`` and the router
  ``rungwise.dbrouter.ReplicaRouter`` (rungwise/settings.py). Unset, nothing here does anything:
  :func:`reads_from_replica` calls the view as it is.
* A view decorated with :func:`reads_from_replica` reads from the replica for the length of the
  request (GET and HEAD only), when the replica answers and trails the primary by at most
  ``REPLICA_MAX_LAG`` seconds; otherwise from the primary. The lag is asked of the replica at
  most once every ``REPLICA_LAG_CACHE_SECONDS`` per process (a replica that does not answer is
  asked again after ``REPLICA_RETRY_SECONDS``).
* Writes never go to the replica (the router sends every write to ``default``), nor do the
  reads that decide who the visitor is and what they may see: sign-in, sessions, messages,
  API tokens, sign-in lockout and project memberships (``PRIMARY_ONLY``), so a person signed in
  or let in a moment ago is recognised at once, and a membership removed a moment ago is
  refused at once. Reads inside an open transaction on the primary stay there too (a write
  and the read that follows it agree).
* A page read from the replica has ``request.replica_read`` (a :class:`ReplicaState`); the base
  template shows "Data as of N s ago" from it (templates/includes/replica_note.html).
* If the replica fails in the middle of a request (a connection lost, the server stopped), the
  view runs again on the primary: the decorated views only read, so running one twice is safe.

Raw SQL written against ``django.db.connection`` is not routed (Django routes querysets only);
it reads the primary. Hand-written reads that belong to a marked page ask for
:func:`read_connection` instead (the Agreement tab's vote COPY in agreement/votes.py, the
stranded-items check in annotation/stranding.py): the connection the router picks for a model's
reads there, so they follow the page to the replica and back to the primary on the same rules.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.http.response import HttpResponseBase
from django.template.response import SimpleTemplateResponse

#: The alias rungwise/settings.py gives the replica.
REPLICA = "replica"

#: The alias querysets read from in this context: ``REPLICA`` inside a view that reads from the
#: replica, None everywhere else (a context variable: each thread and task has its own).
_read_alias: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "rungwise_read_alias", default=None
)

#: One statement on the replica: whether it is a standby, and how far it trails. It has caught
#: up (lag 0) when it has replayed all it received and its WAL receiver is running (a replica
#: cut off from the primary has replayed all it received too, but is falling behind); else the
#: lag is the age of the last transaction it replayed. The row of pg_stat_wal_receiver is
#: visible without privileges (only its details need pg_read_all_stats).
LAG_SQL = """
    SELECT pg_is_in_recovery(),
           CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
                     AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver)
                THEN 0.0
                ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8
           END
"""


@dataclass(frozen=True)
class ReplicaState:
    """What the last look at the replica found: whether pages may read there now, the lag in
    seconds (None when unknown), and the reason when they may not."""

    usable: bool
    lag_seconds: float | None
    reason: str = ""
    #: ``time.monotonic()`` when it was looked at.
    checked_at: float = 0.0

    @property
    def age_text(self) -> str:
        """The lag as the page says it: "less than a second" or "N s"."""
        if self.lag_seconds is None or self.lag_seconds < 1:
            return "less than a second"
        return f"{int(self.lag_seconds)} s"


_state: ReplicaState | None = None
_state_lock = threading.Lock()


def replica_configured() -> bool:
    """Whether this site has a replica (``RUNGWISE_REPLICA_URL``)."""
    return REPLICA in connections.settings


def current_read_alias() -> str | None:
    """The alias querysets read from here: ``REPLICA`` inside :func:`reading_from_replica`."""
    return _read_alias.get()


def read_connection(model: type[Model]) -> BaseDatabaseWrapper:
    """The connection a queryset of ``model`` reads from here: the replica inside a marked
    view (unless the router keeps ``model`` or an open transaction on the primary), else the
    primary. For hand-written SQL that reads what such a queryset would; an error on it marks
    the replica's connection (``errors_occurred``) when it runs through Django's cursor or
    ``wrap_database_errors``, so :func:`reads_from_replica` runs the view again on the
    primary."""
    return connections[router.db_for_read(model)]


def forget_replica_state() -> None:
    """Look at the replica again on the next request (tests; after a fail-over)."""
    global _state
    with _state_lock:
        _state = None


def replica_state() -> ReplicaState:
    """The replica's state, looked at no more often than ``REPLICA_LAG_CACHE_SECONDS`` (or
    ``REPLICA_RETRY_SECONDS`` after it failed to answer) in this process."""
    global _state
    now = time.monotonic()
    state = _state
    if state is not None:
        keep = (
            settings.REPLICA_LAG_CACHE_SECONDS
            if state.lag_seconds is not None or state.usable
            else settings.REPLICA_RETRY_SECONDS
        )
        if now - state.checked_at < keep:
            return state
    # One thread looks; the others keep the previous answer meanwhile (or wait for the first).
    if not _state_lock.acquire(blocking=state is None):
        return state  # type: ignore[return-value]  # not None: blocking when it is
    try:
        if _state is not None and _state is not state:
            return _state
        _state = _look_at_replica()
        return _state
    finally:
        _state_lock.release()


def _look_at_replica() -> ReplicaState:
    now = time.monotonic()
    connection = connections[REPLICA]
    try:
        with connection.cursor() as cursor:
            cursor.execute(LAG_SQL)
            in_recovery, lag = cursor.fetchone()
    except DatabaseError as error:
        _discard(connection)
        return ReplicaState(False, None, f"the replica does not answer: {error}", now)
    if not in_recovery:
        # A replica promoted to a primary of its own no longer follows this site's writes.
        return ReplicaState(False, None, "the replica is not a standby", now)
    if lag is None:
        return ReplicaState(False, None, "the replica has replayed nothing yet", now)
    lag = max(float(lag), 0.0)
    if lag > settings.REPLICA_MAX_LAG:
        return ReplicaState(
            False,
            lag,
            f"the replica trails by {lag:.0f} s (bound {settings.REPLICA_MAX_LAG} s)",
            now,
        )
    return ReplicaState(True, lag, "", now)


def _discard(connection: Any) -> None:
    """Close a replica connection that failed, so the next use opens a new one."""
    try:
        connection.close()
    except DatabaseError:
        connection.connection = None


def _mark_down(reason: str) -> None:
    global _state
    with _state_lock:
        _state = ReplicaState(False, None, reason, time.monotonic())


@contextmanager
def reading_from_replica() -> Iterator[None]:
    """Querysets read from the replica inside this block (the router's rules still apply:
    writes and ``PRIMARY_ONLY`` models go to the primary). The caller has checked the replica
    (:func:`replica_state`)."""
    token = _read_alias.set(REPLICA)
    try:
        yield
    finally:
        _read_alias.reset(token)


def reads_from_replica(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Mark a read-only page as one that may read from the replica (the module's contract)."""

    @wraps(view)
    def wrapper(request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if (
            not replica_configured()
            or request.method not in ("GET", "HEAD")
            or current_read_alias() is not None
        ):
            return view(request, *args, **kwargs)
        state = replica_state()
        if not state.usable:
            return view(request, *args, **kwargs)
        replica = connections[REPLICA]
        replica.errors_occurred = False
        try:
            with reading_from_replica():
                request.replica_read = state
                response = view(request, *args, **kwargs)
                # A TemplateResponse is rendered after the view returns: render it here, so its
                # template's querysets read where the view did.
                if isinstance(response, SimpleTemplateResponse) and not response.is_rendered:
                    response.render()
                return response
        except DatabaseError as error:
            if not replica.errors_occurred:
                raise
            _discard(replica)
            _mark_down(f"the replica failed during a request: {error}")
            if hasattr(request, "replica_read"):
                del request.replica_read
            return view(request, *args, **kwargs)

    return wrapper
