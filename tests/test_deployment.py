"""The deployment's processes, started natively exactly as docker-compose.yml starts them
(granian web, Celery worker, Celery beat) against real PostgreSQL and Redis, and the embedded
default that `make run` uses."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
import requests
import yaml

from tests import processes
from tests.processes import free_port, process_env, wait_http, wait_until

REPO = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())


def compose_command(service: str) -> list[str]:
    command = COMPOSE["services"][service]["command"]
    return shlex.split(command) if isinstance(command, str) else list(command)


def login(session: requests.Session, base: str, username: str, password: str) -> None:
    page = session.get(f"{base}/accounts/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    answer = session.post(
        f"{base}/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/accounts/login/"},
        timeout=10,
    )
    assert answer.ok and "sessionid" in session.cookies, answer.text[:500]
    session.headers["X-CSRFToken"] = session.cookies["csrftoken"]
    session.headers["Referer"] = base + "/"


DEMO_VERIFY_STAGE = (
    "SELECT s.id FROM annotation_stage s JOIN annotation_project p ON p.id = s.project_id "
    "WHERE p.slug = 'demo' AND s.slug = 'verify'"
)
DEMO_LABEL_STAGE = DEMO_VERIFY_STAGE.replace("'verify'", "'label'")
DEMO_VERIFY_RESOLUTIONS = (
    "SELECT count(*) FROM annotation_resolution r JOIN annotation_itemstage i "
    f"ON i.id = r.item_stage_id WHERE i.stage_id = ({DEMO_VERIFY_STAGE})"
)


def annotate_demo_verify_stage(base: str, password: str, stage_id: int) -> int:
    """Three demo annotators complete every item of the demo's verify stage over HTTP."""
    submitted = 0
    for name in ("annotator1", "annotator2", "annotator3"):
        session = requests.Session()
        login(session, base, name, password)
        while True:
            leased = session.post(f"{base}/api/stages/{stage_id}/next/", timeout=10)
            if leased.status_code == 204:
                break
            assert leased.status_code == 200, leased.text
            answer = session.post(
                f"{base}/api/assignments/{leased.json()['id']}/submit/",
                json={"payload": {"value": "keep"}},
                timeout=10,
            )
            assert answer.status_code == 201, answer.text
            submitted += 1
    return submitted


def test_compose_file_runs_web_worker_beat_postgres_and_redis_with_health_checks():
    services = COMPOSE["services"]
    assert set(services) == {
        "web", "worker", "worker-bulk", "beat", "postgres", "redis", "balancer"
    }  # fmt: skip
    for name, service in services.items():
        assert "healthcheck" in service, f"{name} has no health check"
    assert {"postgres-data", "redis-data"} <= set(COMPOSE["volumes"])
    assert compose_command("worker")[:4] == ["celery", "-A", "rungwise", "worker"]
    # A worker per queue (rungwise/settings.py, "Queues by kind of work").
    for service, queue in (("worker", "interactive"), ("worker-bulk", "bulk")):
        command = compose_command(service)
        assert command[:4] == ["celery", "-A", "rungwise", "worker"]
        assert command[command.index("-Q") + 1] == queue
    assert compose_command("beat")[:4] == ["celery", "-A", "rungwise", "beat"]
    assert (
        "granian --interface wsgi rungwise.wsgi:application"
        in COMPOSE["services"]["web"]["command"]
    )
    assert COMPOSE["services"]["web"]["sysctls"] == {"net.ipv4.tcp_migrate_req": 1}
    # The image's own command (docker run without compose) serves as compose's web does.
    dockerfile_cmd = next(
        line for line in (REPO / "Dockerfile").read_text().splitlines() if line.startswith("CMD ")
    )
    assert json.loads(dockerfile_cmd[4:]) == processes.deployed_web_command()
    # throttle counters shared by the web processes (see the native test)
    assert COMPOSE["services"]["web"]["environment"]["CACHE_URL"].startswith("redis://redis:")


def compose_value(value: str, env: dict[str, str]) -> str:
    """``value`` as docker compose reads it in ``env``: ``${NAME:-default}``, the only
    substitution the file's ports and environment use."""
    return re.sub(r"\$\{(\w+):-([^}]*)\}", lambda match: env.get(match[1]) or match[2], value)


@pytest.mark.parametrize(
    ("env", "address"),
    [({}, "127.0.0.1"), ({"RUNGWISE_BIND": "0.0.0.0"}, "0.0.0.0"),
     ({"RUNGWISE_BIND": "192.0.2.10", "WEB_PORT": "80"}, "192.0.2.10")],
)  # fmt: skip
def test_compose_publishes_on_loopback_unless_told_and_tells_the_settings(env, address):
    """Only the balancer publishes a port, on RUNGWISE_BIND (this machine when unset), and
    web, the workers and beat get the same RUNGWISE_BIND, so the settings know what is
    exposed."""
    services = COMPOSE["services"]
    assert {name for name, service in services.items() if service.get("ports")} == {"balancer"}
    for entry in services["balancer"]["ports"]:
        bind, host_port, container_port = compose_value(entry, env).split(":")
        assert (bind, host_port, container_port) == (address, env.get("WEB_PORT", "8000"), "8000")
    for name in ("web", "worker", "worker-bulk", "beat"):
        assert compose_value(services[name]["environment"]["RUNGWISE_BIND"], env) == address
    # The image alone (docker run -p …) cannot see where it is published: it counts as public.
    assert "RUNGWISE_BIND=0.0.0.0" in (REPO / "Dockerfile").read_text()


def settings_process(*args: str, **env: str) -> subprocess.CompletedProcess:
    """``manage.py *args`` (default: print SERVES_BEYOND_LOOPBACK) with ``env`` on top of this
    environment, less what would decide the answer (SECRET_KEY, DEBUG, ALLOWED_HOSTS,
    RUNGWISE_BIND), on a throwaway SQLite file (``SQLITE_PATH``)."""
    decided = {"SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "RUNGWISE_BIND", "DATABASE_URL"}
    clean = {key: value for key, value in process_env().items() if key not in decided}
    command = args or (
        "shell",
        "-c",
        "from django.conf import settings; print(settings.SERVES_BEYOND_LOOPBACK)",
    )
    return subprocess.run(
        [sys.executable, "manage.py", *command], cwd=REPO, env={**clean, **env},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_site_bound_beyond_loopback_counts_as_public_whatever_allowed_hosts_says(tmp_path):
    """ALLOWED_HOSTS=localhost on a server published on every interface: anyone on the network
    reaches it with `Host: localhost`. The settings go by RUNGWISE_BIND: no built-in key and no
    demo users (whose password is known) there."""
    loopback_names = {"ALLOWED_HOSTS": "localhost,127.0.0.1", "SQLITE_PATH": str(tmp_path / "db")}
    refused = settings_process(RUNGWISE_BIND="0.0.0.0", **loopback_names)
    assert refused.returncode != 0 and "SECRET_KEY is not set" in refused.stderr
    assert "RUNGWISE_BIND 0.0.0.0" in refused.stderr
    secret = {"SECRET_KEY": "a-real-secret-" + "k3" * 20, **loopback_names}
    public = settings_process(RUNGWISE_BIND="0.0.0.0", **secret)
    assert public.returncode == 0 and public.stdout.split()[-1:] == ["True"], public.stderr
    assert settings_process(RUNGWISE_BIND="127.0.0.1", **secret).stdout.split()[-1:] == ["False"]
    demo = settings_process("seed_demo", RUNGWISE_BIND="0.0.0.0", **secret)
    assert demo.returncode != 0 and "Refusing to create the demo users" in demo.stderr
    assert "RUNGWISE_BIND 0.0.0.0" in demo.stderr


def test_the_secret_key_placeholder_of_env_example_is_refused(tmp_path):
    example = dict(
        line.split("=", 1)
        for line in (REPO / ".env.example").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    for bind in ("127.0.0.1", "0.0.0.0"):
        refused = settings_process(
            SECRET_KEY=example["SECRET_KEY"], RUNGWISE_BIND=bind, SQLITE_PATH=str(tmp_path / "db")
        )
        assert refused.returncode != 0
        assert "SECRET_KEY is still the placeholder of .env.example" in refused.stderr


def test_loopback_is_this_machine_only():
    from rungwise.settings import is_loopback

    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
    for host in (
        "0.0.0.0",
        "::",
        "[::]",
        "192.0.2.10",
        "rungwise.example.org",
        "*",
        ".example.org",
    ):
        assert not is_loopback(host), host


@pytest.mark.postgres
def test_web_worker_and_beat_processes_work_together(postgres, tmp_path):
    """Start the compose commands natively on a fresh database; annotate over HTTP; the worker
    resolves the items; beat's sweep resolves an item whose message was lost."""
    import psycopg

    if not os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs Redis: run through `make test`")
    url = urlsplit(os.environ["DATABASE_URL"])
    database = f"native_{os.getpid()}"
    admin_url = urlunsplit(url._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}"')
        conn.execute(f'CREATE DATABASE "{database}"')
    port = free_port()
    broker = os.environ["CELERY_BROKER_URL"].rsplit("/", 1)[0] + "/7"  # a Redis db of its own
    cache = broker.rsplit("/", 1)[0] + "/8"
    redis.Redis.from_url(cache).flushdb()
    env = process_env(
        DATABASE_URL=urlunsplit(url._replace(path=f"/{database}")),
        CELERY_BROKER_URL=broker,
        CACHE_URL=cache,
        RUNGWISE_THROTTLE_AUTH="5/min",
        SECRET_KEY="native-test-secret-key-" + "x" * 40,
        DEBUG="0",
        SECURE_COOKIES="0",
        WHITENOISE_MANIFEST="0",
        ALLOWED_HOSTS="127.0.0.1",
        SWEEP_SECONDS="1",
        SWEEP_GRACE_SECONDS="1",
        MEDIA_ROOT=str(tmp_path / "media"),
    )
    python_bin = str(Path(sys.executable).parent)
    env["PATH"] = python_bin + os.pathsep + env.get("PATH", "")

    def run(*args: str) -> None:
        subprocess.run(args, cwd=REPO, env=env, check=True, capture_output=True, text=True)

    run(sys.executable, "manage.py", "migrate", "--noinput")
    run(sys.executable, "manage.py", "seed_demo", "--password", "native-demo-pass")
    web_command = processes.web_command(port, workers=2, threads=None, quiet=False)
    running = {
        "web": subprocess.Popen(
            web_command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        ),
        "worker": subprocess.Popen(
            [
                *compose_command("worker")[:-2],
                "--concurrency",
                "1",
                "-n",
                f"native{os.getpid()}@%h",
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        ),
        "worker-bulk": subprocess.Popen(
            [
                *compose_command("worker-bulk")[:-2],
                "--concurrency",
                "1",
                "-n",
                f"nativebulk{os.getpid()}@%h",
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        ),
        "beat": subprocess.Popen(
            [*compose_command("beat")[:-2], "--schedule", str(tmp_path / "beat-schedule")],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        ),
    }
    try:
        base = f"http://127.0.0.1:{port}"
        health = wait_http(f"{base}/healthz", process=running["web"])
        assert health.json() == {
            "status": "ok",
            "database": "ok",
            "engine": "postgresql",
            "tasks": "celery",
        }
        with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:

            def count(sql: str) -> int:
                return conn.execute(sql).fetchone()[0]

            verify = count(DEMO_VERIFY_STAGE)
            assert annotate_demo_verify_stage(base, "native-demo-pass", verify) == 36 * 3

            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and count(DEMO_VERIFY_RESOLUTIONS) < 36:
                time.sleep(0.5)
            assert count(DEMO_VERIFY_RESOLUTIONS) == 36
            # every kept item entered the label stage
            label = count(DEMO_LABEL_STAGE)
            assert (
                count(f"SELECT count(*) FROM annotation_itemstage WHERE stage_id = {label}") == 36
            )
            # A lost message: an item stage complete but never resolved. Beat's sweep finds it.
            lost = count(f"SELECT min(id) FROM annotation_itemstage WHERE stage_id = {verify}")
            conn.execute(f"DELETE FROM annotation_resolution WHERE item_stage_id = {lost}")
            conn.execute(
                "UPDATE annotation_itemstage SET state = 'resolving', completed_at = now() "
                f"WHERE id = {lost}"
            )
            waiting = f"SELECT count(*) FROM annotation_itemstage WHERE id = {lost} AND state = 'resolving'"
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and count(waiting):
                time.sleep(0.5)
            assert count(waiting) == 0
            assert count(DEMO_VERIFY_RESOLUTIONS) == 36

        # Throttling counts across the web processes (CACHE_URL, as in the compose file): of
        # twelve token requests, each on a new connection to either of the two workers, exactly
        # the five the rate allows get through; per-process counters would let up to ten.
        answers = [
            requests.post(
                f"{base}/api/auth/token/",
                data={"username": "annotator1", "password": "native-demo-pass"},
                headers={"Connection": "close"},
                timeout=10,
            ).status_code
            for _ in range(12)
        ]
        assert answers.count(200) == 5 and answers.count(429) == 7, answers
        for name, process in running.items():
            assert process.poll() is None, f"{name} died: {process.stderr.read().decode()[-2000:]}"
    finally:
        for process in running.values():
            process.send_signal(signal.SIGTERM)
        for process in running.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def test_the_embedded_default_serves_the_demo_with_in_process_tasks(tmp_path):
    """What `make run` does: SQLite with IMMEDIATE transactions, tasks in-process."""
    env = {
        key: value
        for key, value in process_env().items()
        if key not in {"DATABASE_URL", "CELERY_BROKER_URL"}
    }
    env.update(
        SQLITE_PATH=str(tmp_path / "demo.sqlite3"), DEBUG="1", MEDIA_ROOT=str(tmp_path / "media")
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
    )
    seeded = subprocess.run(
        [sys.executable, "manage.py", "seed_demo"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert re.search(r"annotator1\s+annotator\s+rungwise-demo", seeded.stdout)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        health = wait_http(f"{base}/healthz", process=server).json()
        assert (health["engine"], health["tasks"]) == ("sqlite", "in-process")
        import sqlite3

        with sqlite3.connect(tmp_path / "demo.sqlite3") as db:
            verify = db.execute(DEMO_VERIFY_STAGE).fetchone()[0]
        assert annotate_demo_verify_stage(base, "rungwise-demo", verify) == 36 * 3

        def resolved() -> int:
            with sqlite3.connect(tmp_path / "demo.sqlite3") as db:
                return db.execute(DEMO_VERIFY_RESOLUTIONS).fetchone()[0]

        # Resolved in-process, after each commit, by the web process's own worker process
        # (rungwise/inprocess.py), which computes at the lowest CPU priority: on a busy machine
        # it catches up once the requests are answered, so the count is awaited, not read once.
        wait_until(lambda: resolved() == 36, timeout=120, what="36 resolved items")
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_production_settings_pass_check_deploy():
    env = process_env(
        DEBUG="0",
        SECRET_KEY="a-production-secret-key-that-is-long-and-random-" + "q8Zr" * 10,
        ALLOWED_HOSTS="rungwise.example.org",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_client_accepts_the_file():
    """`docker compose config` (v2) or `docker-compose config` (v1), where a client exists.
    Docker's engine is not needed for this; CI machines may lack the client altogether."""
    import shutil

    for command in (["docker", "compose"], ["docker-compose"]):
        if (
            shutil.which(command[0])
            and subprocess.run([*command, "version"], capture_output=True).returncode == 0
        ):
            break
    else:
        pytest.skip("no docker compose client on this machine (checked with docker-compose 1.29)")
    result = subprocess.run(
        [*command, "config", "-q"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=process_env(SECRET_KEY="compose-check"),
    )
    assert result.returncode == 0, result.stderr


def test_the_bundled_balancer_config_is_valid_and_reaches_every_web_container():
    """deploy/haproxy.cfg as docker-compose.yml mounts it, checked by HAProxy itself (Debian's
    haproxy, where installed); web containers found by name, whatever `--scale web=N` says,
    and the site told that one proxy is in front."""
    import shutil

    config = REPO / "deploy" / "haproxy.cfg"
    balancer = COMPOSE["services"]["balancer"]
    assert (
        f"./{config.relative_to(REPO)}:/usr/local/etc/haproxy/haproxy.cfg:ro" in balancer["volumes"]
    )
    text = config.read_text()
    assert re.search(r"server-template web \d+ web:8000 check", text)
    assert "option forwardfor" in text
    assert (
        compose_value(COMPOSE["services"]["web"]["environment"]["RUNGWISE_TRUSTED_PROXIES"], {})
        == "1"
    )
    haproxy = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
    if haproxy is None:
        pytest.skip("HAProxy is not installed (apt-get install haproxy)")
    result = subprocess.run([haproxy, "-c", "-f", str(config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.postgres
def test_the_web_answers_after_postgresql_restarts_and_503_while_it_is_down():
    """The web server keeps database connections between requests (conn_max_age); after PostgreSQL
    restarts, the first request on each kept connection must reconnect, not fail (the soak saw
    500s from every worker, once per kept connection). One worker, one thread: one connection.
    While the database is down, the API says so with a 503 in its error format, not a 500."""
    reason = processes.servers_available()
    if reason:
        pytest.skip(reason)
    postgres = processes.Postgres().init()
    port = free_port()
    env = process_env(DATABASE_URL=postgres.url(), DEBUG="0", SECURE_COOKIES="0",
                      WHITENOISE_MANIFEST="0", ALLOWED_HOSTS="127.0.0.1")  # fmt: skip
    env.pop("CELERY_BROKER_URL", None)
    web = processes.start_web(env, port, workers=1, threads=1)
    try:
        health = f"http://127.0.0.1:{port}/healthz"
        assert requests.get(health, timeout=10).status_code == 200  # the connection is kept
        postgres.restart()
        answers = [requests.get(health, timeout=10).status_code for _ in range(3)]
        assert answers == [200, 200, 200]
        # While it is down, the API answers in its own format that this is temporary.
        postgres.stop()
        down = requests.get(f"http://127.0.0.1:{port}/api/projects/",
                            headers={"Authorization": "Token 0123456789abcdef"}, timeout=10)  # fmt: skip
        assert down.status_code == 503, down.text[:300]
        assert "try again" in down.json()["message"] and down.json()["extra"] == {}
        assert int(down.headers["Retry-After"]) > 0
    finally:
        processes.stop(web)
        postgres.remove()
