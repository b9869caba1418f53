"""The deployment's processes, started natively: PostgreSQL and Redis servers in a directory of
their own (as scripts/with-services.sh starts them, but stoppable and restartable one by one),
the web server (docker-compose.yml's command), a Celery worker and Celery beat. Used by
tests/test_deployment.py, the worker tests, benchmarks/soak.py and benchmarks/annotator_loop.py;
nothing here imports Django, so a script can start the servers before it configures Django."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import requests
import yaml

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_env(**overrides: str) -> dict[str, str]:
    """The environment for a deployed process: ours, less what only a test session needs
    (the browser tests allow ORM calls beside Playwright's event loop; a deployment never does,
    and `check --deploy` rightly refuses it), with the interpreter's directory first on PATH
    so that `granian` and `celery` are the virtualenv's."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(overrides)
    return env


def wait_until(predicate, timeout: float, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} not met within {timeout} s")
        time.sleep(interval)


def wait_http(
    url: str, timeout: float = 40, process: subprocess.Popen | None = None
) -> requests.Response:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")
        try:
            return requests.get(url, timeout=5)
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout} s")


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL a process started in a session of its own, and every process of its group
    (a worker with its pool's children: what the OOM killer or `docker kill` does)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def stop(process: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def pg_bin() -> Path | None:
    """The newest installed PostgreSQL's bin directory (Debian layout), or None."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: int(path.parts[-3]) if path.parts[-3].isdigit() else 0,
    )
    return found[-1].parent if found else None


def servers_available() -> str | None:
    """None when PostgreSQL and Redis can be started here, else the reason they cannot."""
    if pg_bin() is None:
        return "PostgreSQL's server binaries are not installed (Debian: postgresql)"
    if subprocess.run(["which", "redis-server"], capture_output=True).returncode:
        return "redis-server is not installed"
    return None


class Postgres:
    """A throwaway PostgreSQL cluster in ``directory`` on a loopback port, durability off (as
    scripts/with-services.sh starts it). Run as the `postgres` user when we are root, since
    PostgreSQL refuses to run as root. ``directory`` (default: a new one under the system's
    temporary directory) must be reachable by that user: pytest's tmp_path is not."""

    def __init__(
        self, directory: Path | None = None, port: int | None = None, database: str = "rungwise"
    ):
        self.bin = pg_bin()
        if self.bin is None:
            raise RuntimeError(servers_available())
        self.own_directory = directory is None
        directory = Path(directory or tempfile.mkdtemp(prefix="rungwise-pg-"))
        self.directory = directory / "pg"
        self.data = self.directory / "data"
        self.port = port or free_port()
        self.database = database
        self.as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run([*self.as_postgres, *args], capture_output=True, text=True)
        if check and result.returncode:
            log = self.directory / "server.log"
            tail = log.read_text()[-3000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {result.stdout}{result.stderr}{tail}")
        return result

    def init(self) -> Postgres:
        """Create the cluster and the database, and start the server."""
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory.parent, 0o755)
        if self.as_postgres:
            subprocess.run(["chown", "postgres:postgres", str(self.directory)], check=True)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
                  "-E", "UTF8", "--no-locale")  # fmt: skip
        self.start()
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "postgres", self.database)  # fmt: skip
        return self

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l",
                  str(self.directory / "server.log"), "-w", "-o", options, "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: "fast" ends every session (what a restart of the service does),
        "immediate" is a crash."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop",
                  check=False)  # fmt: skip

    def remove(self) -> None:
        """Stop at once and delete the cluster (and the directory, when it was ours)."""
        self.stop("immediate")
        shutil.rmtree(self.directory.parent if self.own_directory else self.directory, True)

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def url(self, database: str | None = None) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database or self.database}"


class Redis:
    """A Redis server in ``directory`` on a loopback port that keeps nothing on disk, so a
    restart is an empty Redis (every queued message and cached counter gone)."""

    def __init__(self, directory: Path, port: int | str | None = None):
        self.directory = Path(directory)
        self.port = str(port or free_port())

    @property
    def pid(self) -> int:
        return int((self.directory / "redis.pid").read_text().strip())

    def url(self, database: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{database}"

    def answers(self) -> bool:
        result = subprocess.run(
            ["redis-cli", "-p", self.port, "ping"], capture_output=True, text=True
        )
        return result.stdout.strip() == "PONG"

    def start(self) -> Redis:
        self.directory.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["redis-server", "--port", self.port, "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "yes",
             "--pidfile", str(self.directory / "redis.pid"),
             "--logfile", str(self.directory / "redis.log"), "--dir", str(self.directory)],
            check=True,
        )  # fmt: skip
        wait_until(self.answers, timeout=10, what="Redis answering")
        return self

    def shutdown(self) -> None:
        """Stop the server, keeping nothing."""
        subprocess.run(["redis-cli", "-p", self.port, "shutdown", "nosave"], capture_output=True)
        wait_until(lambda: not self.answers(), timeout=10, what="Redis stopped")


def _log(path: Path | None):
    return open(path, "ab") if path is not None else subprocess.DEVNULL


def deployed_web_command() -> list[str]:
    """The web server's command in docker-compose.yml (the part after the migration)."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return shlex.split(shlex.split(compose["services"]["web"]["command"])[2].split("&&")[1])


def web_command(
    port: int, *, workers: int | None = 2, threads: int | None = 1, quiet: bool = True
) -> list[str]:
    """docker-compose.yml's web server (granian) on 127.0.0.1:``port`` with ``workers``
    processes of ``threads`` blocking threads (None: as in the compose file), run by this
    interpreter; ``quiet``: warnings only, no access log."""
    command = deployed_web_command()
    for option, value in (("--host", "127.0.0.1"), ("--port", port), ("--workers", workers),
                          ("--blocking-threads", threads)):  # fmt: skip
        if value is not None:
            command[command.index(option) + 1] = str(value)
    command = [sys.executable, "-m", *command]
    return [*command, "--no-access-log", "--log-level", "warning"] if quiet else command


def start_web(
    env: dict[str, str], port: int, *, workers: int = 2, threads: int = 1, log: Path | None = None
) -> subprocess.Popen:
    """The web server (web_command) serving rungwise.wsgi; returns once /healthz answers."""
    process = subprocess.Popen(
        web_command(port, workers=workers, threads=threads),
        cwd=REPO, env=env, stdout=_log(log), stderr=subprocess.STDOUT,
    )  # fmt: skip
    wait_http(f"http://127.0.0.1:{port}/healthz", process=process)
    return process


def worker_command(
    name: str,
    *,
    pool: str = "solo",
    concurrency: int = 1,
    loglevel: str = "warning",
    include: str | None = None,
    quiet: bool = True,
) -> list[str]:
    """A Celery worker. The solo pool is one process (a SIGKILL kills the task it runs);
    prefork, as docker-compose.yml runs it, runs tasks in child processes. ``quiet`` leaves out
    gossip and mingle (the workers' chatter with each other), which the deployment keeps."""
    return [sys.executable, "-m", "celery", "-A", "rungwise", "worker", "-P", pool,
            "--concurrency", str(concurrency), "-l", loglevel, "-n", name,
            *(["--without-gossip", "--without-mingle"] if quiet else []),
            *(["--include", include] if include else [])]  # fmt: skip


def start_worker(
    env: dict[str, str],
    name: str,
    *,
    pool: str = "solo",
    concurrency: int = 1,
    log: Path | None = None,
    timeout: float = 30,
    include: str | None = None,
    quiet: bool = True,
) -> subprocess.Popen:
    """Start a worker (in a process group of its own, so that ``kill_group`` ends it with its
    pool's children) and return once it answers a ping through the broker in ``env``."""
    process = subprocess.Popen(
        worker_command(name, pool=pool, concurrency=concurrency, include=include, quiet=quiet),
        cwd=REPO, env=env, stdout=_log(log), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    wait_for_worker(process, name, env["CELERY_BROKER_URL"], timeout=timeout)
    return process


@contextmanager
def broker_client(broker: str):
    """A Celery app sending tasks and control commands to ``broker``. Celery prefers the
    CELERY_BROKER_URL environment variable to the broker it is given (under
    scripts/with-services.sh that is the suite's Redis), so the variable names ``broker`` while
    the app is in use."""
    from celery import Celery

    previous = os.environ.get("CELERY_BROKER_URL")
    os.environ["CELERY_BROKER_URL"] = broker
    from django.conf import settings

    app = Celery(broker=broker, set_as_current=False)
    # The site's queues (rungwise/settings.py, "queues by kind"): a worker started as deployed
    # consumes them, not Celery's default queue "celery".
    app.conf.task_default_queue = settings.CELERY_TASK_DEFAULT_QUEUE
    app.conf.task_routes = settings.CELERY_TASK_ROUTES
    try:
        yield app
    finally:
        app.close()
        if previous is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = previous


def wait_for_worker(process: subprocess.Popen, name: str, broker: str, timeout: float = 30):
    destination = [name.replace("%h", socket.gethostname())]
    deadline = time.monotonic() + timeout
    with broker_client(broker) as app:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the Celery worker exited with {process.returncode}")
            try:
                if app.control.ping(destination=destination, timeout=0.5):
                    return
            except Exception:  # the broker itself may still be coming back
                time.sleep(0.5)
    raise RuntimeError(f"the Celery worker did not answer a ping within {timeout} s")


def start_beat(env: dict[str, str], schedule: Path, *, log: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "rungwise", "beat", "-l", "warning",
         "--schedule", str(schedule)],
        cwd=REPO, env=env, stdout=_log(log), stderr=subprocess.STDOUT,
    )  # fmt: skip
