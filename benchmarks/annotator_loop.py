"""Annotator loop over HTTP: K simulated annotators loop next → submit against gunicorn on
PostgreSQL (loopback) for a fixed time. Prints annotations/s, request latency percentiles, SQL
statements per next+submit and the CPU each annotation cost in gunicorn's workers, PostgreSQL
and the load generator (from /proc) for each K, then checks the engine's invariants.

    scripts/with-services.sh .venv/bin/python benchmarks/annotator_loop.py [--seconds 15]

Run without DATABASE_URL it re-runs itself under scripts/with-services.sh. Not a test: it
prints figures; the invariants it checks are also asserted by tests/annotation/test_concurrency.py.
"""

from __future__ import annotations

import argparse
import http.client
import json
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (0 when it has gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    """CPU seconds used so far by the web server (gunicorn's workers), the database (every
    PostgreSQL process) and this load generator: where each annotation's CPU goes."""
    web = sum(cpu_seconds(pid) for pid in [server_pid, *children(server_pid)])
    database = 0.0
    data = os.environ.get("RUNGWISE_PG_DATA")
    if data and os.path.exists(f"{data}/postmaster.pid"):
        with open(f"{data}/postmaster.pid") as handle:
            postmaster = int(handle.readline())
        database = sum(cpu_seconds(pid) for pid in [postmaster, *children(postmaster)])
    return {"web": web, "database": database, "client": time.process_time()}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def setup_project(k_annotators: int, items: int, overlap: int):
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation import services

    stamp = f"{k_annotators}-{int(time.time() * 1000)}"
    project = services.project_create(slug=f"bench-{stamp}", name=f"Bench {stamp}")
    stage = services.stage_create(
        project=project, slug="verify", name="Verify", kind="verify", overlap=overlap
    )
    services.items_create(
        project=project,
        rows=(
            {"external_id": f"b{index}", "payload": {"text": f"item {index}"}}
            for index in range(items)
        ),
    )
    tokens = []
    User = get_user_model()
    for index in range(k_annotators):
        user = User.objects.create_user(username=f"bench-{stamp}-{index}")
        services.membership_add(project=project, user=user, role="annotator")
        tokens.append(Token.objects.create(user=user).key)
    return stage, tokens


def annotator(
    port: int, token: str, stage_id: int, deadline: float, out: dict, think: float = 0.0
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    latencies, statements, submitted, errors = [], [], 0, 0
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


def cpu_split(before: dict[str, float], after: dict[str, float], annotations: int) -> str:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--annotators", default="1,8,32")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker")
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0,
        help="each annotator's pause between getting an item and submitting it (default: none)",
    )
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        os.execvp(
            str(REPO / "scripts/with-services.sh"),
            [str(REPO / "scripts/with-services.sh"), sys.executable, *sys.argv],
        )

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Annotation

    call_command("migrate", verbosity=0)
    port = free_port()
    env = dict(
        os.environ,
        RUNGWISE_QUERY_COUNT_HEADER="1",
        ALLOWED_HOSTS="127.0.0.1",
        RUNGWISE_THROTTLE_SUBMIT="off",
    )  # measure the loop, not the throttle
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "rungwise.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "--workers",
            str(args.workers),
            "--threads",
            str(args.threads),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        print(
            f"gunicorn: {args.workers} workers × {args.threads} threads; PostgreSQL "
            f"{connection.pg_version // 10000}; {os.cpu_count()} cores; {args.seconds:.0f} s per run; "
            f"think time {args.think_ms:.0f} ms"
        )
        print(
            f"{'K':>3} {'annotations/s':>14} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
            f"{'SQL/next+submit':>16} {'errors':>7}  {'CPU ms per annotation':<30} invariants"
        )
        for k in (int(part) for part in args.annotators.split(",")):
            stage, tokens = setup_project(
                k, items=max(2000, int(400 * args.seconds * 3)), overlap=3
            )
            results = [dict() for _ in tokens]
            deadline = time.monotonic() + args.seconds
            started = time.monotonic()
            threads = [
                threading.Thread(
                    target=annotator,
                    args=(port, token, stage.pk, deadline, result, args.think_ms / 1000),
                )
                for token, result in zip(tokens, results, strict=True)
            ]
            cpu_before = cpu_by_part(server.pid)
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - started
            cpu_after = cpu_by_part(server.pid)
            latencies = [value * 1000 for result in results for value in result["latencies"]]
            submitted = sum(result["submitted"] for result in results)
            statements = [value for result in results for value in result["statements"]]
            stored = Annotation.objects.filter(item_stage__stage=stage).count()
            assert stored == submitted, f"{submitted} submits answered 201 but {stored} stored"
            print(
                f"{k:>3} {submitted / elapsed:>14.1f} {percentile(latencies, 50):>8.1f} "
                f"{percentile(latencies, 95):>8.1f} {percentile(latencies, 99):>8.1f} "
                f"{(max(statements) if statements else -1):>16} "
                f"{sum(result['errors'] for result in results):>7}  "
                + f"{cpu_split(cpu_before, cpu_after, submitted):<30} "
                + check_invariants(stage),
                flush=True,
            )
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
