"""PgBouncer (Debian's) in front of PostgreSQL: the engine's next / submit over HTTP through it,
in session mode and in transaction mode with the settings that mode needs
(rungwise/settings.py, "Connection pooling"), and why transaction mode needs them."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import requests
from rest_framework.authtoken.models import Token

from annotation.models import Annotation, ItemStage, Role
from tests.conftest import _test_database_url
from tests.factories import make_items, make_member, make_project, make_verify_stage
from tests.hosts.conftest import settings_for, start_web_server
from tests.processes import free_port, process_env, stop, wait_until

#: Server connections PgBouncer opens per database and user. Transaction mode: fewer than the
#: web server's 2 × (4 request threads + 1 task thread) connections, which must share them.
#: Session mode: one each, since every process keeps its connection (CONN_MAX_AGE); with
#: fewer, the others wait for one until a client disconnects (docs/deployment.md).
POOL_SIZE = {"transaction": 3, "session": 12}


def pgbouncer_binary() -> str:
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
    if found is None:
        pytest.skip("PgBouncer is not installed (scripts/with-services.sh installs it)")
    return found


class Bouncer:
    """A PgBouncer process in front of the test run's PostgreSQL, in ``mode``."""

    def __init__(self, mode: str, pool_size: int) -> None:
        self.mode = mode
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix=f"pgbouncer-{mode}-"))
        server = urlsplit(os.environ["DATABASE_URL"])
        self.directory.chmod(0o777)
        (self.directory / "users.txt").write_text(f'"{server.username}" ""\n')
        (self.directory / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={server.hostname} port={server.port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.directory / 'users.txt'}\n"
            f"admin_users = {server.username}\n"
            f"pool_mode = {mode}\ndefault_pool_size = {pool_size}\nmax_client_conn = 200\n"
            f"logfile = {self.directory / 'pgbouncer.log'}\n"
            f"pidfile = {self.directory / 'pgbouncer.pid'}\n"
        )
        # PgBouncer refuses to run as root.
        as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.process = subprocess.Popen(
            [*as_user, pgbouncer_binary(), str(self.directory / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_until(self._answers, timeout=30, what="PgBouncer accepting connections")

    def url(self, database: str) -> str:
        server = urlsplit(os.environ["DATABASE_URL"])
        return urlunsplit(
            server._replace(netloc=f"{server.username}@127.0.0.1:{self.port}", path=f"/{database}")
        )

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            log = self.directory / "pgbouncer.log"
            raise RuntimeError(
                f"PgBouncer exited: {self.process.stderr.read().decode()[-1000:]}"
                f"{log.read_text()[-1000:] if log.exists() else ''}"
            )
        try:
            psycopg.connect(self.url("postgres"), connect_timeout=2).close()
            return True
        except psycopg.OperationalError:
            return False

    def show(self, what: str) -> list[dict]:
        """SHOW ``what`` on PgBouncer's admin console (psql: the console speaks only the simple
        query protocol)."""
        psql = Path(os.environ.get("RUNGWISE_PG_BIN", "/usr/bin")) / "psql"
        output = subprocess.run(
            [str(psql), self.url("pgbouncer"), "--csv", "-c", f"SHOW {what}"],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines()  # fmt: skip
        header = output[0].split(",")
        return [dict(zip(header, line.split(","), strict=False)) for line in output[1:]]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def bouncer(request, postgres):
    if "RUNGWISE_PG_PORT" not in os.environ:
        pytest.skip("needs the servers of scripts/with-services.sh")
    started = Bouncer(request.param, POOL_SIZE[request.param])
    yield started
    started.stop()


def annotate_through(base: str, stage_id: int, tokens: list[str]) -> list[str]:
    """Each token's annotator takes and answers items until none is left, all at once; the
    unexpected answers, if any."""
    problems: list[str] = []

    def annotator(token: str) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Token {token}"
        while True:
            leased = session.post(f"{base}/api/stages/{stage_id}/next/", timeout=60)
            if leased.status_code == 204:
                return
            if leased.status_code != 200:
                problems.append(f"next: {leased.status_code} {leased.text[:300]}")
                return
            answer = session.post(
                f"{base}/api/assignments/{leased.json()['id']}/submit/",
                json={"payload": {"value": "keep"}},
                timeout=60,
            )
            if answer.status_code != 201:
                problems.append(f"submit: {answer.status_code} {answer.text[:300]}")
                return

    threads = [threading.Thread(target=annotator, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not any(thread.is_alive() for thread in threads), "an annotator hung"
    return problems


def test_transaction_pooling_turns_off_what_outlives_a_transaction():
    url = "postgres://rungwise:secret@pgbouncer.internal:6432/rungwise"
    direct = settings_for(DATABASE_URL=url, RUNGWISE_DB_POOL_MODE="")["DATABASES"]["default"]
    assert direct["OPTIONS"]["prepare_threshold"] == 5
    assert not direct.get("DISABLE_SERVER_SIDE_CURSORS")
    assert (direct["CONN_MAX_AGE"], direct["CONN_HEALTH_CHECKS"]) == (60, True)
    pooled = settings_for(
        DATABASE_URL=url, RUNGWISE_DB_POOL_MODE="transaction", RUNGWISE_DB_CONN_MAX_AGE="0"
    )["DATABASES"]["default"]
    assert pooled["OPTIONS"]["prepare_threshold"] is None
    assert pooled["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert pooled["CONN_MAX_AGE"] == 0
    with pytest.raises(Exception, match="RUNGWISE_DB_POOL_MODE"):
        settings_for(DATABASE_URL=url, RUNGWISE_DB_POOL_MODE="statement")


@pytest.mark.parametrize("bouncer", ["session", "transaction"], indirect=True)
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(900)  # process start-ups on a loaded machine (READY_SECONDS)
def test_annotators_work_through_pgbouncer(bouncer, tmp_path):
    """Six annotators, twelve items of overlap 3, a web server of 2 processes × 4 threads
    whose every database connection goes through PgBouncer (in transaction mode onto 3 server
    connections, POOL_SIZE); tasks in-process, so the resolutions go through it too. Nothing lost,
    nothing duplicated, every item resolved."""
    project = make_project()
    stage = make_verify_stage(project, overlap=3)
    make_items(project, 12)
    people = [make_member(project, Role.ANNOTATOR) for _ in range(6)]
    tokens = [Token.objects.create(user=person).key for person in people]
    database = urlsplit(_test_database_url()).path.lstrip("/")
    env = process_env(
        DATABASE_URL=bouncer.url(database),
        RUNGWISE_DB_POOL_MODE=bouncer.mode,
        RUNGWISE_THROTTLE_SUBMIT="off",
        SECRET_KEY="pgbouncer-test-secret-key-" + "x" * 40,
        DEBUG="0",
        SECURE_COOKIES="0",
        WHITENOISE_MANIFEST="0",
        ALLOWED_HOSTS="127.0.0.1",
        MEDIA_ROOT=str(tmp_path / "media"),
    )
    env.pop("CELERY_BROKER_URL", None)
    port = free_port()
    web = start_web_server(env, port, tmp_path / "web.log", workers=2, threads=4)
    try:
        problems = annotate_through(f"http://127.0.0.1:{port}", stage.pk, tokens)
        assert problems == [], (problems, (tmp_path / "web.log").read_text()[-3000:])
        wait_until(
            lambda: (
                ItemStage.objects.filter(stage=stage, state=ItemStage.State.RESOLVED).count() == 12
            ),
            timeout=300,
            what="every item resolved",
        )
    finally:
        stop(web)
    answers = Annotation.objects.filter(item_stage__stage=stage)
    assert answers.count() == 12 * 3
    assert answers.values("item_stage", "annotator").distinct().count() == 12 * 3
    [pool] = [row for row in bouncer.show("POOLS") if row["database"] == database]
    assert pool["pool_mode"] == bouncer.mode
    [stats] = [row for row in bouncer.show("STATS") if row["database"] == database]
    assert int(stats["total_xact_count"]) > 12 * 3 * 2  # the loop's transactions went through
    servers = [row for row in bouncer.show("SERVERS") if row["database"] == database]
    assert len(servers) <= POOL_SIZE[bouncer.mode]


@pytest.mark.parametrize("bouncer", ["transaction"], indirect=True)
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_transaction_pooling_breaks_prepared_statements_unless_they_are_off(bouncer):
    """Why the settings turn psycopg's prepared statements off in transaction mode: two
    clients sharing one server connection both prepare their first statement under the same
    name, and the second fails; with prepare_threshold None nothing is prepared."""
    url = bouncer.url(urlsplit(_test_database_url()).path.lstrip("/"))
    query = "SELECT count(*) FROM annotation_item WHERE id > %s"
    # POOL_SIZE server connections; one at a time here, so both clients land on one of them.
    with psycopg.connect(url, autocommit=True, prepare_threshold=0) as first:
        first.execute(query, [0]).fetchone()
        with psycopg.connect(url, autocommit=True, prepare_threshold=0) as second:
            with pytest.raises(psycopg.errors.DuplicatePreparedStatement):
                second.execute(query, [0]).fetchone()
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as first:
        first.execute(query, [0]).fetchone()
        with psycopg.connect(url, autocommit=True, prepare_threshold=None) as second:
            assert second.execute(query, [0]).fetchone() is not None
