"""Soak with faults: the whole deployment under simulated annotators while its parts fail.

Starts PostgreSQL and Redis of its own (in a temporary directory, so it can stop and restart
them), the web server (granian), a Celery worker and Celery beat (tests/processes.py); builds a two-stage
project (verify → label) through the services and imports its items through the import path
(an upload to the API, imported by the worker). Then N annotators work over HTTP for the run's
length: think time, skips, retried submits (the same assignment sent again after a lost
answer, and on purpose after a stored one) and leases abandoned to expire. Meanwhile:

* the worker is SIGKILLed in the middle of a resolution (its transaction open), then started
  again;
* Redis is stopped (60 s in a 300 s run) and restarted empty; a release is published and an
  import started while it is down;
* PostgreSQL is restarted once.

Afterwards (and after the sweeps' grace) it checks: no over-assigned slot, no duplicate
annotation, every acknowledged submit stored, no completed item left unresolved, no release or
import stuck, slot counters equal to a recount from the rows, every process alive; and prints
throughput and p95 latency before, during and after each fault. Exits 1 if an invariant fails.

    .venv/bin/python benchmarks/soak.py [--seconds 300] [--annotators 64]

Fault times scale with --seconds (the Redis outage is 20 % of the run, at most 60 s).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests import processes  # noqa: E402

LABELS = ["causal", "temporal", "unrelated"]


# --- Load ---------------------------------------------------------------------------------


@dataclass
class Log:
    """Every request: (end time, operation, latency s, status; 0 = no answer), and every
    acknowledged submit (assignment id → annotation id)."""

    requests: list[tuple[float, str, float, int]] = field(default_factory=list)
    acknowledged: dict[int, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, operation: str, started: float, status: int) -> None:
        now = time.monotonic()
        with self.lock:
            self.requests.append((now, operation, now - started, status))


class Client:
    """One keep-alive HTTP connection; a broken one is replaced on the next request."""

    def __init__(self, port: int, token: str, log: Log, host: str = "127.0.0.1"):
        self.host, self.port, self.log = host, port, log
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.conn: http.client.HTTPConnection | None = None

    def post(self, operation: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        started = time.monotonic()
        for attempt in range(2):
            reused = self.conn is not None
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                self.conn.request("POST", path, body=json.dumps(body or {}), headers=self.headers)
                response = self.conn.getresponse()
                raw = response.read()
                status = response.status
                break
            except (OSError, http.client.HTTPException) as error:
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                # A server may close a keep-alive connection while idle; a request sent on it as
                # it closes gets no answer. Like a browser, send it again on a new connection.
                stale = isinstance(error, (http.client.RemoteDisconnected, ConnectionResetError,
                                           BrokenPipeError))  # fmt: skip
                if attempt == 0 and reused and stale:
                    continue
                self.log.add(operation, started, 0)
                return 0, {}
        self.log.add(operation, started, status)
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            data = {}
        return status, data


class Annotator(threading.Thread):
    """Asks the label stage first, then verify; reads (think time), then submits, skips
    (3 %) or abandons the lease (2 %, and stays away from that stage until it expires);
    resubmits a stored answer on purpose (10 %); retries a submit that got no answer or a
    5xx with the same assignment until it is acknowledged."""

    def __init__(self, index, port, token, stages, lease_seconds, think, stop, log,
                 host="127.0.0.1"):  # fmt: skip
        super().__init__(daemon=True)
        self.client = Client(port, token, log, host)
        self.random = random.Random(index)
        self.stages, self.lease_seconds, self.think = stages, lease_seconds, think
        self.stop, self.log = stop, log
        self.away: dict[str, float] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            leased = self.next_item()
            if leased is None:
                continue
            kind, assignment = leased
            roll = self.random.random()
            if roll < 0.02:  # abandoned: never submitted; the lease must expire
                self.away[kind] = time.monotonic() + self.lease_seconds + 1
                continue
            self.stop.wait(self.random.uniform(*self.think))
            if roll < 0.05:
                self.client.post("skip", f"/api/assignments/{assignment}/skip/",
                                 {"reason": "not sure"})  # fmt: skip
                continue
            if kind == "verify":
                value = "keep" if self.random.random() < 0.85 else "reject"
            else:
                value = LABELS[0] if self.random.random() < 0.8 else self.random.choice(LABELS)
            self.submit(assignment, {"payload": {"value": value}, "seconds_spent": 2.0})

    def next_item(self):
        now = time.monotonic()
        for kind in ("label", "verify"):
            if self.away.get(kind, 0) > now:
                continue
            status, data = self.client.post("next", f"/api/stages/{self.stages[kind]}/next/")
            if status == 200:
                return kind, data["id"]
            if status != 204:
                self.stop.wait(0.5)  # an error: back off a little
                return None
        self.stop.wait(1.0)  # nothing to do right now
        return None

    def submit(self, assignment: int, body: dict) -> None:
        path = f"/api/assignments/{assignment}/submit/"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            status, data = self.client.post("submit", path, body)
            if status in (200, 201):
                with self.log.lock:
                    self.log.acknowledged[assignment] = data["id"]
                if self.random.random() < 0.10:  # the answer "got lost": send it again
                    again, repeat = self.client.post("resubmit", path, body)
                    if again in (200, 201) and (again != 200 or repeat.get("id") != data["id"]):
                        with self.log.lock:
                            self.log.problems.append(
                                f"resubmit of assignment {assignment} answered {again} with "
                                f"annotation {repeat.get('id')}, not 200 with {data['id']}"
                            )
                return
            if status == 429 or status == 0 or status >= 500:
                if self.stop.is_set() and status != 429:
                    return  # not acknowledged: it may or may not be stored; both are fine
                self.stop.wait(0.5 + self.random.random())
                continue
            return  # 409 (the slot went to someone else after the lease expired), 404, 400


# --- Faults -------------------------------------------------------------------------------


@dataclass
class Fault:
    name: str
    started: float = 0.0
    ended: float = 0.0
    notes: list[str] = field(default_factory=list)


class Soak:
    def __init__(self, args):
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="rungwise-soak-"))
        self.postgres = processes.Postgres(self.work)
        self.redis = processes.Redis(self.work / "redis")
        self.host, self.port = "127.0.0.1", processes.free_port()
        self.log = Log()
        self.faults: list[Fault] = []
        self.processes: dict[str, subprocess.Popen] = {}
        self.worker_count = 0
        self.sweep_seconds = max(1.0, min(10.0, args.seconds / 30))
        self.grace_seconds = 2 * self.sweep_seconds
        self.lease_seconds = max(10, int(args.seconds / 10))
        # How long the checks wait for the sweeps to finish what the faults left (they stop
        # waiting as soon as nothing is pending): past it, an item still resolving is stuck.
        self.patience_seconds = 60.0
        self.outage_release: dict | None = None
        self.outage_import: dict | None = None

    # Processes ----------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        return processes.process_env(
            DATABASE_URL=self.postgres.url(),
            CELERY_BROKER_URL=self.redis.url(0),
            CACHE_URL=self.redis.url(1),
            SECRET_KEY="soak-secret-key-" + "s" * 40,
            DEBUG="0",
            SECURE_COOKIES="0",
            WHITENOISE_MANIFEST="0",
            ALLOWED_HOSTS="127.0.0.1",
            MEDIA_ROOT=str(self.work / "media"),
            SWEEP_SECONDS=str(self.sweep_seconds),
            SWEEP_GRACE_SECONDS=str(self.grace_seconds),
            # The soak checks the counters itself: the recount must not hide a drift.
            REPAIR_SECONDS="86400",
            # Every import goes through the worker (the import path the outage tests).
            RUNGWISE_IMPORT_INLINE_MAX_BYTES="0",
            AGREEMENT_REFRESH_INTERVAL="5",
        )

    def start_worker(self):
        self.worker_count += 1
        name = f"soak{self.worker_count}-{os.getpid()}@%h"
        # Named sessions, so that the kill can be timed to a resolution in progress.
        env = {**self.env(), "DATABASE_URL": self.postgres.url() + "?application_name=soak-worker"}
        self.processes["worker"] = processes.start_worker(
            env, name, pool=self.args.pool, concurrency=self.args.concurrency,
            log=self.work / "worker.log", timeout=60,
        )  # fmt: skip

    def start(self) -> None:
        self.postgres.init()
        self.redis.start()
        os.environ.update(self.env())
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        self.processes["web"] = processes.start_web(
            self.env(), self.port, workers=self.args.web_workers, threads=self.args.threads,
            log=self.work / "web.log",
        )  # fmt: skip
        self.start_worker()
        self.processes["beat"] = processes.start_beat(
            self.env(), self.work / "beat-schedule", log=self.work / "beat.log"
        )

    def stop_all(self) -> None:
        for process in self.processes.values():
            processes.stop(process)
        if self.redis.answers():
            self.redis.shutdown()
        self.postgres.stop("immediate")
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)

    # Setup through the services and the import path ----------------------------------------

    def build_project(self) -> None:
        from django.contrib.auth import get_user_model

        from annotation import services
        from api.auth import token_for

        project = services.project_create(slug="soak", name="Soak")
        verify = services.stage_create(
            project=project,
            slug="verify",
            name="Verify",
            kind="verify",
            overlap=3,
            lease_seconds=self.lease_seconds,
        )
        label = services.stage_create(project=project, slug="label", name="Label", kind="label",
                                      overlap=3, config={"choices": LABELS},
                                      lease_seconds=self.lease_seconds)  # fmt: skip
        self.project, self.stages = project, {"verify": verify.pk, "label": label.pk}
        User = get_user_model()
        admin = User.objects.create_user(username="soak-admin", is_staff=True, is_superuser=True)
        services.membership_add(project=project, user=admin, role="admin")
        self.admin = Client(self.port, token_for(admin).key, Log(), self.host)
        self.tokens = []
        for index in range(self.args.annotators):
            user = User.objects.create_user(username=f"soak-{index:03d}")
            services.membership_add(project=project, user=user, role="annotator")
            self.tokens.append(token_for(user).key)

    def upload(
        self, name: str, count: int, prefix: str, address: tuple[str, int] | None = None
    ) -> tuple[int, dict]:
        """POST a JSON Lines file to the import API (multipart, as a browser or script does),
        through ``address`` (host, port; default: the site's)."""
        lines = "".join(
            json.dumps({"id": f"{prefix}-{index:06d}",
                        "text": f"Sentence {index}: the rain fell, so the river rose."}) + "\n"
            for index in range(count)
        ).encode()  # fmt: skip
        boundary = uuid.uuid4().hex
        body = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n".encode()
            + lines
            + f"\r\n--{boundary}--\r\n".encode()
        )
        host, port = address or (self.host, self.port)
        conn = http.client.HTTPConnection(host, port, timeout=60)
        headers = {
            **self.admin.headers,
            "Content-Type": f"multipart/form-data; boundary={boundary}",
        }
        try:
            conn.request("POST", "/api/projects/soak/imports/", body=body, headers=headers)
            response = conn.getresponse()
            return response.status, json.loads(response.read() or b"{}")
        except (OSError, http.client.HTTPException, ValueError) as error:
            return 0, {"error": str(error)}
        finally:
            conn.close()

    def import_items(self, count: int, address: tuple[str, int] | None = None) -> int:
        """Upload ``count`` items (through ``address``, default: the site's) and wait for the
        worker to import them; returns the batch's id."""
        status, data = self.upload("items.jsonl", count, "item", address)
        assert status == 202, f"import answered {status}: {data}"
        from imports.models import ImportBatch

        processes.wait_until(
            lambda: ImportBatch.objects.get(pk=data["id"]).status
            in (ImportBatch.Status.SUCCEEDED, ImportBatch.Status.FAILED),
            timeout=300, interval=0.5, what="the import",
        )  # fmt: skip
        batch = ImportBatch.objects.get(pk=data["id"])
        assert batch.status == ImportBatch.Status.SUCCEEDED, batch.errors
        return batch.pk

    # Faults -------------------------------------------------------------------------------

    def kill_worker(self) -> Fault:
        """SIGKILL the worker (with its pool's children) in the middle of a resolution: when
        one of its database sessions is inside a transaction on the item stages, then start a
        new one."""
        from django.db import connection

        fault = Fault("worker SIGKILL")
        deadline = time.monotonic() + 15
        caught = None
        with connection.cursor() as cursor:
            while caught is None and time.monotonic() < deadline:
                cursor.execute(
                    "SELECT state, left(query, 60) FROM pg_stat_activity WHERE application_name "
                    "= 'soak-worker' AND xact_start IS NOT NULL AND query ILIKE %s LIMIT 1",
                    ["%annotation_itemstage%"],
                )
                caught = cursor.fetchone()
        fault.started = time.monotonic()
        processes.kill_group(self.processes["worker"])
        connection.close()
        fault.notes.append(
            f"killed in a transaction ({caught[0]}: {caught[1]!r}…)"
            if caught else "no resolution caught in progress within 15 s; killed anyway"
        )  # fmt: skip
        time.sleep(1)
        self.start_worker()
        fault.ended = time.monotonic()
        return fault

    def redis_outage(self, seconds: float) -> Fault:
        """Stop Redis; publish a release and start an import while it is down; start it
        again empty after ``seconds``."""
        fault = Fault(f"Redis down {seconds:.0f} s, back empty")
        fault.started = time.monotonic()
        self.redis.shutdown()
        back = fault.started + seconds
        published = imported = None
        while time.monotonic() < back:
            if published is None:
                status, data = self.admin.post(
                    "publish",
                    "/api/projects/soak/releases/",
                    {"notes": "published while Redis was down"},
                )
                if status == 202:
                    published = data
                    fault.notes.append(
                        f"release v{data['version']} published during the outage "
                        f"({'queued' if data.get('queued') else data['status']})"
                    )
                elif status >= 500 or status == 0:
                    fault.notes.append(f"publish answered {status}")
            if imported is None:
                status, data = self.upload("late.jsonl", 20, "late")
                if status in (201, 202):
                    imported = data
                    fault.notes.append(f"import {data['id']} started during the outage")
                else:
                    fault.notes.append(f"import answered {status}")
            time.sleep(min(1.0, max(0.0, back - time.monotonic())))
        if published is None:
            fault.notes.append("NO release could be published during the outage")
        self.outage_release, self.outage_import = published, imported
        self.redis.start()
        fault.ended = time.monotonic()
        return fault

    def restart_postgres(self) -> Fault:
        from django.db import connection

        fault = Fault("PostgreSQL restart")
        connection.close()
        fault.started = time.monotonic()
        self.postgres.restart()
        fault.ended = time.monotonic()
        return fault

    # The run ------------------------------------------------------------------------------

    def run(self) -> int:
        args = self.args
        think = (args.think_min, args.think_max)
        rate = args.annotators / (sum(think) / 2 + 0.05)
        items = args.items or int(rate * args.seconds / 3 * 1.3) + 100
        started_setup = time.monotonic()
        self.start()
        self.build_project()
        self.import_items(items)
        print(
            f"soak: {args.annotators} annotators, {args.seconds:.0f} s, {items} items (verify → "
            f"label, overlap 3, lease {self.lease_seconds} s), think {think[0]}–{think[1]} s; "
            f"granian {args.web_workers} × {args.threads}; worker {args.pool} × "
            f"{args.concurrency}; sweeps every {self.sweep_seconds:g} s, "
            f"grace {self.grace_seconds:g} s; {os.cpu_count()} cores; setup "
            f"{time.monotonic() - started_setup:.0f} s",
            flush=True,
        )
        stop = threading.Event()
        annotators = [
            Annotator(index, self.port, token, self.stages, self.lease_seconds, think, stop,
                      self.log, self.host)
            for index, token in enumerate(self.tokens)
        ]  # fmt: skip
        self.t0 = time.monotonic()
        for annotator in annotators:
            annotator.start()
        seconds = args.seconds
        for at, action in self.plan(seconds):
            self._sleep_until(self.t0 + at)
            fault = action()
            self.faults.append(fault)
            print(f"  {fault.started - self.t0:6.1f}–{fault.ended - self.t0:6.1f} s  "
                  f"{fault.name}: {'; '.join(fault.notes)}", flush=True)  # fmt: skip
        # A fault that overran the plan still gets an "after" window of load.
        last = max((fault.ended for fault in self.faults), default=self.t0)
        self._sleep_until(max(self.t0 + seconds, last + 0.1 * seconds))
        stop.set()
        for annotator in annotators:
            annotator.join(timeout=60)
        self.t_end = time.monotonic()
        self.after_load()
        self.report_figures()
        failures = self.check()
        return 1 if failures else 0

    def plan(self, seconds: float) -> list[tuple[float, Callable[[], Fault]]]:
        """The faults: (seconds after the annotators start, a method returning a Fault)."""
        outage = min(60.0, 0.2 * seconds)
        return [
            (0.15 * seconds, self.kill_worker),
            (0.35 * seconds, lambda: self.redis_outage(outage)),
            (0.35 * seconds + outage + 0.25 * seconds, self.restart_postgres),
        ]

    def after_load(self) -> None:
        """Work once the annotators have stopped, before the figures and checks (none here)."""

    def _sleep_until(self, moment: float) -> None:
        time.sleep(max(0.0, moment - time.monotonic()))

    # Figures ------------------------------------------------------------------------------

    def window(self, start: float, end: float) -> str:
        rows = [row for row in self.log.requests if start <= row[0] < end]
        stored = sum(1 for _, op, _, status in rows if op == "submit" and status == 201)
        latencies = sorted(latency for _, _, latency, status in rows if status)
        failed = sum(1 for *_, status in rows if status == 0 or status >= 500)
        p95 = latencies[int(0.95 * (len(latencies) - 1))] * 1000 if latencies else float("nan")
        span = max(end - start, 1e-9)
        return (f"{stored / span:7.1f}/s  p95 {p95:7.0f} ms  {len(rows) / span:6.1f} req/s  "
                f"{failed:4d} 5xx/unanswered")  # fmt: skip

    def report_figures(self) -> None:
        span = self.args.seconds * 0.08
        print(f"\n{'':34} annotations    p95 (all requests)  requests   errors")
        print(f"{'whole run':34} {self.window(self.t0, self.t_end)}")
        for fault in self.faults:
            during_end = max(fault.ended, fault.started + span)
            print(f"{fault.name}")
            print(f"  {'before':32} {self.window(fault.started - span, fault.started)}")
            print(f"  {'during':32} {self.window(fault.started, during_end)}")
            print(f"  {'after':32} {self.window(during_end, during_end + span)}")
        statuses: dict[tuple[str, int], int] = {}
        for _, op, _, status in self.log.requests:
            statuses[op, status] = statuses.get((op, status), 0) + 1
        print("requests by answer: " + ", ".join(
            f"{op} {status or 'none'}: {n}" for (op, status), n in sorted(statuses.items())
        ))  # fmt: skip

    # Invariants ---------------------------------------------------------------------------

    def check(self) -> list[str]:
        from django.db import connection

        from annotation.models import Annotation, ItemStage
        from imports.models import ImportBatch
        from releases.models import Release

        connection.close()
        # Let the sweeps finish what the faults left: completed items, stuck builds, imports.
        settle = self.grace_seconds + 3 * self.sweep_seconds + 5
        deadline = time.monotonic() + max(settle, self.patience_seconds)
        time.sleep(settle)

        def pending():
            return (
                ItemStage.objects.filter(state=ItemStage.State.RESOLVING).exists()
                or Release.objects.filter(status=Release.Status.BUILDING).exists()
                or ImportBatch.objects.filter(
                    status__in=[
                        ImportBatch.Status.PENDING,
                        ImportBatch.Status.VALIDATING,
                        ImportBatch.Status.WRITING,
                    ]
                ).exists()
            )

        while pending() and time.monotonic() < deadline:
            time.sleep(1)

        checks: list[tuple[str, int]] = []

        def sql(query: str) -> int:
            with connection.cursor() as cursor:
                cursor.execute(query)
                return cursor.fetchone()[0]

        checks.append(("over-assigned slots", sql(
            "SELECT count(*) FROM annotation_itemstage s WHERE s.submitted_count + s.leased_count"
            " > s.target_count OR (SELECT count(*) FROM annotation_annotation a WHERE "
            "a.item_stage_id = s.id AND a.is_current AND a.round = s.round AND a.phase = s.phase)"
            " > s.target_count"
        )))  # fmt: skip
        checks.append(("duplicate annotations", sql(
            "SELECT count(*) FROM (SELECT item_stage_id, annotator_id FROM annotation_annotation "
            "WHERE is_current GROUP BY 1, 2 HAVING count(*) > 1) d"
        )))  # fmt: skip
        stored = set(Annotation.objects.values_list("assignment_id", "pk"))
        acknowledged = set(self.log.acknowledged.items())
        checks.append(("acknowledged submits missing", len(acknowledged - stored)))
        checks.append(("completed items unresolved after the grace", ItemStage.objects.filter(
            state=ItemStage.State.RESOLVING).count()))  # fmt: skip
        checks.append(("open items with full slots", sql(
            "SELECT count(*) FROM annotation_itemstage WHERE state = 'open' AND "
            "submitted_count >= target_count"
        )))  # fmt: skip
        checks.append(("releases stuck", Release.objects.exclude(
            status=Release.Status.PUBLISHED).count()))  # fmt: skip
        checks.append(("outage release not published", 0 if self.outage_release and
                       Release.objects.filter(version=self.outage_release["version"],
                                              status=Release.Status.PUBLISHED).exists() else 1))  # fmt: skip
        checks.append(("imports stuck or failed", ImportBatch.objects.exclude(
            status=ImportBatch.Status.SUCCEEDED).count()))  # fmt: skip
        checks.append(("outage import not done", 0 if self.outage_import and ImportBatch.objects.filter(
            pk=self.outage_import["id"], status=ImportBatch.Status.SUCCEEDED).exists() else 1))  # fmt: skip
        checks.append(("counters differ from a recount", sql(
            "SELECT count(*) FROM annotation_itemstage s WHERE s.state IN ('open', 'resolving') "
            "AND (s.submitted_count <> (SELECT count(*) FROM annotation_annotation a WHERE "
            "a.item_stage_id = s.id AND a.is_current AND a.round = s.round AND a.phase = s.phase) OR "
            "s.leased_count <> (SELECT count(*) FROM annotation_assignment l WHERE "
            "l.item_stage_id = s.id AND l.round = s.round AND l.phase = s.phase AND "
            "l.status = 'active'))"
        )))  # fmt: skip
        checks.append(("resubmits answered wrongly", len(self.log.problems)))
        dead = [name for name, process in self.processes.items() if process.poll() is not None]
        checks.append(("processes that died" + (f" ({', '.join(dead)})" if dead else ""),
                       len(dead)))  # fmt: skip
        total = Annotation.objects.filter(item_stage__item__project__slug="soak").count()
        print(f"\nacknowledged submits {len(acknowledged)}, annotations stored {total}, "
              f"releases published {Release.objects.filter(status='published').count()}")  # fmt: skip
        self.print_log_errors()
        failures = []
        for name, value in checks:
            print(f"  {'ok  ' if value == 0 else 'FAIL'} {name}: {value}")
            if value:
                failures.append(name)
        for problem in self.log.problems[:5]:
            print(f"    {problem}")
        if failures:
            print(f"\nlogs kept in {self.work}")
            self.args.keep = True
        return failures

    def print_log_errors(self) -> None:
        """The exceptions each process logged (last line of each traceback), counted."""
        import re

        pattern = re.compile(r"^([\w.]+(?:Error|Exception|Shutdown|Exit)\b.*)$")
        for name in ("web", "worker", "beat"):
            path = self.work / f"{name}.log"
            counts: dict[str, int] = {}
            lines = path.read_text(errors="replace").splitlines() if path.exists() else []
            for line in lines:
                found = pattern.match(line)
                if found:
                    key = found.group(1)[:140]
                    counts[key] = counts.get(key, 0) + 1
            for key, n in sorted(counts.items(), key=lambda item: -item[1])[:6]:
                print(f"  {name} log: {n} × {key}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--annotators", type=int, default=64)
    parser.add_argument("--items", type=int, default=0, help="default: enough for the run")
    parser.add_argument("--think-min", type=float, default=0.3, help="seconds")
    parser.add_argument("--think-max", type=float, default=2.0, help="seconds")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--pool", default="prefork", help="the worker's pool")
    parser.add_argument("--concurrency", type=int, default=2, help="the worker's processes")
    parser.add_argument("--keep", action="store_true", help="keep the logs and data directory")
    args = parser.parse_args(argv)
    reason = processes.servers_available()
    if reason:
        print(f"soak: {reason}", file=sys.stderr)
        return 2
    soak = Soak(args)
    try:
        return soak.run()
    finally:
        soak.stop_all()


if __name__ == "__main__":
    sys.exit(main())
