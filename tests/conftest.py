"""Shared fixtures. The suite runs against the servers scripts/with-services.sh starts
(DATABASE_URL, CELERY_BROKER_URL); without them, database tests run on SQLite and the tests
that need PostgreSQL, Redis or a worker are skipped with the reason."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings

from tests.processes import worker_command

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """../shared beside the checkout (the project's public datasets), or RUNGWISE_SHARED_DIR."""
    return Path(os.environ.get("RUNGWISE_SHARED_DIR") or REPO.parent / "shared")


@pytest.fixture
def shared_datasets() -> Path:
    path = shared_dir() / "datasets"
    if not path.is_dir():
        pytest.skip(f"shared datasets not present at {path}")
    return path


@pytest.fixture(autouse=True)
def _fast_test_settings(settings):
    """Pages render {% static %} without a collectstatic run (the manifest storage of the
    production settings needs one), and test passwords hash fast."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    # Test users need no slow, secure hashing: PBKDF2 made each sign-in cost ~0.3 s here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # One resolve message per completed item stage, sent on commit, as the tests of resolution
    # expect; tests/annotation/test_services_resolution_publish.py turns it on.
    settings.RESOLVE_PUBLISH_WINDOW_SECONDS = 0


@pytest.fixture(autouse=True)
def _celery_eager_by_default(request):
    """Tasks run in-process unless a test asks for the real worker; at once, inside the caller,
    unless the test asks for the background worker of the embedded default
    (``background_tasks``, on its thread runner: rungwise/inprocess.py)."""
    from rungwise import inprocess
    from rungwise.celery import app

    eager = "celery_worker" not in request.fixturenames
    previous = app.conf.task_always_eager, inprocess.MODE, inprocess.RUNNER
    app.conf.task_always_eager = eager
    inprocess.MODE = inprocess.INLINE
    # The background path on the worker thread: a test's database lives inside the test's
    # transaction, which a worker process cannot see (tests/test_inprocess.py runs that one).
    inprocess.RUNNER = inprocess.THREAD
    yield
    app.conf.task_always_eager, inprocess.MODE, inprocess.RUNNER = previous


@pytest.fixture
def background_tasks():
    """Tasks sent during a request run after it in the background thread, as under `make run`;
    the test calls ``background_tasks.drain()`` before it reads what they wrote (and the
    fixture drains at teardown, so no task outlives its test)."""
    from rungwise import inprocess

    inprocess.MODE = inprocess.BACKGROUND
    yield inprocess
    assert inprocess.drain(timeout=60), "background tasks still running after 60 s"


@pytest.fixture
def postgres():
    if not settings.IS_POSTGRES:
        pytest.skip("needs PostgreSQL: run through `make test` (scripts/with-services.sh)")


def _test_database_url() -> str:
    from django.db import connection

    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


WORKER_READY_SECONDS = 90


class Workers:
    """Starts and kills real Celery worker processes (solo pool) on the test database and the
    Redis broker; `extra_env` goes to every worker (e.g. shorter agreement refresh delays)."""

    def __init__(self, prefix: str = "test", **extra_env: str) -> None:
        self.processes: list[subprocess.Popen] = []
        self.prefix = prefix
        self.extra_env = extra_env

    def start(self, **env: str) -> subprocess.Popen:
        from rungwise.celery import app

        environment = dict(
            os.environ,
            DATABASE_URL=_test_database_url(),
            SWEEP_SECONDS="3600",
            **{**self.extra_env, **env},
        )
        log_dir = REPO / "var"
        log = open(log_dir / "test-worker.log", "ab") if log_dir.is_dir() else subprocess.DEVNULL
        name = f"{self.prefix}-{os.getpid()}-{len(self.processes)}@%h"
        process = subprocess.Popen(
            worker_command(name),
            cwd=REPO,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.processes.append(process)
        destination = [name.replace("%h", socket.gethostname())]
        # A readiness wait, not a timing: a worker imports Django and the scientific stack in
        # about 7 s on a quiet machine, several times that on a loaded one.
        deadline = time.monotonic() + WORKER_READY_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError("the Celery worker exited during start-up")
            if app.control.ping(destination=destination, timeout=0.5):
                return process
        raise RuntimeError(
            f"the Celery worker did not answer a ping within {WORKER_READY_SECONDS} s"
        )

    def kill(self, process: subprocess.Popen) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


@pytest.fixture
def celery_worker(transactional_db, postgres):
    """A real Celery worker process on the Redis broker, using the test database."""
    if not os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs Redis: run through `make test` (scripts/with-services.sh)")
    from rungwise.celery import app

    app.control.purge()
    pool = Workers()
    yield pool.start()
    pool.stop_all()


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.1):
    """Poll until predicate() is truthy; return its value or fail with the last value."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = predicate()
    assert value, f"condition not met within {timeout} s"
    return value


class ChatServer:
    """The local Chat Completions server (tests/fakes/chat_server.py) as tests use it."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.root = base_url.rsplit("/v1", 1)[0]
        self._count = 0

    def model(self, name: str = "fake") -> str:
        """A model id no other test uses, so that controls and request logs stay apart."""
        self._count += 1
        return f"{name}-{os.getpid()}-{self._count}"

    def control(self, model: str, **settings) -> None:
        import requests

        requests.post(f"{self.root}/_control", json={"model": model, **settings}, timeout=5)

    def requests(self, model: str) -> list[dict]:
        import requests

        return requests.get(f"{self.root}/_requests", params={"model": model}, timeout=5).json()


@pytest.fixture(scope="session")
def chat_server():
    """A local server speaking the Chat Completions API, started once per test session in a
    thread of the test process (reachable from the Celery worker on loopback)."""
    from tests.fakes.chat_server import serve

    base_url, server = serve()
    yield ChatServer(base_url)
    server.shutdown()
