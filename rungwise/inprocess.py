"""Tasks without a broker, run off the request: one worker process (or thread) per process.

With no ``CELERY_BROKER_URL`` (the embedded default of ``make run``) Celery runs tasks eagerly,
inside ``apply_async`` — for work enqueued on commit, inside the very request that committed (an
item's resolution, then the agreement figures and a ratings analysis: seconds of a submit). The
app's task class (``rungwise.celery.OffTheRequestTask``) asks :func:`should_defer` first: a task
sent while this thread is serving a request, or by a task the worker runs, is handed to
:func:`submit` instead, and this process's one worker runs it after the response, tasks one at a
time (one: SQLite has one writer). Outside a request (management commands, the shell) tasks
still run at once, as before, so a command that imports and then reads what its tasks wrote
keeps working.

**Where a job runs** (:data:`RUNNER`, from the ``RUNGWISE_INPROCESS_WORKER`` setting):

- ``process`` (the default): in one long-lived **worker process** that this process starts with
  its first job (``python -c`` with the same settings and environment, on the same database:
  SQLite in WAL mode lets its reads and the requests' writes pass each other). A job is handed
  over as a broker would carry it: the task's registered name, its JSON arguments and options,
  over a socket pair; the queue below (countdowns, collapsing, requests first) stays in this
  process, and a task that a job sends comes back to it with its countdown. The job's Python
  then no longer holds this process's GIL while a request is served (a job's plotting or
  statistics made a 25 ms submit take 70 ms and more), and the worker process runs at a lower
  CPU priority (nice +10), so on a busy machine a request gets the core first. The worker
  process dies with this process (its end of the socket closes; it also watches its parent),
  and one that dies while running a job is logged with the job's name and replaced at the next
  job. Jobs that are no task sent by name (a callable handed to :func:`submit`, a task whose
  arguments are not JSON) run in the thread, as below.
- ``thread``: in this process's worker thread, which gives way to requests: before each of its
  SQL statements outside a transaction it waits while a request is in flight (see "Requests go
  first"). The test suite's background path uses it (its test database lives inside the test's
  transaction, which another process cannot see).

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
  :func:`drain` hurries. In the worker process, the same pause before a statement: it reads
  how many requests this process serves from a shared-memory counter.
- **Bounded**: at most :data:`MAX_WAITING` jobs wait; beyond that a job runs at once in the
  caller (logged), as before this queue existed — slower, never lost.
- A job's exception is logged (with its traceback, in this process's log, whichever runner ran
  it) and the worker goes on.

The queue **survives nothing**: it lives in this process's memory. Tasks waiting when the process
stops (a runserver reload, a crash) are lost, exactly as with a broker that loses its messages;
what repairs those there repairs them here (the debounced computations' overdue takeover,
``rungwise/debounce.py``; the next change of an item). At a normal exit the queue is drained
first, jobs still counting down included (:func:`drain`, registered with ``atexit``). Deploy
with a broker for anything else.

Tests decide per test (``tests/conftest.py``): by default tasks run at once (:data:`MODE` =
``INLINE``), and a test of the background path switches to ``BACKGROUND`` (the
``background_tasks`` fixture, on the thread runner) and calls :func:`drain` before it reads what
the tasks wrote; ``tests/test_inprocess.py`` runs the worker process itself.
"""

from __future__ import annotations

import atexit
import contextlib
import heapq
import itertools
import json
import logging
import mmap
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from django.core.signals import request_finished, request_started

logger = logging.getLogger(__name__)

#: Tasks sent during a request run in the background worker (the default).
BACKGROUND = "background"
#: Tasks run at once, inside the caller (tests that read a task's result right away).
INLINE = "inline"
#: How this process runs eager tasks sent during a request; tests switch it.
MODE = BACKGROUND
#: Jobs run in a worker process of their own (see the module docstring).
PROCESS = "process"
#: Jobs run in this process's worker thread.
THREAD = "thread"
#: Where jobs run: PROCESS or THREAD; None until the first job reads the setting
#: ``INPROCESS_WORKER`` (rungwise/settings.py). Tests set it.
RUNNER: str | None = None
#: Jobs that may wait at once; more run in the caller (see the module docstring).
MAX_WAITING = 10_000
#: Seconds a due job waits for the requests in flight to finish before it starts anyway.
YIELD_LIMIT = 2.0
#: How much lower the worker process's CPU priority is than this process's (``os.nice``).
WORKER_NICENESS = 10


@dataclass(frozen=True)
class TaskCall:
    """A task sent by its registered name, as a broker's message carries it: JSON arguments and
    the options that still matter once its countdown has been honoured (task id, headers…)."""

    name: str
    args: list[Any]
    kwargs: dict[str, Any]
    options: dict[str, Any]

    @classmethod
    def of(cls, name: str, args: Any, kwargs: Any, options: dict[str, Any]) -> TaskCall | None:
        """The call of task ``name``, or None when its arguments or options are not JSON (such
        a job runs in the worker thread, as a callable)."""
        kept = {key: value for key, value in options.items() if key not in {"countdown", "eta"}}
        message = {"name": name, "args": list(args or ()), "kwargs": dict(kwargs or {})}
        try:
            # Round-tripped: what the worker process will see (tuples become lists).
            return cls(**json.loads(json.dumps({**message, "options": kept})))
        except (TypeError, ValueError):
            return None

    def run(self) -> None:
        """Run the task here, now, as Celery's eager mode does (its exception propagates)."""
        from rungwise.debounce import task_named

        # apply, not apply_async: this is the run the queue scheduled, not a new send (the app's
        # task class would hand it to the queue again).
        task_named(self.name).apply(self.args, self.kwargs, throw=True, **self.options)


@dataclass(order=True)
class _Job:
    due: float
    sequence: int
    run: Callable[[], None] = field(compare=False)
    key: Hashable | None = field(compare=False, default=None)
    cancelled: bool = field(compare=False, default=False)
    call: TaskCall | None = field(compare=False, default=None)


_serving = threading.local()
_state = threading.Condition()  # guards everything below; notified on every change
_waiting: list[_Job] = []  # a heap by (due, sequence); cancelled entries are skipped
_by_key: dict[Hashable, _Job] = {}
_unfinished = 0  # jobs submitted and not yet finished (waiting or running)
_in_flight = 0  # requests this process is serving
_hurrying = 0  # drain(hurry=True) calls waiting: jobs start without waiting for requests
_sequence = itertools.count()
_worker: threading.Thread | None = None
_process: _WorkerProcess | None = None  # the worker process, once the worker thread started it
#: _in_flight and _hurrying as the worker process reads them (two unsigned ints; see _publish).
_shared = mmap.mmap(-1, 8)
_shared_file: IO[bytes] | None = None  # the file behind _shared once a worker process shares it
#: In the worker process: the socket to the process that started it (None elsewhere).
_parent: _Channel | None = None


def _publish() -> None:
    """Write the request and hurry counts where the worker process reads them. Caller holds
    ``_state``."""
    struct.pack_into("II", _shared, 0, max(0, _in_flight), max(0, _hurrying))


def _request_started(**_: object) -> None:
    global _in_flight
    _serving.active = True
    with _state:
        _in_flight += 1
        _publish()


def _request_finished(**_: object) -> None:
    global _in_flight
    _serving.active = False
    with _state:
        _in_flight = max(0, _in_flight - 1)
        _publish()
        _state.notify_all()


# Signals, not a middleware: they reach every request of this process (runserver, gunicorn,
# the test client) without a line in the settings.
request_started.connect(_request_started, dispatch_uid="rungwise.inprocess.started")
request_finished.connect(_request_finished, dispatch_uid="rungwise.inprocess.finished")


def should_defer() -> bool:
    """Whether an eager task sent now goes to the background worker: in BACKGROUND mode, while
    this thread serves a request, or from a job the worker runs (so a task's follow-up keeps
    its countdown and runs after it, not inside it)."""
    if MODE != BACKGROUND:
        return False
    return (
        getattr(_serving, "active", False)
        or threading.current_thread() is _worker
        or _parent is not None
    )


def submit(
    job: Callable[[], None],
    *,
    delay: float = 0.0,
    key: Hashable | None = None,
    call: TaskCall | None = None,
) -> None:
    """Run ``job()`` in this process's background worker, no sooner than ``delay`` seconds from
    now, after the jobs due before it. With ``key``, a job with the same key that is still
    waiting absorbs this one (it runs at the earlier of the two times) instead. With ``call``
    (the task that ``job`` applies, by name), the worker process may run it instead of ``job``
    (:data:`RUNNER`). Exceptions are logged, never raised to anyone; when :data:`MAX_WAITING`
    jobs already wait, it runs at once, here.

    In the worker process, a task that a job sends goes back to the process that started it,
    to this function there."""
    global _unfinished
    if _parent is not None:
        if call is not None:
            _parent.send({"send": {**asdict(call), "delay": delay}})
            return
        try:
            job()  # not a task by name: nothing to hand back, so here, at once
        except Exception:
            logger.exception("an in-process background task failed")
        return
    due = time.monotonic() + max(0.0, delay)
    with _state:
        waiting = _by_key.get(key) if key is not None else None
        if waiting is not None:
            if due < waiting.due:
                waiting.cancelled = True
                _push(_Job(due, next(_sequence), waiting.run, key, call=waiting.call))
                _state.notify_all()
            return
        full = _unfinished >= MAX_WAITING
        if not full:
            _push(_Job(due, next(_sequence), job, key, call=call))
            _unfinished += 1
            _ensure_worker()
            _state.notify_all()
    if full:
        logger.warning("%d in-process tasks are waiting: this one runs at once", MAX_WAITING)
        _run_one(_Job(due, 0, job, key, call=None))


def drain(timeout: float = 60.0, *, hurry: bool = True) -> bool:
    """Wait until every job submitted so far (and every job those submit) has run; True when
    none is left, False when ``timeout`` seconds passed first. ``hurry`` (the default): jobs
    counting down are due at once, so a test or an exit need not wait out their delays; without
    it they run at their time, and after the requests in flight."""
    global _hurrying
    deadline = time.monotonic() + timeout
    with _state:
        _hurrying += hurry
        _publish()
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
            _publish()


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
            _run_one(job)
        finally:
            with _state:
                _unfinished -= 1
                _state.notify_all()


def _runner() -> str:
    global RUNNER
    if RUNNER is None:
        from django.conf import settings

        RUNNER = getattr(settings, "INPROCESS_WORKER", PROCESS)
    return RUNNER


class _GiveWay:
    """An execute wrapper (Django's ``connection.execute_wrapper``) for the worker's connections
    while it runs one job: before a statement outside a transaction, wait while a request is in
    flight, for at most as long in all as the job has run so far. In the worker process the
    requests are those of the process that started it (the shared counter)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.paused = 0.0

    def __call__(self, execute: Any, sql: Any, params: Any, many: bool, context: Any) -> Any:
        in_transaction = context["connection"].in_atomic_block
        if _parent is not None:
            # In the worker process: the CPU's leftovers only, except while it may hold the
            # write lock (a transaction, from its BEGIN on), which a request may be waiting for.
            beginning = isinstance(sql, str) and sql.lstrip()[:5].upper() == "BEGIN"
            _priority.holding_locks(in_transaction or beginning)
        if not in_transaction:
            self.wait_for_requests()
        return execute(sql, params, many, context)

    def wait_for_requests(self) -> None:
        if not _requests_waited_for():  # read without the lock: a stale answer costs one wait
            return
        now = time.monotonic()
        budget = (now - self.started - self.paused) - self.paused  # run so far, minus paused
        if budget <= 0:
            return
        deadline = now + budget
        if _parent is not None:
            # Another process's counter: looked at again every 2 ms (a request takes tens).
            while _requests_waited_for() and time.monotonic() < deadline:
                time.sleep(0.002)
        else:
            with _state:
                while _requests_waited_for():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    _state.wait(left)  # a finished request notifies
        self.paused += time.monotonic() - now


def _requests_waited_for() -> bool:
    """Whether requests are in flight and no drain hurries (the shared counts in the worker
    process, this process's own elsewhere)."""
    if _parent is not None:
        in_flight, hurrying = struct.unpack_from("II", _shared, 0)
        return bool(in_flight) and not hurrying
    return bool(_in_flight) and not _hurrying


def _run_one(job: _Job) -> None:
    from django.db import connections

    if job.call is not None and _parent is None and _runner() == PROCESS and _on_worker():
        try:
            _run_in_worker_process(job.call)
        except Exception:  # starting it, or talking to it: this task is lost, the next goes on
            logger.exception("an in-process background task failed: %s", job.call.name)
        return
    on_worker = _on_worker() or _parent is not None
    try:
        with contextlib.ExitStack() as stack:
            if on_worker:
                give_way = _GiveWay()
                for alias in connections:
                    stack.enter_context(connections[alias].execute_wrapper(give_way))
            job.run()
    except Exception:
        if _parent is not None:
            raise  # the worker process reports it to the process that logs it
        logger.exception("an in-process background task failed")
    finally:
        if on_worker and _parent is None:
            # This thread's connections are its own: give them back between tasks, so that a
            # SQLite file is not held open (and locked) while the queue is idle.
            connections.close_all()


def _on_worker() -> bool:
    return threading.current_thread() is _worker


# --- The worker process -------------------------------------------------------------------------


class _Priority:
    """The worker process's CPU scheduling: ``SCHED_IDLE`` (Linux: a core only when nothing
    else wants it, below any nice value, so the web process's request and the machine's other
    work go first) while its job computes, and the ordinary policy at its nice value while it
    may hold SQLite's write lock (else a request waiting for that lock would wait for the idle
    worker to get a core). Elsewhere only the nice value (``WORKER_NICENESS``)."""

    def __init__(self) -> None:
        self.idle: bool | None = None

    def holding_locks(self, holding: bool) -> None:
        idle = not holding
        if idle == self.idle or not hasattr(os, "sched_setscheduler"):
            return
        policy = os.SCHED_IDLE if idle else os.SCHED_OTHER
        try:
            os.sched_setscheduler(0, policy, os.sched_param(0))  # this thread: the job's
        except OSError:
            return
        self.idle = idle


_priority = _Priority()


class _Channel:
    """One JSON object per line over a socket, in both directions."""

    def __init__(self, connection: socket.socket) -> None:
        self.socket = connection
        self.reader = connection.makefile("rb")
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message).encode() + b"\n"
        with self.lock:
            self.socket.sendall(line)

    def receive(self) -> dict[str, Any] | None:
        """The next message, or None once the other end has closed."""
        line = self.reader.readline()
        return json.loads(line) if line else None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.reader.close()
            self.socket.close()


class _WorkerProcess:
    """The worker process as the process that started it sees it: one job at a time, handed
    over by :meth:`run` (only ever called by the worker thread)."""

    def __init__(self) -> None:
        global _shared, _shared_file
        from django.conf import settings
        from django.db import connections

        if _shared_file is None:
            # The counts the worker process reads, in a file both map (an anonymous map cannot
            # be handed to a process that is not forked).
            _shared_file = tempfile.TemporaryFile(prefix="rungwise-inprocess-")
            _shared_file.write(bytes(8))
            _shared_file.flush()
            with _state:
                _shared = mmap.mmap(_shared_file.fileno(), 8)
                _publish()
        ours, theirs = socket.socketpair()
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(
            [str(settings.BASE_DIR)] + [p for p in [environment.get("PYTHONPATH")] if p]
        )
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from rungwise.inprocess import worker_process_main; worker_process_main()",
                str(theirs.fileno()),
                str(_shared_file.fileno()),
                str(os.getpid()),
            ],
            pass_fds=(theirs.fileno(), _shared_file.fileno()),
            cwd=str(settings.BASE_DIR),
            env=environment,
        )
        theirs.close()
        self.channel = _Channel(ours)
        # The databases this process uses, by name as it sees them (a test run's test
        # database included): the worker process opens the same ones.
        self.channel.send(
            {
                "databases": {
                    alias: str(connections[alias].settings_dict["NAME"]) for alias in connections
                }
            }
        )

    def run(self, call: TaskCall) -> bool:
        """Run ``call`` there and wait for it; the tasks it sends are submitted here meanwhile.
        False when the process ended first (it is then of no further use)."""
        try:
            self.channel.send({"run": asdict(call)})
        except OSError:  # it ended since the last job
            return False
        while True:
            try:
                message = self.channel.receive()
            except (OSError, ValueError):
                message = None
            if message is None:
                return False
            if "send" in message:
                sent = dict(message["send"])
                delay = float(sent.pop("delay"))
                _submit_call(TaskCall(**sent), delay)
            elif "done" in message:
                if message.get("error"):
                    logger.error(
                        "an in-process background task failed: %s (in the worker process)\n%s",
                        call.name,
                        message["error"],
                    )
                return True

    def stop(self, timeout: float = 10.0) -> None:
        """Close its end of the socket (the process exits when it reads that) and wait."""
        self.channel.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _submit_call(call: TaskCall, delay: float) -> None:
    """Queue a task the worker process's job sent, as if a job of this process had sent it (the
    same key, so a waiting identical call absorbs it)."""
    from rungwise.debounce import task_named

    task_named(call.name).apply_async(call.args, call.kwargs, countdown=delay, **call.options)


def _run_in_worker_process(call: TaskCall) -> None:
    """Hand ``call`` to the worker process (started now if none runs) and wait for it."""
    global _process
    if _process is None or _process.process.poll() is not None:
        if _process is not None:
            logger.warning(
                "the in-process worker process had ended (exit code %s) between tasks: a new "
                "one starts",
                _process.process.returncode,
            )
            _process.stop()
        _process = _WorkerProcess()
    if not _process.run(call):
        _process.stop(timeout=5)  # ended, or ending: its exit code
        logger.error(
            "the in-process worker process ended (exit code %s) while it ran %s: that task is "
            "lost; the next task starts a new worker process",
            _process.process.returncode,
            call.name,
        )
        _process = None


def worker_process_main() -> None:
    """The worker process (``python -c``; argv: its socket's descriptor, the shared counts'
    descriptor, the parent's pid). Runs each job it is handed, one at a time, until its parent
    closes the socket or exits."""
    global MODE, _parent, _shared
    import django

    socket_fd, shared_fd, parent_pid = (int(value) for value in sys.argv[1:4])
    _shared = mmap.mmap(shared_fd, 8, access=mmap.ACCESS_READ)
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    # Ctrl+C in a terminal reaches the whole process group: the web process stops, and this
    # one with it (below), without a KeyboardInterrupt of its own in the middle of a job.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The parent may die without closing the socket cleanly in time (killed mid-job): exit then.
    threading.Thread(
        target=_exit_with_parent, args=(parent_pid,), name="rungwise-parent-watch", daemon=True
    ).start()
    django.setup()
    from django.db import connections

    from rungwise.celery import app

    # Tasks that a job sends go back to the parent (should_defer, submit), which decides how
    # they run; here they are never published to a broker.
    app.conf.task_always_eager = True

    channel = _Channel(socket.socket(fileno=socket_fd))
    MODE = BACKGROUND
    _parent = channel
    while (message := channel.receive()) is not None:
        if "databases" in message:
            for alias, name in message["databases"].items():
                connections.settings[alias]["NAME"] = name
                connections[alias].close()
            continue
        call = TaskCall(**message["run"])
        error = None
        _priority.holding_locks(False)
        try:
            _run_one(_Job(0.0, 0, call.run, call=call))
        except Exception:
            error = traceback.format_exc()
        finally:
            connections.close_all()
        channel.send({"done": True, "error": error})


def _exit_with_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    os._exit(0)


@atexit.register
def _drain_at_exit() -> None:
    global _process
    if _worker is not None and _worker.is_alive() and waiting():
        if not drain(timeout=120):
            logger.warning("in-process tasks still waiting at exit were dropped")
    if _process is not None:
        _process.stop()
        _process = None
