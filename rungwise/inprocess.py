"""Tasks without a broker, run off the request: one background thread per process.

With no ``CELERY_BROKER_URL`` (the embedded default of ``make run``) Celery runs tasks eagerly,
inside ``apply_async`` — for work enqueued on commit, inside the very request that committed (an
item's resolution, then the agreement figures and a ratings analysis: seconds of a submit). The
app's task class (``rungwise.celery.OffTheRequestTask``) asks :func:`should_defer` first: a task
sent while this thread is serving a request, or by a task this thread runs, is handed to
:func:`submit` instead, and the one worker thread of this process (one: SQLite has one writer)
runs it after the response, tasks one at a time. Outside a request (management commands, the
shell) tasks still run at once, as before, so a command that imports and then reads what its
tasks wrote keeps working.

What a broker and its worker would do, the queue does too:

- **Countdown and ETA are honoured**: a job runs no sooner than ``delay`` seconds after it was
  submitted; jobs due at the same moment run in the order sent. The apps' debounce
  (``rungwise/debounce.py``: the first change of a burst sets a mark and sends one message with
  a countdown; the task clears the mark when it starts) therefore coalesces a burst into one
  run, as with Celery, instead of one run per change.
- **Identical waiting jobs collapse** (``key``: the task's name and arguments): a second
  ``refresh(7)`` sent while the first still waits is dropped, and the one kept runs at the
  earlier of the two times. Tasks are safe to run twice (CONTRIBUTING.md, "Celery tasks"), and
  the one kept has not started, so it sees every change the dropped one was sent for.
- **Requests go first**: a due job waits to start while this process serves a request (at most
  :data:`YIELD_LIMIT` seconds), so the one worker's computations share the CPU and the SQLite
  write lock with an annotator's clicks as little as it can. A job that has started gives way
  too: before each of its SQL statements outside a transaction (holding no write lock) it waits
  while a request is in flight, so the request has the GIL and SQLite to itself instead of
  handing the GIL back and forth at every statement. Never for longer in all than the job has
  run (a job runs at least at half speed however busy the site), and never while
  :func:`drain` hurries.
- **Bounded**: at most :data:`MAX_WAITING` jobs wait; beyond that a job runs at once in the
  caller (logged), as before this queue existed — slower, never lost.
- A job's exception is logged and the worker goes on.

The queue **survives nothing**: it lives in this process's memory. Tasks waiting when the process
stops (a runserver reload, a crash) are lost, exactly as with a broker that loses its messages;
what repairs those there repairs them here (the debounced computations' overdue takeover,
``rungwise/debounce.py``; the next change of an item). At a normal exit the queue is drained
first, jobs still counting down included (:func:`drain`, registered with ``atexit``). Deploy
with a broker for anything else.

Tests decide per test (``tests/conftest.py``): by default tasks run at once (:data:`MODE` =
``INLINE``), and a test of the background path switches to ``BACKGROUND`` (the
``background_tasks`` fixture) and calls :func:`drain` before it reads what the tasks wrote.
"""

from __future__ import annotations

import atexit
import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from django.core.signals import request_finished, request_started

logger = logging.getLogger(__name__)

#: Tasks sent during a request run in the background thread (the default).
BACKGROUND = "background"
#: Tasks run at once, inside the caller (tests that read a task's result right away).
INLINE = "inline"
#: How this process runs eager tasks sent during a request; tests switch it.
MODE = BACKGROUND
#: Jobs that may wait at once; more run in the caller (see the module docstring).
MAX_WAITING = 10_000
#: Seconds a due job waits for the requests in flight to finish before it starts anyway.
YIELD_LIMIT = 2.0


@dataclass(order=True)
class _Job:
    due: float
    sequence: int
    run: Callable[[], None] = field(compare=False)
    key: Hashable | None = field(compare=False, default=None)
    cancelled: bool = field(compare=False, default=False)


_serving = threading.local()
_state = threading.Condition()  # guards everything below; notified on every change
_waiting: list[_Job] = []  # a heap by (due, sequence); cancelled entries are skipped
_by_key: dict[Hashable, _Job] = {}
_unfinished = 0  # jobs submitted and not yet finished (waiting or running)
_in_flight = 0  # requests this process is serving
_hurrying = 0  # drain(hurry=True) calls waiting: jobs start without waiting for requests
_sequence = itertools.count()
_worker: threading.Thread | None = None


def _request_started(**_: object) -> None:
    global _in_flight
    _serving.active = True
    with _state:
        _in_flight += 1


def _request_finished(**_: object) -> None:
    global _in_flight
    _serving.active = False
    with _state:
        _in_flight = max(0, _in_flight - 1)
        _state.notify_all()


# Signals, not a middleware: they reach every request of this process (runserver, gunicorn,
# the test client) without a line in the settings.
request_started.connect(_request_started, dispatch_uid="rungwise.inprocess.started")
request_finished.connect(_request_finished, dispatch_uid="rungwise.inprocess.finished")


def should_defer() -> bool:
    """Whether an eager task sent now goes to the background thread: in BACKGROUND mode, while
    this thread serves a request, or from a job of the background thread itself (so a task's
    follow-up keeps its countdown and runs after it, not inside it)."""
    if MODE != BACKGROUND:
        return False
    return getattr(_serving, "active", False) or threading.current_thread() is _worker


def submit(job: Callable[[], None], *, delay: float = 0.0, key: Hashable | None = None) -> None:
    """Run ``job()`` in this process's background thread, no sooner than ``delay`` seconds from
    now, after the jobs due before it. With ``key``, a job with the same key that is still
    waiting absorbs this one (it runs at the earlier of the two times) instead. Exceptions of
    ``job`` are logged, never raised to anyone; when :data:`MAX_WAITING` jobs already wait, it
    runs at once, here."""
    global _unfinished
    due = time.monotonic() + max(0.0, delay)
    with _state:
        waiting = _by_key.get(key) if key is not None else None
        if waiting is not None:
            if due < waiting.due:
                waiting.cancelled = True
                _push(_Job(due, next(_sequence), waiting.run, key))
                _state.notify_all()
            return
        full = _unfinished >= MAX_WAITING
        if not full:
            _push(_Job(due, next(_sequence), job, key))
            _unfinished += 1
            _ensure_worker()
            _state.notify_all()
    if full:
        logger.warning("%d in-process tasks are waiting: this one runs at once", MAX_WAITING)
        _run_one(job)


def drain(timeout: float = 60.0, *, hurry: bool = True) -> bool:
    """Wait until every job submitted so far (and every job those submit) has run; True when
    none is left, False when ``timeout`` seconds passed first. ``hurry`` (the default): jobs
    counting down are due at once, so a test or an exit need not wait out their delays; without
    it they run at their time, and after the requests in flight."""
    global _hurrying
    deadline = time.monotonic() + timeout
    with _state:
        _hurrying += hurry
        try:
            while _unfinished:
                if hurry:
                    _hurry()
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                _state.wait(min(left, 0.5))
            return True
        finally:
            _hurrying -= hurry


def waiting() -> int:
    """How many jobs are submitted and not finished (waiting, counting down or running)."""
    with _state:
        return _unfinished


def _push(job: _Job) -> None:
    heapq.heappush(_waiting, job)
    if job.key is not None:
        _by_key[job.key] = job


def _hurry() -> None:
    """Make every waiting job due now, in its order. Caller holds ``_state``."""
    now = time.monotonic()
    for job in _waiting:
        job.due = min(job.due, now)
    heapq.heapify(_waiting)
    _state.notify_all()


def _ensure_worker() -> None:
    """Start the worker thread unless it runs. Caller holds ``_state``."""
    global _worker
    if _worker is None or not _worker.is_alive():
        _worker = threading.Thread(target=_work, name="rungwise-inprocess-tasks", daemon=True)
        _worker.start()


def _next_job() -> _Job:
    """The next job to run, once it is due and no request is in flight (or it has waited
    :data:`YIELD_LIMIT` seconds past its time for them)."""
    with _state:
        while True:
            while _waiting and _waiting[0].cancelled:
                heapq.heappop(_waiting)
            if not _waiting:
                _state.wait()
                continue
            job = _waiting[0]
            now = time.monotonic()
            if job.due > now:
                _state.wait(job.due - now)
                continue
            if _in_flight and not _hurrying and now < job.due + YIELD_LIMIT:
                _state.wait(job.due + YIELD_LIMIT - now)  # a finished request notifies
                continue
            heapq.heappop(_waiting)
            if job.key is not None and _by_key.get(job.key) is job:
                del _by_key[job.key]
            return job


def _work() -> None:
    global _unfinished
    while True:
        job = _next_job()
        try:
            _run_one(job.run)
        finally:
            with _state:
                _unfinished -= 1
                _state.notify_all()


class _GiveWay:
    """An execute wrapper (Django's ``connection.execute_wrapper``) for the worker's connections
    while it runs one job: before a statement outside a transaction, wait while a request is in
    flight, for at most as long in all as the job has run so far."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.paused = 0.0

    def __call__(self, execute: Any, sql: Any, params: Any, many: bool, context: Any) -> Any:
        if not context["connection"].in_atomic_block:
            self.wait_for_requests()
        return execute(sql, params, many, context)

    def wait_for_requests(self) -> None:
        if not _in_flight or _hurrying:  # read without the lock: a stale answer costs one wait
            return
        now = time.monotonic()
        budget = (now - self.started - self.paused) - self.paused  # run so far, minus paused
        if budget <= 0:
            return
        deadline = now + budget
        with _state:
            while _in_flight and not _hurrying:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                _state.wait(left)  # a finished request notifies
        self.paused += time.monotonic() - now


def _run_one(job: Callable[[], None]) -> None:
    from django.db import connections

    on_worker = threading.current_thread() is _worker
    try:
        with contextlib.ExitStack() as stack:
            if on_worker:
                give_way = _GiveWay()
                for alias in connections:
                    stack.enter_context(connections[alias].execute_wrapper(give_way))
            job()
    except Exception:
        logger.exception("an in-process background task failed")
    finally:
        if on_worker:
            # This thread's connections are its own: give them back between tasks, so that a
            # SQLite file is not held open (and locked) while the queue is idle.
            connections.close_all()


@atexit.register
def _drain_at_exit() -> None:
    if _worker is not None and _worker.is_alive() and waiting():
        if not drain(timeout=120):
            logger.warning("in-process tasks still waiting at exit were dropped")
