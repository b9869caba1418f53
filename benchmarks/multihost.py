"""Several hosts under faults: the soak (benchmarks/soak.py) with every part on a host of its own.

Linux network namespaces on one bridge stand for the hosts (tests/netns.py; private addresses
``10.77.0.0/24``, or the next free /24): ``db`` runs PostgreSQL and Redis listening on its
address, ``web1`` and ``web2`` each run the web server as deployed (granian, docker-compose.yml's
command), ``worker`` runs the Celery worker and beat, and ``lb`` runs HAProxy (Debian's) in front
of the two web hosts, checking ``/healthz``. The annotators (soak.py's: think time, skips,
retried and repeated submits, abandoned leases) work through the balancer. The items are
uploaded through ``web1`` alone and imported by the worker (the import's states are printed as
they change). Meanwhile:

* ``web1`` is killed (every process on the host SIGKILLed) and started again later;
* the worker is SIGKILLed in the middle of a resolution and started again;
* Redis is stopped and started again empty (a release is published and an import started while
  it is down, as in the soak).

Afterwards a release is published (built by the worker) and downloaded through each web host
directly: the bytes must match the release's SHA-256. Every soak invariant is checked (nothing
over-assigned, duplicated, lost or stuck), and the figures are printed: throughput and p95
before, during and after each fault, annotations per web CPU-second (what one web core
sustains when busy) and the database's growth per million annotations.

Files: every host gets its own ``MEDIA_ROOT`` when an object store is configured; without one,
the hosts share one directory (the stand-in for a shared mount) and the run says so.

Everything it makes — namespaces, veths, the bridge, their processes, the data directory — is
removed at the end, also when it fails or is interrupted (SIGINT / SIGTERM).

    .venv/bin/python benchmarks/multihost.py [--seconds 300] [--annotators 64]

Needs root, iproute2 and haproxy; exits 2 with the reason when they are missing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.soak import Fault, Soak  # noqa: E402
from tests import netns, processes  # noqa: E402

WEB_PORT = 8000
BALANCER_PORT = 80
STORE_PORT = 5000
HOSTS = {"lb": 10, "web1": 11, "web2": 12, "worker": 21, "db": 2, "store": 30}
BUCKET = "rungwise-multihost"


def object_store_unavailable() -> str | None:
    """None when the site can keep its files in an S3-compatible store (rungwise/storage.py)
    and moto's server (the ``dev`` extra) can stand for one here, else why not."""
    if not (REPO / "rungwise" / "storage.py").exists():
        return "this version of the site has no object storage (rungwise/storage.py)"
    if shutil.which("moto_server", path=str(Path(sys.executable).parent)) is None:
        return "moto_server is not installed (pip install -e '.[dev]')"
    return None


# --- Servers on a host ------------------------------------------------------------------------


class HostPostgres(processes.Postgres):
    """processes.Postgres on the ``db`` host, listening on its address (trust for the subnet:
    a throwaway cluster on a private bridge)."""

    def __init__(self, directory: Path, network: netns.Network, host: str):
        super().__init__(directory, port=5432)
        self.address = network.hosts[host].address
        self.subnet = network.subnet
        self.as_postgres = network.command(host, "runuser", "-u", "postgres", "--")

    def init(self) -> HostPostgres:
        assert self.bin is not None  # the constructor refuses a machine without PostgreSQL
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory.parent, 0o755)
        subprocess.run(["chown", "postgres:postgres", str(self.directory)], check=True)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
                  "-E", "UTF8", "--no-locale")  # fmt: skip
        with open(self.data / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {self.subnet}.0/24 trust\n")
        self.start()
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "postgres", self.database)  # fmt: skip
        return self

    def start(self) -> None:
        assert self.bin is not None
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1,{self.address} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=300"
        )
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l",
                  str(self.directory / "server.log"), "-w", "-o", options, "start")  # fmt: skip

    def url(self, database: str | None = None) -> str:
        return f"postgres://postgres@{self.address}:{self.port}/{database or self.database}"


class HostRedis(processes.Redis):
    """processes.Redis on the ``db`` host, listening on its address; keeps nothing on disk."""

    def __init__(self, directory: Path, network: netns.Network, host: str):
        super().__init__(directory, 6379)
        self.address = network.hosts[host].address
        self.prefix = network.command(host)

    def url(self, database: int = 0) -> str:
        return f"redis://{self.address}:{self.port}/{database}"

    def answers(self) -> bool:
        result = subprocess.run(["redis-cli", "-h", self.address, "-p", self.port, "ping"],
                                capture_output=True, text=True)  # fmt: skip
        return result.stdout.strip() == "PONG"

    def start(self) -> HostRedis:
        self.directory.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [*self.prefix, "redis-server", "--port", self.port, "--bind",
             f"127.0.0.1 {self.address}", "--protected-mode", "no", "--save", "",
             "--appendonly", "no", "--daemonize", "yes",
             "--pidfile", str(self.directory / "redis.pid"),
             "--logfile", str(self.directory / "redis.log"), "--dir", str(self.directory)],
            check=True,
        )  # fmt: skip
        processes.wait_until(self.answers, timeout=10, what="Redis answering")
        return self

    def shutdown(self) -> None:
        subprocess.run(["redis-cli", "-h", self.address, "-p", self.port, "shutdown", "nosave"],
                       capture_output=True)  # fmt: skip
        processes.wait_until(lambda: not self.answers(), timeout=10, what="Redis stopped")


def haproxy_config(network: netns.Network, stats_socket: Path) -> str:
    """The balancer: round robin over the web hosts, each checked on /healthz every second
    (down after 3 failures, up after 2 successes; a check waits up to 5 s for its answer, so a
    busy host is not taken for a dead one); a request whose connection fails is sent
    to the other host (``redispatch``). Requests already sent are never retried: a submit
    that got no answer is the client's to repeat (the API answers a repeat with the stored
    annotation)."""
    servers = "\n".join(
        f"    server {name} {network.hosts[name].address}:{WEB_PORT} check inter 1s fall 3 rise 2"
        for name in ("web1", "web2")
    )
    return f"""global
    maxconn 4096
    stats socket {stats_socket} mode 600 level admin

defaults
    mode http
    option forwardfor
    option redispatch
    retries 2
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 30s
    timeout check 5s

frontend site
    bind {network.hosts["lb"].address}:{BALANCER_PORT}
    default_backend web

backend web
    balance roundrobin
    option httpchk
    http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host {network.hosts["lb"].address}
{servers}
"""


def haproxy_stats(stats_socket: Path) -> list[dict[str, str]]:
    """The balancer's statistics (``show stat`` on its socket): a row per proxy and server."""
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(2)
            sock.connect(str(stats_socket))
            sock.sendall(b"show stat\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    except OSError:
        return []
    lines = b"".join(chunks).decode().splitlines()
    if not lines or not lines[0].startswith("# "):
        return []
    header = lines[0][2:].split(",")
    return [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]


def haproxy_states(stats_socket: Path) -> dict[str, str]:
    """Each web server's state as the balancer sees it (UP, DOWN, …)."""
    return {
        row["svname"]: row["status"]
        for row in haproxy_stats(stats_socket)
        if row.get("pxname") == "web" and row.get("svname", "").startswith("web")
    }


# --- The run ----------------------------------------------------------------------------------


class MultiHost(Soak):
    def __init__(self, args):
        super().__init__(args)
        reason = object_store_unavailable() if args.files != "shared" else "--files shared"
        if reason and args.files == "object-store":
            raise SystemExit(f"multihost: no object store: {reason}")
        # Without an object store, one directory stands for a disk every host mounts.
        self.shared_media, self.no_store_reason = bool(reason), reason
        self.network = netns.Network(args.subnet)
        try:
            for name, octet in HOSTS.items():
                if name != "store" or not self.shared_media:
                    self.network.add(name, octet)
        except BaseException:
            self.network.remove()
            shutil.rmtree(self.work, ignore_errors=True)
            raise
        self.postgres = HostPostgres(self.work, self.network, "db")
        self.redis = HostRedis(self.work / "redis", self.network, "db")
        self.host, self.port = self.network.hosts["lb"].address, BALANCER_PORT
        self.stats_socket = self.work / "haproxy.sock"
        self.sizing: dict[str, float] = {}
        # Seven hosts' processes share this machine's cores: the sweeps that repair what the
        # faults lost (resolutions queued in the Redis that came back empty) take longer.
        self.patience_seconds = 300.0
        self.download_problems: list[str] = []

    def address(self, host: str) -> tuple[str, int]:
        return self.network.hosts[host].address, WEB_PORT

    def env(self, host: str = "orchestrator") -> dict[str, str]:
        addresses = ",".join(host.address for host in self.network.hosts.values())
        media = "media" if self.shared_media else f"media-{host}"
        store = {} if self.shared_media else {
            "RUNGWISE_S3_BUCKET": BUCKET,
            "RUNGWISE_S3_ENDPOINT_URL": self.store_url(),
            "RUNGWISE_S3_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "multihost",
            "AWS_SECRET_ACCESS_KEY": "multihost",
        }  # fmt: skip
        return {
            **super().env(),
            "ALLOWED_HOSTS": addresses,
            "RUNGWISE_BIND": self.network.hosts["lb"].address,
            # One proxy (the balancer) appends X-Forwarded-For.
            "RUNGWISE_TRUSTED_PROXIES": "1",
            # Each host's own disk, which nothing may need to share with the store on.
            "MEDIA_ROOT": str(self.work / media),
            **store,
        }

    def store_url(self) -> str:
        return f"http://{self.network.hosts['store'].address}:{STORE_PORT}"

    def start_store(self) -> None:
        """moto's S3-compatible server on the ``store`` host, with the site's bucket."""
        import boto3
        import requests

        command = shutil.which("moto_server", path=str(Path(sys.executable).parent))
        assert command is not None
        self.processes["store"] = subprocess.Popen(
            self.network.command("store", command, "-H", "0.0.0.0", "-p", str(STORE_PORT)),
            stdout=open(self.work / "store.log", "ab"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

        def answers() -> bool:
            if self.processes["store"].poll() is not None:
                raise RuntimeError("moto_server exited: see store.log")
            try:
                return requests.get(self.store_url(), timeout=30).status_code < 500
            except (requests.ConnectionError, requests.Timeout):
                return False

        processes.wait_until(answers, timeout=180, interval=0.5, what="the object store")
        boto3.client(
            "s3", endpoint_url=self.store_url(), region_name="us-east-1",
            aws_access_key_id="multihost", aws_secret_access_key="multihost",
        ).create_bucket(Bucket=BUCKET)  # fmt: skip

    def stored_objects(self) -> int:
        import boto3

        client = boto3.client(
            "s3", endpoint_url=self.store_url(), region_name="us-east-1",
            aws_access_key_id="multihost", aws_secret_access_key="multihost",
        )  # fmt: skip
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return sum(page.get("KeyCount", 0) for page in pages)

    def files_on_host_disks(self) -> int:
        """Files written under any host's MEDIA_ROOT (with an object store: none may be)."""
        return sum(1 for path in self.work.glob("media-*/**/*") if path.is_file())

    def start_web(self, host: str, wait: bool = True) -> None:
        """Start the web server on ``host``; with ``wait``, return once it answers /healthz."""
        command = processes.web_command(WEB_PORT, workers=self.args.web_workers,
                                        threads=self.args.threads)  # fmt: skip
        command[command.index("--host") + 1] = "0.0.0.0"
        log = open(self.work / f"{host}.log", "ab")
        self.processes[host] = subprocess.Popen(
            self.network.command(host, *command), cwd=REPO, env=self.env(host), stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        if wait:
            self.wait_web(host)

    def wait_web(self, host: str) -> None:
        address, port = self.address(host)
        processes.wait_http(f"http://{address}:{port}/healthz", timeout=180,
                            process=self.processes[host])  # fmt: skip

    def start_worker(self) -> None:
        self.worker_count += 1
        name = f"multihost{self.worker_count}-{os.getpid()}@%h"
        env = {**self.env("worker"),
               "DATABASE_URL": self.postgres.url() + "?application_name=soak-worker"}  # fmt: skip
        command = processes.worker_command(
            name, pool=self.args.pool, concurrency=self.args.concurrency, quiet=True
        )
        log = open(self.work / "worker.log", "ab")
        process = subprocess.Popen(
            self.network.command("worker", *command), cwd=REPO, env=env, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.processes["worker"] = process
        processes.wait_for_worker(process, name, env["CELERY_BROKER_URL"], timeout=90)

    def start(self) -> None:
        self.postgres.init()
        self.redis.start()
        if not self.shared_media:
            self.start_store()
        os.environ.update(self.env())
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        for host in ("web1", "web2"):
            self.start_web(host, wait=False)
        for host in ("web1", "web2"):
            self.wait_web(host)
        self.start_worker()
        self.processes["beat"] = subprocess.Popen(
            self.network.command("worker", sys.executable, "-m", "celery", "-A", "rungwise",
                                 "beat", "-l", "warning", "--schedule",
                                 str(self.work / "beat-schedule")),
            cwd=REPO, env=self.env("worker"), stdout=open(self.work / "beat.log", "ab"),
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        config = self.work / "haproxy.cfg"
        config.write_text(haproxy_config(self.network, self.stats_socket))
        self.processes["balancer"] = subprocess.Popen(
            self.network.command("lb", "haproxy", "-db", "-f", str(config)),
            stdout=open(self.work / "haproxy.log", "ab"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        processes.wait_until(
            lambda: haproxy_states(self.stats_socket) == {"web1": "UP", "web2": "UP"},
            timeout=30, what="the balancer seeing both web hosts up",
        )  # fmt: skip
        hosts = ", ".join(f"{host.name} {host.address}" for host in self.network.hosts.values())
        files = (
            f"one directory shared by every host (no object store: {self.no_store_reason})"
            if self.shared_media
            else f"the object store on store ({self.store_url()}), each host its own MEDIA_ROOT"
        )
        print(f"multihost: hosts {hosts}; files: {files}; data in {self.work}", flush=True)

    def stop_all(self) -> None:
        try:
            for process in self.processes.values():
                if process.poll() is None:
                    processes.stop(process, timeout=10)
        finally:
            self.network.remove()  # kills what is left on every host, PostgreSQL and Redis too
            if not self.args.keep:
                shutil.rmtree(self.work, ignore_errors=True)

    # Setup: the import through one web host ---------------------------------------------------

    def import_items(self, count: int, address: tuple[str, int] | None = None) -> int:
        """Upload through ``web1`` only and watch the worker take the import through its
        states."""
        from imports.models import ImportBatch

        started = time.monotonic()
        status, data = self.upload("items.jsonl", count, "item", address or self.address("web1"))
        assert status == 202, f"the import through web1 answered {status}: {data}"
        seen: list[tuple[float, str]] = []

        def finished() -> bool:
            state = ImportBatch.objects.get(pk=data["id"]).status
            if not seen or seen[-1][1] != state:
                seen.append((time.monotonic() - started, state))
            return state in (ImportBatch.Status.SUCCEEDED, ImportBatch.Status.FAILED)

        processes.wait_until(finished, timeout=300, interval=0.2, what="the import")
        print("import of {} items uploaded through web1: {}".format(
            count, " → ".join(f"{state} ({at:.1f} s)" for at, state in seen)), flush=True)  # fmt: skip
        batch = ImportBatch.objects.get(pk=data["id"])
        assert batch.status == ImportBatch.Status.SUCCEEDED, batch.errors
        self.database_bytes_before = self.database_bytes()
        self.cpu_before = {host: self.network.cpu_seconds(host) for host in self.network.hosts}
        return batch.pk

    # Faults -------------------------------------------------------------------------------

    def plan(self, seconds: float) -> list[tuple[float, Callable[[], Fault]]]:
        down = 0.12 * seconds
        outage = min(30.0, 0.1 * seconds)
        return [
            (0.15 * seconds, lambda: self.kill_web("web1", down)),
            (0.45 * seconds, self.kill_worker),
            (0.65 * seconds, lambda: self.redis_outage(outage)),
        ]

    def kill_web(self, host: str, down: float) -> Fault:
        """SIGKILL every process on ``host``; start its web server again after ``down``
        seconds. Notes when the balancer marked it down and up again."""
        self.measure_steady_state()
        fault = Fault(f"{host} killed, back after {down:.0f} s")
        fault.started = time.monotonic()
        killed = self.network.kill(host)
        self.processes[host].wait()
        fault.notes.append(f"{killed} processes SIGKILLed")
        marked_down = processes.wait_until(
            lambda: haproxy_states(self.stats_socket).get(host) == "DOWN" and time.monotonic(),
            timeout=down + 10, interval=0.1, what="the balancer marking it down",
        )  # fmt: skip
        fault.notes.append(f"the balancer marked it DOWN after {marked_down - fault.started:.1f} s")
        time.sleep(max(0.0, fault.started + down - time.monotonic()))
        self.start_web(host)
        marked_up = processes.wait_until(
            lambda: haproxy_states(self.stats_socket).get(host) == "UP" and time.monotonic(),
            timeout=30, interval=0.1, what="the balancer marking it up",
        )  # fmt: skip
        fault.ended = marked_up
        fault.notes.append(f"UP again {marked_up - fault.started:.1f} s after the kill")
        return fault

    # Figures ----------------------------------------------------------------------------------

    def database_bytes(self) -> int:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_database_size(current_database())")
            return cursor.fetchone()[0]

    def measure_steady_state(self) -> None:
        """Annotations per web CPU-second between the start and the first fault (both web
        hosts up): the CPU of every process on web1 and web2 from /proc, so the figure is
        what one core sustains, whatever else shares this machine."""
        if "web_cpu" in self.sizing:
            return
        now = time.monotonic()

        def cpu(host: str) -> float:
            return self.network.cpu_seconds(host) - self.cpu_before[host]

        stored = sum(
            1
            for end, operation, _, status in self.log.requests
            if self.t0 <= end < now and operation == "submit" and status == 201
        )
        self.sizing.update(
            web_cpu=cpu("web1") + cpu("web2"),
            stored=stored,
            seconds=now - self.t0,
            db_cpu=cpu("db"),
            worker_cpu=cpu("worker"),
            load=os.getloadavg()[0],
        )

    def after_load(self) -> None:
        """A release built on the worker host, downloaded through each web host directly."""
        from releases.models import Release

        # A release published during the Redis outage may still be building (its task was lost
        # with Redis; the sweep starts it again): one build at a time.
        processes.wait_until(
            lambda: not Release.objects.filter(status=Release.Status.BUILDING).exists(),
            timeout=300, interval=0.5, what="the earlier release builds",
        )  # fmt: skip
        status, data = self.admin.post(
            "publish", "/api/projects/soak/releases/", {"notes": "after the faults"}
        )
        if status != 202:
            self.download_problems.append(f"publishing answered {status}: {data}")
            return
        version = data["version"]
        processes.wait_until(
            lambda: Release.objects.get(project__slug="soak", version=version).status
            != Release.Status.BUILDING,
            timeout=180, interval=0.5, what="the release build",
        )  # fmt: skip
        release = Release.objects.get(project__slug="soak", version=version)
        print(f"release v{version} {release.status} (built on the worker host), "
              f"sha256 {release.sha256[:12]}…", flush=True)  # fmt: skip
        for host in ("web1", "web2"):
            digest, size, answer = self.download(host, version)
            if digest != release.sha256:
                self.download_problems.append(f"{host}: {answer}")
            print(f"  downloaded through {host}: {size} bytes, "
                  f"{'same SHA-256' if digest == release.sha256 else answer}", flush=True)  # fmt: skip

    def download(self, host: str, version: int) -> tuple[str, int, str]:
        """GET the release archive from ``host``'s web server (following a redirect to the
        object store); returns (sha256, size, what was answered)."""
        import requests

        address, port = self.address(host)
        url = f"http://{address}:{port}/api/projects/soak/releases/{version}/download/"
        digest, size = hashlib.sha256(), 0
        try:
            with requests.get(url, headers={"Authorization": self.admin.headers["Authorization"]},
                              stream=True, timeout=60) as response:  # fmt: skip
                if response.status_code != 200:
                    return "", 0, f"answered {response.status_code}"
                for chunk in response.iter_content(1 << 16):
                    digest.update(chunk)
                    size += len(chunk)
        except requests.RequestException as error:
            return "", 0, f"no answer ({error})"
        return digest.hexdigest(), size, "answered 200 with other bytes"

    def report_figures(self) -> None:
        super().report_figures()
        from annotation.models import Annotation

        sizing = self.sizing
        if sizing.get("web_cpu"):
            stored = sizing["stored"]
            print(
                f"\nsteady state (first {sizing['seconds']:.0f} s, both web hosts up; load "
                f"average {sizing['load']:.2f} on {os.cpu_count()} cores): {stored} annotations, "
                f"{stored / sizing['seconds']:.1f}/s; web CPU {sizing['web_cpu']:.1f} s → "
                f"{stored / sizing['web_cpu']:.1f} annotations per web CPU-second; database "
                f"host CPU {1000 * sizing['db_cpu'] / max(stored, 1):.1f} ms and worker host "
                f"CPU {1000 * sizing['worker_cpu'] / max(stored, 1):.1f} ms per annotation"
            )
        rows = {
            row["svname"]: row
            for row in haproxy_stats(self.stats_socket)
            if row.get("pxname") in ("web", "site")
        }
        answered = "; ".join(
            f"{name} {rows[name].get('hrsp_2xx')} 2xx, {rows[name].get('hrsp_5xx')} 5xx, "
            f"marked down {rows[name].get('chkdown')} times"
            for name in ("web1", "web2")
            if name in rows
        )
        from_servers = sum(int(rows[name].get("hrsp_5xx") or 0) for name in ("web1", "web2")
                           if name in rows)  # fmt: skip
        own = int(rows.get("FRONTEND", {}).get("hrsp_5xx") or 0) - from_servers
        print(
            f"the balancer: {answered}; {own} 5xx of its own (a host gone mid-request, or none up)"
        )
        total = Annotation.objects.filter(item_stage__item__project__slug="soak").count()
        grown = self.database_bytes() - self.database_bytes_before
        if total:
            print(f"database grew {grown / 2**20:.1f} MiB for {total} annotations → "
                  f"{grown / total * 1e6 / 2**30:.2f} GiB per million annotations (with their "
                  f"assignments, events and indexes)")  # fmt: skip

    def check(self) -> list[str]:
        failures = super().check()
        states = haproxy_states(self.stats_socket)
        extra = [
            ("release downloads through a web host that failed or differ",
             len(self.download_problems)),
            ("web hosts the balancer does not see up",
             sum(1 for host in ("web1", "web2") if states.get(host) != "UP")),
        ]  # fmt: skip
        for name, value in extra:
            print(f"  {'ok  ' if value == 0 else 'FAIL'} {name}: {value}")
            if value:
                failures.append(name)
        if not self.shared_media:
            objects, strays = self.stored_objects(), self.files_on_host_disks()
            print(f"  {'ok  ' if objects and not strays else 'FAIL'} files in the object store: "
                  f"{objects}; on a host's own disk: {strays}")  # fmt: skip
            if not objects or strays:
                failures.append("files not in the object store")
        for problem in self.download_problems:
            print(f"    {problem}")
        return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--annotators", type=int, default=64)
    parser.add_argument("--items", type=int, default=0, help="default: enough for the run")
    parser.add_argument("--think-min", type=float, default=0.3, help="seconds")
    parser.add_argument("--think-max", type=float, default=2.0, help="seconds")
    parser.add_argument("--web-workers", type=int, default=2, help="granian workers per host")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--pool", default="prefork", help="the worker's pool")
    parser.add_argument("--concurrency", type=int, default=2, help="the worker's processes")
    parser.add_argument(
        "--files", choices=("auto", "object-store", "shared"), default="auto",
        help="where the hosts keep files: an object store (moto) on a host of its own, one "
        "shared directory, or (auto) the store when the site and moto allow",
    )  # fmt: skip
    parser.add_argument("--subnet", default=None, help="three octets (default: 10.77.0 if free)")
    parser.add_argument("--keep", action="store_true", help="keep the logs and data directory")
    args = parser.parse_args(argv)
    reason = processes.servers_available() or netns.unavailable(programs=("haproxy",))
    if reason:
        print(f"multihost: {reason}", file=sys.stderr)
        return 2

    def interrupted(signum, frame):
        raise SystemExit(128 + signum)  # unwinds through the finally below: nothing left behind

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    run = None
    try:
        run = MultiHost(args)
        return run.run()
    finally:
        if run is not None:
            run.stop_all()


if __name__ == "__main__":
    sys.exit(main())
