"""Tasks without a broker run off the request (rungwise/inprocess.py, rungwise/celery.py): a
task sent while a request is served waits for the background thread; one sent elsewhere runs at
once; a failing task is logged and the thread goes on. Each test holds the thread with a job
that waits for an event, so what "not yet" means does not depend on timing. The queue acts as
a worker would: countdowns and ETAs honoured, the same call sent again while it waits run once,
requests first, a bound beyond which tasks run in the caller. The worker process (the default
of `make run`) is tested at the end: tasks by name run there, what they send comes back, a
failure or its death is logged, and it ends with the process that started it."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.signals import request_finished, request_started
from django.urls import reverse

from annotation.models import Assignment, ItemStage, Role
from ratings import services as ratings_services
from ratings.models import RatingsSetup
from rungwise import inprocess
from rungwise.celery import app
from tests.factories import make_member
from tests.ratings.conftest import make_ratings_project, pairs_csv

#: Django closes stale connections when a request starts: the signals below need the database.
pytestmark = pytest.mark.django_db

RAN: list[str] = []


@app.task(name="tests.test_inprocess.record")
def record(word: str) -> None:
    RAN.append(word)


@app.task(name="tests.test_inprocess.explode")
def explode() -> None:
    raise RuntimeError("this task fails on purpose")


@pytest.fixture
def held(background_tasks):
    """The background thread, busy until the test sets the returned event."""
    release = threading.Event()
    background_tasks.submit(lambda: release.wait(30))
    RAN.clear()
    yield release
    release.set()


def serving_a_request():
    request_started.send(sender=None)


def done_serving():
    request_finished.send(sender=None)


def test_a_task_sent_during_a_request_runs_after_it_in_the_background(held, background_tasks):
    serving_a_request()
    try:
        record.delay("during")
    finally:
        done_serving()
    assert RAN == []  # not inside the request: the thread is still busy with the earlier job
    held.set()
    assert background_tasks.drain(timeout=30)
    assert RAN == ["during"]


def test_a_task_sent_outside_a_request_runs_at_once(held):
    record.delay("now")  # a management command, the shell
    assert RAN == ["now"]


def test_tasks_run_in_the_order_they_were_sent_and_a_failure_stops_none(
    held, background_tasks, caplog
):
    serving_a_request()
    try:
        record.delay("first")
        explode.delay()
        record.delay("second")
    finally:
        done_serving()
    held.set()
    assert background_tasks.drain(timeout=30)
    assert RAN == ["first", "second"]
    assert "an in-process background task failed" in caplog.text


def test_inline_mode_runs_tasks_inside_the_request():
    RAN.clear()
    serving_a_request()
    try:
        record.delay("inline")  # tests' default (tests/conftest.py)
    finally:
        done_serving()
    assert RAN == ["inline"]


def completing_ratings_submit(client):
    """A rater's submit through the item screen that completes a one-pair ratings project's
    only item (overlap 1): (the lease it answered, the response)."""
    project = make_ratings_project(overlap=1)
    pairs = [("k1", "The storm hit.", "The power went out.", "causal", "", "")]
    ratings_services.pairs_import(project=project, content=pairs_csv(pairs), filename="pairs.csv")
    stage_id = RatingsSetup.objects.get(project=project).rating_stage_id
    rater = make_member(project, Role.ANNOTATOR, username="quick")
    client.force_login(rater)
    client.post(reverse("annotation:stage", args=[stage_id]), HTTP_HX_REQUEST="true")
    lease = Assignment.objects.get(annotator=rater, status=Assignment.Status.ACTIVE)
    response = client.post(
        reverse("annotation:submit", args=[lease.pk]), {"value": "7"}, HTTP_HX_REQUEST="true"
    )
    return lease, response


@pytest.mark.django_db(transaction=True)
def test_a_ratings_submit_answers_before_the_item_is_resolved(client, held, background_tasks):
    lease, response = completing_ratings_submit(client)

    assert response.status_code == 200
    # The answer completed the item (overlap 1), but its resolution waits for the thread.
    assert ItemStage.objects.get(pk=lease.item_stage_id).state == ItemStage.State.RESOLVING
    held.set()
    assert background_tasks.drain(timeout=60)
    assert ItemStage.objects.get(pk=lease.item_stage_id).state == ItemStage.State.RESOLVED


# --- The queue as a worker: countdown, collapse, requests first, bounds (rungwise/inprocess.py)


def ran_so_far(background_tasks) -> list[str]:
    """What has run once every job due now has: a marker job, sent last with no delay, sets an
    event when the worker reaches it (jobs due now run in the order sent)."""
    reached = threading.Event()
    background_tasks.submit(reached.set)
    assert reached.wait(30), "the worker did not reach the marker"
    return list(RAN)


def test_a_countdown_is_honoured_and_drain_hurries_it(held, background_tasks):
    serving_a_request()
    try:
        record.apply_async(("later",), countdown=3600)
        record.delay("now")
    finally:
        done_serving()
    held.set()
    assert ran_so_far(background_tasks) == ["now"]  # "later" is still counting down
    assert background_tasks.drain(timeout=30)  # hurries what counts down: a test need not wait
    assert RAN == ["now", "later"]


def test_a_short_countdown_runs_at_its_time_without_hurry(background_tasks):
    RAN.clear()
    serving_a_request()
    try:
        record.apply_async(("soon",), countdown=0.2)
    finally:
        done_serving()
    assert background_tasks.drain(timeout=30, hurry=False)
    assert RAN == ["soon"]


def test_the_same_call_sent_again_while_it_waits_runs_once_at_the_earlier_time(
    held, background_tasks
):
    serving_a_request()
    try:
        for _ in range(3):
            record.apply_async(("burst",), countdown=3600)
        record.apply_async(("other",), countdown=3600)  # other arguments: a job of its own
        record.apply_async(("urgent",), countdown=3600)
        record.apply_async(("urgent",))  # due now: the waiting one runs now
    finally:
        done_serving()
    held.set()
    assert ran_so_far(background_tasks) == ["urgent"]
    assert background_tasks.drain(timeout=30)
    assert RAN == ["urgent", "burst", "other"]


@app.task(name="tests.test_inprocess.follow_up")
def follow_up(word: str) -> None:
    RAN.append(word)
    record.apply_async((f"{word}, then later",), countdown=3600)


def test_a_task_sent_by_a_background_task_keeps_its_countdown(held, background_tasks):
    serving_a_request()
    try:
        follow_up.delay("first")
    finally:
        done_serving()
    held.set()
    assert ran_so_far(background_tasks) == ["first"]
    assert background_tasks.drain(timeout=30)
    assert RAN == ["first", "first, then later"]


def test_a_due_job_waits_for_the_request_in_flight(background_tasks, monkeypatch):
    monkeypatch.setattr(background_tasks, "YIELD_LIMIT", 3600)
    RAN.clear()
    serving_a_request()
    try:
        record.delay("after the response")
        # Due, but a request is being served (drain's hurry would let it start: a test or an
        # exit waits for no request).
        assert not background_tasks.drain(timeout=0.5, hurry=False)
        assert RAN == []
    finally:
        done_serving()
    assert background_tasks.drain(timeout=30)
    assert RAN == ["after the response"]


def test_beyond_the_bound_a_task_runs_in_the_caller(held, background_tasks, monkeypatch):
    monkeypatch.setattr(background_tasks, "MAX_WAITING", 1)  # the held job fills the queue
    serving_a_request()
    try:
        record.delay("overflow")
        assert RAN == ["overflow"]  # at once, not lost
    finally:
        done_serving()


@pytest.mark.django_db(transaction=True)  # each change commits, as a request's does
def test_a_burst_of_ratings_changes_computes_the_analysis_once(background_tasks, monkeypatch):
    """The apps' debounce (rungwise/debounce.py) over the queue: the first change sends the
    refresh with its countdown and the mark stays set while it counts down, so the changes that
    follow send nothing; the eager tasks of before ran at once and cleared the mark each time."""
    from ratings import tasks as ratings_tasks

    computed: list[tuple] = []
    monkeypatch.setattr(
        ratings_tasks.services,
        "analysis_refresh",
        lambda **selection: computed.append(tuple(sorted(selection.items()))) or True,
    )
    project = make_ratings_project(overlap=1)
    for _ in range(5):
        serving_a_request()
        try:
            ratings_services.analysis_refresh_request(project_id=project.pk)
        finally:
            done_serving()
    assert background_tasks.drain(timeout=30)
    assert computed == [(("project_id", project.pk), ("run_id", None), ("source", "all"))]


def test_an_eta_is_honoured_as_a_countdown(held, background_tasks):
    serving_a_request()
    try:
        record.apply_async(("at its time",), eta=datetime.now(UTC) + timedelta(hours=1))
        record.delay("now")
    finally:
        done_serving()
    held.set()
    assert ran_so_far(background_tasks) == ["now"]
    assert background_tasks.drain(timeout=30)
    assert RAN == ["now", "at its time"]


def test_the_embedded_database_file_is_written_ahead(tmp_path):
    """The settings' SQLite block: a file opened with the project's options is in WAL mode with
    synchronous=NORMAL, so the background thread's reads and the request's writes do not block
    each other and a commit does not wait for the disk (rungwise/settings.py)."""
    from django.db import connections
    from django.db.backends.sqlite3.base import DatabaseWrapper

    if connections["default"].vendor != "sqlite":
        pytest.skip("the embedded default's SQLite options")
    wrapper = DatabaseWrapper(
        {**connections["default"].settings_dict, "NAME": str(tmp_path / "embedded.sqlite3")},
        alias="embedded-check",
    )
    try:
        with wrapper.cursor() as cursor:
            assert cursor.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert cursor.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    finally:
        wrapper.close()


def test_a_request_thread_keeps_its_embedded_database_connection(tmp_path):
    """The settings' SQLite block: at the end of a request Django keeps the connection (no new
    connection, schema read and closing checkpoint per request; rungwise/settings.py)."""
    from django.db import connections
    from django.db.backends.sqlite3.base import DatabaseWrapper

    if connections["default"].vendor != "sqlite":
        pytest.skip("the embedded default's SQLite options")
    wrapper = DatabaseWrapper(
        {**connections["default"].settings_dict, "NAME": str(tmp_path / "embedded.sqlite3")},
        alias="embedded-check",
    )
    try:
        with wrapper.cursor() as cursor:
            cursor.execute("CREATE TABLE kept (id INTEGER PRIMARY KEY)")
        opened = wrapper.connection
        # What Django runs on request_started / request_finished (django.db.close_old_connections).
        wrapper.close_if_unusable_or_obsolete()
        assert wrapper.connection is opened
        with wrapper.cursor() as cursor:
            cursor.execute("INSERT INTO kept DEFAULT VALUES")
        assert wrapper.connection is opened
    finally:
        wrapper.close()


def _paused_in_give_way(thread: threading.Thread) -> bool:
    """Whether ``thread`` is waiting inside _GiveWay.wait_for_requests (its stack, not a clock)."""
    import sys

    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None:
        if frame.f_code.co_name == "wait_for_requests":
            return True
        frame = frame.f_back
    return False


def test_a_running_job_waits_before_a_statement_while_a_request_is_in_flight(
    background_tasks, monkeypatch
):
    """A job that has run for a while pauses at its next statement outside a transaction until
    the request in flight finishes; inside a transaction (the write lock held) it goes on."""
    # From no request in flight: in a whole test run, an earlier test's response that was never
    # closed (a stream not read to its end) leaves this process counting one.
    monkeypatch.setattr(background_tasks, "_in_flight", 0)
    give_way = background_tasks._GiveWay()
    give_way.started -= 60  # it has run 60 s: up to 60 s of pauses allowed
    ran: list[str] = []

    def statement(atomic: bool) -> None:
        context = {"connection": type("Connection", (), {"in_atomic_block": atomic})()}
        give_way(
            lambda *_: ran.append("in a transaction" if atomic else "outside"),
            "",
            (),
            False,
            context,
        )

    serving_a_request()
    try:
        statement(atomic=True)
        assert ran == ["in a transaction"]
        job = threading.Thread(target=statement, args=(False,))
        job.start()
        for _ in range(3000):
            if _paused_in_give_way(job) or not job.is_alive():
                break
            threading.Event().wait(0.01)
        assert _paused_in_give_way(job), "the statement did not wait for the request"
        assert ran == ["in a transaction"]
    finally:
        done_serving()
    job.join(timeout=30)
    assert ran == ["in a transaction", "outside"]
    assert give_way.paused > 0


def test_a_job_never_pauses_longer_than_it_has_run(background_tasks):
    """A job that has paused as long as it has run has no pause left: its statement runs at
    once even while a request is in flight (a site busy with requests never stops the queue)."""
    give_way = background_tasks._GiveWay()
    give_way.paused = 10.0  # it already paused for longer than it ran
    serving_a_request()
    try:
        give_way.wait_for_requests()
    finally:
        done_serving()
    assert give_way.paused == pytest.approx(10.0, abs=1.0)


def test_a_background_job_runs_its_statements_through_the_give_way_wrapper(background_tasks):
    from django.db import connection

    seen: list[int] = []

    def job() -> None:
        seen.append(len(connection.execute_wrappers))

    background_tasks.submit(job)
    assert background_tasks.drain(timeout=30)
    assert seen and seen[0] >= 1


# --- The worker process (rungwise/inprocess.py, "Where a job runs") ------------------------------
#
# Its tasks write lines to a file (pid, word): the worker process is another process, so what it
# did is read from the file, not from RAN.


@app.task(name="tests.test_inprocess.note")
def note(path: str, word: str) -> None:
    with open(path, "a") as out:
        out.write(f"{os.getpid()} {word}\n")


@app.task(name="tests.test_inprocess.note_then_later")
def note_then_later(path: str, word: str) -> None:
    note(path, word)
    note.apply_async((path, f"{word}, then later"), countdown=3600)


@app.task(name="tests.test_inprocess.die")
def die() -> None:
    os._exit(3)


@app.task(name="tests.test_inprocess.note_requests")
def note_requests(path: str) -> None:
    from django.db import connection

    in_flight, hurrying = struct.unpack_from("II", inprocess._shared, 0)
    with open(path, "a") as out:
        out.write(f"{in_flight} {hurrying} {len(connection.execute_wrappers)}\n")


@pytest.fixture
def worker_process(background_tasks):
    """Jobs sent by name run in the worker process, as under `make run`; stopped afterwards."""
    background_tasks.RUNNER = background_tasks.PROCESS
    yield background_tasks
    assert background_tasks.drain(timeout=60)
    if background_tasks._process is not None:
        background_tasks._process.stop()
        background_tasks._process = None


def noted(path) -> list[tuple[int, str]]:
    if not path.exists():
        return []
    return [
        (int(pid), word)
        for pid, _, word in (line.partition(" ") for line in path.read_text().splitlines())
    ]


def test_a_task_sent_during_a_request_runs_in_the_worker_process(worker_process, tmp_path):
    path = tmp_path / "ran.txt"
    serving_a_request()
    try:
        note.delay(str(path), "first")
        note.delay(str(path), "second")
    finally:
        done_serving()
    assert worker_process.drain(timeout=60)
    ran = noted(path)
    assert [word for _, word in ran] == ["first", "second"]
    (pid, _), (again, _) = ran
    assert pid == again != os.getpid()  # one long-lived process, not this one
    assert worker_process._process.process.pid == pid


def test_a_task_the_worker_process_sends_comes_back_with_its_countdown(worker_process, tmp_path):
    path = tmp_path / "ran.txt"
    serving_a_request()
    try:
        note_then_later.delay(str(path), "first")
    finally:
        done_serving()
    reached = threading.Event()
    worker_process.submit(reached.set)  # due now: runs after "first", before the countdown
    assert reached.wait(60)
    assert [word for _, word in noted(path)] == ["first"]
    assert worker_process.waiting() == 1  # the follow-up counts down in this process's queue
    serving_a_request()
    try:
        # The same call sent here while it waits: one run (its key is the same here and there).
        note.apply_async((str(path), "first, then later"), countdown=3600)
    finally:
        done_serving()
    assert worker_process.waiting() == 1
    assert worker_process.drain(timeout=60)
    assert [word for _, word in noted(path)] == ["first", "first, then later"]


def test_a_failure_in_the_worker_process_is_logged_here_and_the_next_task_runs(
    worker_process, tmp_path, caplog
):
    path = tmp_path / "ran.txt"
    serving_a_request()
    try:
        explode.delay()
        note.delay(str(path), "after the failure")
    finally:
        done_serving()
    assert worker_process.drain(timeout=60)
    assert "an in-process background task failed: tests.test_inprocess.explode" in caplog.text
    assert "this task fails on purpose" in caplog.text  # the traceback, from the other process
    assert [word for _, word in noted(path)] == ["after the failure"]


def test_a_worker_process_that_dies_is_logged_and_replaced(worker_process, tmp_path, caplog):
    path = tmp_path / "ran.txt"
    serving_a_request()
    try:
        note.delay(str(path), "before")
        die.delay()
        note.delay(str(path), "after")
    finally:
        done_serving()
    assert worker_process.drain(timeout=60)
    assert "ended (exit code 3) while it ran tests.test_inprocess.die" in caplog.text
    (first, before), (second, after) = noted(path)
    assert (before, after) == ("before", "after")
    assert first != second  # a new worker process for the next task


def test_the_worker_process_sees_the_requests_in_flight_and_gives_way(
    worker_process, tmp_path, monkeypatch
):
    """The counts it pauses its statements for are this process's (shared memory), and its
    connections run their statements through the give-way wrapper."""
    monkeypatch.setattr(worker_process, "YIELD_LIMIT", 0)  # the job starts during the request
    monkeypatch.setattr(worker_process, "_in_flight", 0)  # see the give-way test above
    path = tmp_path / "requests.txt"
    serving_a_request()
    try:
        note_requests.delay(str(path))
        for _ in range(3000):
            if path.exists() and path.read_text().endswith("\n"):
                break
            time.sleep(0.02)
        in_flight, hurrying, wrappers = (int(value) for value in path.read_text().split())
    finally:
        done_serving()
    assert (in_flight, hurrying) == (1, 0)
    assert wrappers >= 1


def test_the_worker_process_exits_when_its_socket_closes(worker_process, tmp_path):
    path = tmp_path / "ran.txt"
    serving_a_request()
    try:
        note.delay(str(path), "started")
    finally:
        done_serving()
    assert worker_process.drain(timeout=60)
    started = worker_process._process
    started.channel.close()
    assert started.process.wait(timeout=30) == 0
    worker_process._process = None


def test_the_worker_process_exits_when_its_parent_is_killed(tmp_path):
    """The parent killed (no atexit, no socket closed in order): the worker process notices
    and exits within seconds instead of running on as an orphan."""
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import django, sys; django.setup()\n"
            "from rungwise import inprocess\n"
            "process = inprocess._WorkerProcess()\n"
            "print(process.process.pid, flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "SQLITE_PATH": str(tmp_path / "unused.sqlite3")},
    )
    try:
        pid = int(parent.stdout.readline())
        assert _alive(pid)
    finally:
        parent.kill()
        parent.wait(timeout=30)
    for _ in range(1500):
        if not _alive(pid):
            break
        time.sleep(0.02)
    assert not _alive(pid), "the worker process outlived its parent"


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its new parent to reap it does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.django_db(transaction=True)
def test_a_ratings_submit_is_resolved_by_the_worker_process(client, worker_process):
    """On the project's own database: the worker process opens the database this process uses
    (a test run's test database included), so it needs one another process can open."""
    from django.db import connection

    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip("needs a database another process can open (make test: PostgreSQL)")
    lease, response = completing_ratings_submit(client)

    assert response.status_code == 200
    assert worker_process.drain(timeout=120)
    assert worker_process._process is not None  # the resolution ran there
    assert ItemStage.objects.get(pk=lease.item_stage_id).state == ItemStage.State.RESOLVED
