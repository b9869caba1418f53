"""Fixtures of the multi-host tests: a local S3-compatible object store (moto's server, from the
``dev`` extra) and the site's settings as they come out of rungwise/settings.py for a given
environment."""

from __future__ import annotations

import os
import runpy
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests

from tests.processes import free_port, wait_until

REPO = Path(__file__).resolve().parents[2]
#: A readiness wait, not a timing: a worker or web process imports Django and the scientific
#: stack in about 7 s on a quiet machine, and took over 90 s with 2 CPUs at a load of 30.
READY_SECONDS = 300


def settings_for(**environ: str) -> dict:
    """rungwise/settings.py evaluated with ``environ`` on top of this environment: the values
    a process started with that environment would have."""
    saved = dict(os.environ)
    os.environ.update(environ)
    try:
        return runpy.run_path(str(REPO / "rungwise" / "settings.py"))
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """moto's S3-compatible server on a free loopback port, for the whole session; its URL."""
    command = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    if command is None:
        pytest.skip("moto_server is not installed (pip install -e '.[dev]')")
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [command, "-H", "127.0.0.1", "-p", str(port)], stdout=output, stderr=output
        )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited: {log.read_text()[-2000:]}")
        try:
            # Its first answer loads moto's S3 backend: seconds on a loaded machine.
            return requests.get(url, timeout=30).status_code < 500
        except (requests.ConnectionError, requests.Timeout):
            return False

    wait_until(answers, timeout=120, what="moto_server answering")
    yield url
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def object_store_env(s3_server) -> dict[str, str]:
    """The environment that puts the site's files in a new, empty bucket of ``s3_server``."""
    import boto3

    bucket = f"rungwise-{uuid.uuid4().hex[:12]}"
    environ = {
        "RUNGWISE_S3_BUCKET": bucket,
        "RUNGWISE_S3_ENDPOINT_URL": s3_server,
        "RUNGWISE_S3_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    boto3.client(
        "s3",
        endpoint_url=s3_server,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket=bucket)
    return environ


@pytest.fixture
def object_store(object_store_env, settings, tmp_path):
    """This process's files on the bucket of ``object_store_env`` (STORAGES exactly as the
    settings make them from that environment), MEDIA_ROOT an empty folder that must stay so.
    Yields the boto3 client of the bucket and its name."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": settings_for(**object_store_env)["STORAGES"]["default"],
    }
    settings.MEDIA_ROOT = tmp_path / "media"
    from django.core.files.storage import default_storage

    yield default_storage
    assert not settings.MEDIA_ROOT.exists() or not any(settings.MEDIA_ROOT.rglob("*")), (
        "a file was written under MEDIA_ROOT although the files are on the object store"
    )


def start_queue_worker(queue: str, **env: str) -> subprocess.Popen:
    """A real Celery worker (solo pool) on the test database that consumes ``queue`` only
    (comma-separated: those), as docker-compose.yml runs one per queue; returns once it
    answers a ping."""
    from rungwise.celery import app
    from tests.conftest import _test_database_url
    from tests.processes import worker_command

    name = f"{queue.replace(',', '-')}-{os.getpid()}-{uuid.uuid4().hex[:6]}@%h"
    environment = dict(os.environ, DATABASE_URL=_test_database_url(), SWEEP_SECONDS="3600", **env)
    log_dir = REPO / "var"
    log = open(log_dir / "test-worker.log", "ab") if log_dir.is_dir() else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        [*worker_command(name), "-Q", queue],
        cwd=REPO,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    destination = [name.replace("%h", socket.gethostname())]

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the {queue} worker exited during start-up")
        return bool(app.control.ping(destination=destination, timeout=0.5))

    wait_until(ready, timeout=READY_SECONDS, what=f"the {queue} worker answering a ping")
    return process


def stop_worker(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_web_server(env: dict[str, str], port: int, log: Path, *, workers: int, threads: int):
    """docker-compose.yml's web server (tests/processes.py) on ``port``, once /healthz answers."""
    from tests.processes import wait_http, web_command

    with open(log, "ab") as output:
        process = subprocess.Popen(
            web_command(port, workers=workers, threads=threads),
            cwd=REPO,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    wait_http(f"http://127.0.0.1:{port}/healthz", timeout=READY_SECONDS, process=process)
    return process
