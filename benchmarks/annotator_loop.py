"""Annotator loop over HTTP: K simulated annotators loop next → submit against the web server as
deployed (granian, tests.processes.web_command; ``--server gunicorn`` for the one deployed before)
on PostgreSQL (loopback) for a fixed time. Prints annotations/s, request latency percentiles, SQL
statements per next+submit and the CPU each annotation cost in the web server, PostgreSQL
and the load generator (from /proc) for each K, then checks the engine's invariants.

    .venv/bin/python benchmarks/annotator_loop.py [--seconds 15] [--annotators 1,8,32]
        [--fast] [--reuse] [--explain-ms 20] [--repeat 3] [--client-processes N]

Each run is what a real study meets on its first minute: a **freshly created database** (migrated),
the items loaded **through the import path** users use (a JSON Lines file, imports.services), and
the crowd arriving at once; PostgreSQL runs with its **durable defaults** (fsync, synchronous
commit and full-page writes on). ``--fast`` uses the suite's throwaway settings (durability off)
instead, ``--reuse`` one database for every run. CPU per annotation counts processes that exited
during the run (PostgreSQL backends, web workers): a parent's ``cutime``/``cstime`` hold its
reaped children's CPU. ``--explain-ms N`` logs, through auto_explain, the plan of every statement
slower than N ms and prints them after each run.

The annotators are threads of this process up to 64 of them; more (``--annotators 256``) are
spread over several client processes (``--client-processes``, default one per 64 annotators),
because one Python process's threads share one core's worth of interpreter time and would become
the limit before the server. Their latencies are merged (the percentiles are over every sample of
every process) and the load generator's CPU is this process's plus its client processes'.

Run without DATABASE_URL it re-runs itself under scripts/with-services.sh. Not a test: it
prints figures; the invariants it checks are also asserted by tests/annotation/test_concurrency.py.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid: int, *, reaped: bool = False) -> float:
    """User + system CPU of a process (0 when it has gone); with ``reaped`` also the CPU of its
    children that exited and were waited for (cutime + cstime), so that a tree's total never
    goes down when a child exits."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    if reaped:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float:
    """CPU of a process tree that only grows: the root with its reaped children, plus every
    live descendant with theirs."""
    total, pending = 0.0, [root]
    while pending:
        pid = pending.pop()
        total += cpu_seconds(pid, reaped=True)
        pending.extend(children(pid))
    return total


def children(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == parent:
                        found.append(int(entry))
            except OSError:
                continue
    return found


def cpu_by_part(server_pid: int) -> dict[str, float]:
    """CPU seconds used so far by the web server (its workers), the database (every
    PostgreSQL process) and this load generator: where each annotation's CPU goes."""
    web = tree_cpu(server_pid)
    database = 0.0
    data = os.environ.get("RUNGWISE_PG_DATA")
    if data and os.path.exists(f"{data}/postmaster.pid"):
        with open(f"{data}/postmaster.pid") as handle:
            postmaster = int(handle.readline())
        database = tree_cpu(postmaster)
    return {"web": web, "database": database, "client": time.process_time()}


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far (/proc/stat): whether a run kept
    the cores busy or left them waiting."""
    with open("/proc/stat") as handle:
        fields = [int(value) for value in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def fresh_database(name: str) -> str:
    """Create an empty database ``name`` beside the current one, point Django's default
    connection at it and migrate it; returns its URL (for the web server)."""
    from django.core.management import call_command
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    connection.close()
    connection.settings_dict["NAME"] = name
    call_command("migrate", verbosity=0)
    base = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
    return f"{base}/{name}"


def setup_project(k_annotators: int, items: int, overlap: int, via: str = "import"):
    import io

    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation import services
    from imports.services import import_batch_create, import_batch_run

    stamp = f"{k_annotators}-{int(time.time() * 1000)}"
    project = services.project_create(slug=f"bench-{stamp}", name=f"Bench {stamp}")
    stage = services.stage_create(
        project=project, slug="verify", name="Verify", kind="verify", overlap=overlap
    )
    if via == "create":
        # The service alone (no ANALYZE afterwards): the statistics arrive when autovacuum
        # gets to them.
        services.items_create(
            project=project,
            rows=(
                {"external_id": f"b{index}", "payload": {"text": f"item {index}"}}
                for index in range(items)
            ),
        )
    else:
        lines = "".join(
            json.dumps({"id": f"b{index}", "text": f"item {index}"}) + "\n"
            for index in range(items)
        )
        batch = import_batch_create(
            project=project,
            user=None,
            fileobj=io.BytesIO(lines.encode()),
            filename="bench.jsonl",
        )
        batch = import_batch_run(batch_id=batch.pk)
        assert batch.status == "succeeded", batch.message
    tokens = []
    User = get_user_model()
    for index in range(k_annotators):
        user = User.objects.create_user(username=f"bench-{stamp}-{index}")
        services.membership_add(project=project, user=user, role="annotator")
        tokens.append(Token.objects.create(user=user).key)
    return stage, tokens


def annotator(
    port: int,
    token: str,
    stage_id: int,
    deadline: float,
    out: dict,
    think: float = 0.0,
    loop: str = "next-submit",
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    latencies, statements, submitted, errors = [], [], 0, 0
    if loop == "submit-next":
        _submit_next_loop(conn, headers, stage_id, deadline, think, latencies, statements)
        submitted = len(statements)
        conn.close()
        out.update(latencies=latencies, statements=statements, submitted=submitted, errors=0)
        return
    while time.monotonic() < deadline:
        started = time.perf_counter()
        conn.request("POST", f"/api/stages/{stage_id}/next/", body=b"", headers=headers)
        response = conn.getresponse()
        body = response.read()
        latencies.append(time.perf_counter() - started)
        next_statements = int(response.getheader("X-SQL-Statements", "-1"))
        if response.status == 204:
            break
        if response.status != 200:
            errors += 1
            continue
        assignment = json.loads(body)["id"]
        if think:
            time.sleep(think)  # reading the item
        payload = json.dumps({"payload": {"value": "keep"}, "seconds_spent": 3.2}).encode()
        started = time.perf_counter()
        conn.request(
            "POST", f"/api/assignments/{assignment}/submit/", body=payload, headers=headers
        )
        response = conn.getresponse()
        response.read()
        latencies.append(time.perf_counter() - started)
        if response.status == 201:
            submitted += 1
            statements.append(next_statements + int(response.getheader("X-SQL-Statements", "-1")))
        else:
            errors += 1
    conn.close()
    out.update(latencies=latencies, statements=statements, submitted=submitted, errors=errors)


def _submit_next_loop(conn, headers, stage_id, deadline, think, latencies, statements) -> None:
    """One request per item: each submit carries ``"next": true`` and returns the next lease
    (as the browser's item screen does), after one next/ to start."""
    started = time.perf_counter()
    conn.request("POST", f"/api/stages/{stage_id}/next/", body=b"", headers=headers)
    response = conn.getresponse()
    body = response.read()
    latencies.append(time.perf_counter() - started)
    assignment = json.loads(body) if response.status == 200 else None
    while assignment is not None and time.monotonic() < deadline:
        if think:
            time.sleep(think)
        payload = json.dumps(
            {"payload": {"value": "keep"}, "seconds_spent": 3.2, "next": True}
        ).encode()
        started = time.perf_counter()
        conn.request(
            "POST", f"/api/assignments/{assignment['id']}/submit/", body=payload, headers=headers
        )
        response = conn.getresponse()
        body = response.read()
        latencies.append(time.perf_counter() - started)
        if response.status != 201:
            raise RuntimeError(f"submit answered {response.status}: {body[:200]!r}")
        statements.append(int(response.getheader("X-SQL-Statements", "-1")))
        assignment = json.loads(body)["next"]


def cpu_split(before: dict[str, float], after: dict[str, float], annotations: int) -> str:
    """CPU ms per annotation of each part, from two cpu_by_part readings (``after`` may carry
    the client processes' CPU already added to its ``client``)."""
    if not annotations:
        return "-"
    parts = {name: (after[name] - before[name]) * 1000 / annotations for name in before}
    return " ".join(f"{name} {value:.1f}" for name, value in parts.items())


def check_invariants(stage) -> str:
    from django.db.models import Count, F

    from annotation.models import Annotation, ItemStage

    over = (
        ItemStage.objects.filter(stage=stage)
        .annotate(n=Count("annotations"))
        .filter(n__gt=stage.overlap)
    )
    doubled = (
        Annotation.objects.filter(item_stage__stage=stage)
        .values("item_stage_id", "annotator_id")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    counters = (
        ItemStage.objects.filter(stage=stage)
        .annotate(n=Count("annotations"))
        .exclude(n=F("submitted_count"))
    )
    problems = []
    if over.exists():
        problems.append(f"{over.count()} items over overlap")
    if doubled.exists():
        problems.append(f"{doubled.count()} doubled annotations")
    if counters.exists():
        problems.append("counters disagree with rows")
    return "ok" if not problems else "; ".join(problems)


def listeners(port: int) -> int:
    """How many sockets listen on 127.0.0.1:``port`` (/proc/net/tcp, state 0A)."""
    with open("/proc/net/tcp") as handle:
        next(handle)
        return sum(
            1
            for line in handle
            if line.split()[1].endswith(f":{port:04X}") and line.split()[3] == "0A"
        )


def start_server(args, database_url: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        PYTHONWARNINGS="ignore::UserWarning",
        RUNGWISE_QUERY_COUNT_HEADER="1",
        ALLOWED_HOSTS="127.0.0.1",
        RUNGWISE_THROTTLE_SUBMIT="off",  # measure the loop, not the throttle
    )
    if args.server == "granian":
        from tests.processes import web_command

        command = web_command(port, workers=args.workers, threads=args.threads)
    else:
        command = [
            sys.executable, "-m", "gunicorn", "rungwise.wsgi", "-b", f"127.0.0.1:{port}",
            "--workers", str(args.workers), "--threads", str(args.threads), "--preload",
            "--log-level", "warning",
        ]  # fmt: skip
    server = subprocess.Popen(command, cwd=REPO, env=env)
    # granian's workers each open their own listening socket (SO_REUSEPORT) once they have
    # imported the application; gunicorn's master has one. Connections made while only the
    # first worker listens all stay on it (keep-alive): the run would measure one worker.
    wanted = args.workers if args.server == "granian" else 1
    for _ in range(600):
        if listeners(port) >= wanted:
            break
        time.sleep(0.1)

    # Warm every worker up (the app loaded, a database connection open) before the clock
    # starts: parallel health checks until each answers quickly.
    def probe() -> float:
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        conn.close()
        return time.perf_counter() - started

    def probe_into(found: list[float]) -> None:
        try:
            found.append(probe())
        except OSError:  # not listening yet, or a worker restarting: the next round retries
            pass

    answered = False
    for _ in range(20):
        timings: list[float] = []
        probes = [
            threading.Thread(target=probe_into, args=(timings,)) for _ in range(args.workers * 2)
        ]
        for thread in probes:
            thread.start()
        for thread in probes:
            thread.join()
        answered = answered or bool(timings)
        if len(timings) == len(probes) and max(timings) < 0.25:
            break
        if not timings:
            time.sleep(1)
    if not answered:
        server.terminate()
        sys.exit(f"the web server on port {port} never answered /healthz (a loaded machine?)")
    return server, port


def slow_plans(log_path: Path, start_offset: int, limit: int = 6) -> list[str]:
    """The auto_explain entries the server log gained since ``start_offset``: the slowest
    ``limit`` statements with their plans, one text block each."""
    if not log_path.exists():
        return []
    with open(log_path, errors="replace") as handle:
        handle.seek(start_offset)
        text = handle.read()
    entries = []
    for block in text.split("LOG:  duration: ")[1:]:
        head = block.split(" ms", 1)[0]
        try:
            entries.append((float(head), "duration: " + block.strip()[:2500]))
        except ValueError:
            continue
    entries.sort(key=lambda entry: -entry[0])
    seen, chosen = set(), []
    for _, entry in entries:
        query = entry.split("Query Text:", 1)[-1].split("\n", 1)[0][:120]
        if query in seen:
            continue
        seen.add(query)
        chosen.append(entry)
        if len(chosen) == limit:
            break
    return chosen


def run_once(args, k: int, run_name: str) -> dict:
    """One run of K annotators; returns its figures."""
    from django.db import connection

    from annotation.models import Annotation

    database_url = os.environ["DATABASE_URL"]
    home = connection.settings_dict["NAME"]
    if not args.reuse:
        database_url = fresh_database(run_name)
    if args.explain_ms is not None:
        with connection.cursor() as cursor:
            cursor.execute(
                f'ALTER DATABASE "{connection.settings_dict["NAME"]}" SET '
                f"auto_explain.log_min_duration = {int(args.explain_ms)}"
            )
            cursor.execute(
                f'ALTER DATABASE "{connection.settings_dict["NAME"]}" SET '
                "auto_explain.log_analyze = on"
            )
    stage, tokens = setup_project(
        k, items=max(2000, int(400 * args.seconds * 3)), overlap=3, via=args.items_via
    )
    server, port = start_server(args, database_url)
    log_path = Path(os.environ.get("RUNGWISE_SERVICES_DIR", "/nonexistent")) / "pg/server.log"
    log_offset = log_path.stat().st_size if log_path.exists() else 0
    processes = client_processes(args, k)
    if processes > 1:
        connection.close()  # not carried into the forked clients (reopened after the run)
    try:
        cpu_before, ticks_before = cpu_by_part(server.pid), machine_ticks()
        started = time.monotonic()
        deadline = started + args.seconds
        results, clients_cpu = drive(args, port, tokens, stage.pk, deadline, processes)
        elapsed = time.monotonic() - started
        cpu_after, ticks_after = cpu_by_part(server.pid), machine_ticks()
        cpu_after["client"] += clients_cpu
    finally:
        server.terminate()
        server.wait(timeout=20)
    latencies = [value * 1000 for result in results for value in result["latencies"]]
    submitted = sum(result["submitted"] for result in results)
    statements = [value for result in results for value in result["statements"]]
    stored = Annotation.objects.filter(item_stage__stage=stage).count()
    assert stored == submitted, f"{submitted} submits answered 201 but {stored} stored"
    invariants = check_invariants(stage)
    plans = slow_plans(log_path, log_offset) if args.explain_ms is not None else []
    if not args.reuse:
        # Dropped once measured: otherwise autovacuum analyses this run's tables during the
        # next run, on the same two cores.
        connection.close()
        connection.settings_dict["NAME"] = home
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE "{run_name}"')
    return {
        "k": k,
        "rate": submitted / elapsed,
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
        "p99": percentile(latencies, 99),
        "statements": max(statements) if statements else -1,
        "errors": sum(result["errors"] for result in results),
        "cpu": cpu_split(cpu_before, cpu_after, submitted),
        "busy": 100 * (ticks_after[0] - ticks_before[0]) / max(ticks_after[1] - ticks_before[1], 1),
        "spread": (
            min(result["submitted"] for result in results),
            max(result["submitted"] for result in results),
        ),
        "invariants": invariants,
        "plans": plans,
        "client_processes": processes,
    }


def client_processes(args, k: int) -> int:
    """How many processes drive K annotators: ``--client-processes``, or one per 64."""
    if args.client_processes:
        return max(1, min(args.client_processes, k))
    return max(1, math.ceil(k / 64))


def drive_threads(args, port: int, tokens: list[str], stage_id: int, deadline: float) -> list:
    """One thread per token in this process, each an annotator (annotator()); returns their
    results once every one has stopped at ``deadline``."""
    results: list[dict] = [dict() for _ in tokens]

    def run(token: str, out: dict) -> None:
        try:
            annotator(port, token, stage_id, deadline, out, args.think_ms / 1000, args.loop)
        except Exception as error:  # a connection the server dropped: counted, not fatal
            out.setdefault("latencies", [])
            out.setdefault("statements", [])
            out.setdefault("submitted", 0)
            out["errors"] = out.get("errors", 0) + 1
            print(f"annotator stopped: {error!r}", file=sys.stderr)

    threads = [
        threading.Thread(target=run, args=(token, result))
        for token, result in zip(tokens, results, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _client_process(args, port, tokens, stage_id, deadline, outbox) -> None:
    """A forked client process: its share of the annotators as threads, then its results and
    the CPU it used (a forked process's clock starts at zero) sent to the parent."""
    try:
        results = drive_threads(args, port, tokens, stage_id, deadline)
        outbox.send((results, time.process_time(), None))
    except BaseException as error:  # the parent reports it instead of waiting forever
        outbox.send(([], time.process_time(), repr(error)))
    finally:
        outbox.close()


def drive(
    args, port: int, tokens: list[str], stage_id: int, deadline: float, processes: int
) -> tuple[list[dict], float]:
    """Run the annotators until ``deadline``: as threads of this process, or spread round-robin
    over ``processes`` forked client processes. Returns every annotator's results and the CPU
    seconds the client processes used (0 when there were none: this process's own CPU is in
    cpu_by_part)."""
    if processes == 1:
        return drive_threads(args, port, tokens, stage_id, deadline), 0.0
    context = multiprocessing.get_context("fork")
    pipes, workers = [], []
    for index in range(processes):
        receiver, sender = context.Pipe(duplex=False)
        worker = context.Process(
            target=_client_process,
            args=(args, port, tokens[index::processes], stage_id, deadline, sender),
        )
        worker.start()
        sender.close()
        pipes.append(receiver)
        workers.append(worker)
    results: list[dict] = []
    used, failures = 0.0, []
    for receiver in pipes:
        found, seconds, failure = receiver.recv()
        results.extend(found)
        used += seconds
        if failure:
            failures.append(failure)
    for worker in workers:
        worker.join()
    if failures:
        raise RuntimeError(f"client processes failed: {failures}")
    return results, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--annotators", default="1,8,32")
    parser.add_argument(
        "--workers", type=int, default=2, help="web server processes (2 as deployed)"
    )
    parser.add_argument(
        "--threads", type=int, default=4, help="threads per worker process (4 as deployed)"
    )
    parser.add_argument(
        "--server",
        choices=("granian", "gunicorn"),
        default="granian",
        help="the WSGI server (granian as deployed; gunicorn, sync workers with --preload: the "
        "one deployed before, for comparison)",
    )
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0,
        help="each annotator's pause between getting an item and submitting it (default: none)",
    )
    parser.add_argument(
        "--fast", action="store_true", help="PostgreSQL with durability off (the test suite's)"
    )
    parser.add_argument("--reuse", action="store_true", help="one database for every run")
    parser.add_argument(
        "--loop",
        choices=("next-submit", "submit-next"),
        default="next-submit",
        help="two requests per item (next, then submit), or one (submit with next: true, as "
        "the item screen does)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per K")
    parser.add_argument(
        "--record",
        type=Path,
        help="append each run's figures as a JSON line to this file (benchmarks/plot_loop.py "
        "draws them)",
    )
    parser.add_argument(
        "--items-via",
        choices=("import", "create"),
        default="import",
        help="load items through the import (default) or items_create alone (no ANALYZE)",
    )
    parser.add_argument(
        "--explain-ms", type=float, default=None, help="log plans of statements slower than this"
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        default=0,
        help="processes the annotators are spread over (default: one per 64 annotators; 1: "
        "threads of this process only)",
    )
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        env = dict(os.environ, RUNGWISE_PG_DURABLE="0" if args.fast else "1")
        os.execvpe(
            str(REPO / "scripts/with-services.sh"),
            [str(REPO / "scripts/with-services.sh"), sys.executable, *sys.argv],
            env,
        )

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SHOW fsync")
        fsync = cursor.fetchone()[0]
        cursor.execute("SHOW synchronous_commit")
        sync = cursor.fetchone()[0]
    print(
        f"{args.server}: {args.workers} workers × {args.threads} threads; PostgreSQL "
        f"{connection.pg_version // 10000} (fsync {fsync}, synchronous_commit {sync}); "
        f"{os.cpu_count()} cores; {args.seconds:.0f} s per run; think time {args.think_ms:.0f} ms; "
        + ("one database reused" if args.reuse else "a fresh database per run")
        + f", items loaded via {args.items_via}; loop {args.loop}; "
        + "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    )
    print(
        f"{'K':>3} {'annotations/s':>14} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'SQL/next+submit':>16} {'errors':>7}  {'CPU ms per annotation':<30} "
        f"{'busy':>5} {'each':>9}  invariants"
    )
    stamp = int(time.time())
    for k in (int(part) for part in args.annotators.split(",")):
        for repeat in range(args.repeat):
            row = run_once(args, k, f"bench_{stamp}_{k}_{repeat}")
            print(
                f"{row['k']:>3} {row['rate']:>14.1f} {row['p50']:>8.1f} {row['p95']:>8.1f} "
                f"{row['p99']:>8.1f} {row['statements']:>16} {row['errors']:>7}  "
                f"{row['cpu']:<30} {row['busy']:>4.0f}% "
                f"{row['spread'][0]:>4}–{row['spread'][1]:<4} {row['invariants']}"
                f"  (clients in {row['client_processes']} process(es); load average "
                + f"{os.getloadavg()[0]:.1f})",
                flush=True,
            )
            if args.record:
                with args.record.open("a") as handle:
                    settings = {"server": args.server, "workers": args.workers,
                                "threads": args.threads, "fsync": fsync, "loop": args.loop,
                                "items_via": args.items_via, "series": stamp}  # fmt: skip
                    figures = {key: value for key, value in row.items() if key != "plans"}
                    handle.write(json.dumps({**settings, **figures, "at": time.time()}) + "\n")
            for plan in row["plans"]:
                print("    " + plan.replace("\n", "\n    "))


if __name__ == "__main__":
    main()
