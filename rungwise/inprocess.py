"""Tasks without a broker, run off the request: one background thread per process.

With no ``CELERY_BROKER_URL`` (the embedded default of ``make run``) Celery runs tasks eagerly,
inside ``apply_async`` — for work enqueued on commit, inside the very request that committed (an
item's resolution, then the agreement figures and a ratings analysis: seconds of a submit). The
app's task class (``rungwise.celery.OffTheRequestTask``) asks :func:`should_defer` first: a task
sent while this thread is serving a request is handed to :func:`submit` instead, and the one
worker thread of this process runs it after the response, tasks one at a time, in the order
they were sent. Outside a request (management commands, the shell, a task sending another from
this thread) tasks still run at once, as before, so a command that imports and then reads what
its tasks wrote keeps working.

The queue **survives nothing**: it lives in this process's memory. Tasks waiting when the process
stops (a runserver reload, a crash) are lost, exactly as with a broker that loses its messages;
what repairs those there repairs them here (the debounced computations' overdue takeover,
``rungwise/debounce.py``; the next change of an item). At a normal exit the queue is drained
first (:func:`drain`, registered with ``atexit``). Deploy with a broker for anything else.

Tests decide per test (``tests/conftest.py``): by default tasks run at once (:data:`MODE` =
``INLINE``), and a test of the background path switches to ``BACKGROUND`` and calls
:func:`drain` before it reads what the tasks wrote.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections.abc import Callable

from django.core.signals import request_finished, request_started

logger = logging.getLogger(__name__)

#: Tasks sent during a request run in the background thread (the default).
BACKGROUND = "background"
#: Tasks run at once, inside the caller (tests that read a task's result right away).
INLINE = "inline"
#: How this process runs eager tasks sent during a request; tests switch it.
MODE = BACKGROUND

_serving = threading.local()
_jobs: queue.Queue[Callable[[], None]] = queue.Queue()
_worker: threading.Thread | None = None
_worker_lock = threading.Lock()


def _request_started(**_: object) -> None:
    _serving.active = True


def _request_finished(**_: object) -> None:
    _serving.active = False


# Signals, not a middleware: they reach every request of this process (runserver, gunicorn,
# the test client) without a line in the settings.
request_started.connect(_request_started, dispatch_uid="rungwise.inprocess.started")
request_finished.connect(_request_finished, dispatch_uid="rungwise.inprocess.finished")


def should_defer() -> bool:
    """Whether an eager task sent now goes to the background thread: in BACKGROUND mode, while
    this thread serves a request (never from the worker thread itself)."""
    return (
        MODE == BACKGROUND
        and getattr(_serving, "active", False)
        and threading.current_thread() is not _worker
    )


def submit(job: Callable[[], None]) -> None:
    """Run ``job()`` in this process's background thread, after the jobs already waiting.
    Its exceptions are logged, never raised to anyone."""
    _ensure_worker()
    _jobs.put(job)


def drain(timeout: float = 60.0) -> bool:
    """Wait until every job submitted so far (and every job those submit) has run; True when
    the queue is empty, False when ``timeout`` seconds passed first."""
    finished = threading.Event()

    def wait() -> None:
        _jobs.join()
        finished.set()

    threading.Thread(target=wait, name="rungwise-inprocess-drain", daemon=True).start()
    return finished.wait(timeout)


def _ensure_worker() -> None:
    global _worker
    with _worker_lock:
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_run, name="rungwise-inprocess-tasks", daemon=True)
            _worker.start()


def _run() -> None:
    from django.db import connections

    while True:
        job = _jobs.get()
        try:
            job()
        except Exception:
            logger.exception("an in-process background task failed")
        finally:
            # This thread's connections are its own: give them back between tasks, so that a
            # SQLite file is not held open (and locked) while the queue is idle.
            connections.close_all()
            _jobs.task_done()


@atexit.register
def _drain_at_exit() -> None:
    if _worker is not None and _worker.is_alive() and _jobs.unfinished_tasks:
        if not drain(timeout=120):
            logger.warning("in-process tasks still waiting at exit were dropped")
