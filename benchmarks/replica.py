"""Researchers' pages off the primary: does a read replica help the annotators?

    scripts/with-services.sh .venv/bin/python benchmarks/replica.py [--seconds 60]
        [--annotators 16] [--researchers 2] [--rounds 1] [--data-dir /var/tmp/bench-rp]

On benchmarks/pages_scale.py's database (300,000 items, about 1,000,000 annotations; build it
there first, or copy its ``--data-dir``, ``/var/tmp/rungwise-bench-pages``, to this one's), a
streaming replica of that cluster is made (``pg_basebackup -R``, started on another port), then,
for each mode, the web server as deployed (granian, ``--workers`` processes) serves at once:

* ``--annotators`` annotators looping next → submit over the API on a project of their own
  (benchmarks/annotator_loop.py's loop, overlap 1, no think time);
* ``--researchers`` researchers looping over the pages marked to read from the replica
  (rungwise/replica.py): the Agreement tab, a stage's page and disagreement list, the Items tab
  with a filter, without pause.

Modes: ``primary`` (no ``RUNGWISE_REPLICA_URL``) and ``replica`` (set, bound 30 s), alternated
``--rounds`` times. It prints, per mode: annotations per second, the annotators' request p50 /
p95, the pages' p50 / p95, the share of pages read from the replica, and the CPU-seconds of the
primary's PostgreSQL, the replica's and the web server per second of the run (from /proc), with
the load average before and after. On one machine both PostgreSQL servers share its cores, so the
replica can only move work, not add capacity: the figure that carries to separate hosts is the
primary's CPU per page in each mode. Not a test: it prints figures (CONTRIBUTING.md,
"Benchmarks are scripts").
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")

from benchmarks.annotator_loop import annotator, percentile, setup_project, start_server, tree_cpu  # noqa: E402

#: Items of each run's annotator project: more than --annotators can finish in a run.
ITEMS_PER_RUN = 12_000
REPLICA_MAX_LAG = "30"


def load_average() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def postmaster(cluster) -> int:
    """The PostgreSQL server's process id (the first line of postmaster.pid)."""
    with open(cluster.data / "postmaster.pid") as handle:
        return int(handle.readline())


def start_standby(primary, directory: Path):
    """A hot standby of ``primary`` (a tests.processes.Postgres) in ``directory``, copied anew
    (``pg_basebackup -R``: it streams from the primary from then on) and started."""
    from tests.processes import Postgres

    standby = Postgres(directory=directory)
    if standby.directory.exists():
        if (standby.data / "postmaster.pid").exists():
            standby.stop("immediate")
        shutil.rmtree(standby.directory)
    standby.directory.mkdir(parents=True)
    if standby.as_postgres:
        shutil.chown(standby.directory, "postgres", "postgres")
    standby._run(
        str(standby.bin / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
        "-U", "postgres", "-D", str(standby.data), "-R", "-X", "stream", "-c", "fast",
    )  # fmt: skip
    standby.start()  # the primary's options: max_connections as high, as a standby needs
    return standby


def research_pages(slug: str) -> list[str]:
    """The marked pages the researchers loop over."""
    from annotation.models import Project

    project = Project.objects.get(slug=slug)
    stage = project.stages.order_by("position")[1]
    base = f"/projects/{slug}/agreement/{stage.slug}/"
    items = f"/projects/{slug}/items/"
    return [
        f"/projects/{slug}/agreement/",
        base,
        base + "disagreements/",
        items,
        items + "?" + urlencode({"state": "resolved", "stage": stage.slug}),
        items + "?" + urlencode({"disagreement": "on"}),
    ]


def researcher(
    port: int, cookie: str, paths: list[str], deadline: float, out: dict, start: int
) -> None:
    latencies, from_replica, errors = [], 0, 0
    index = start  # researchers start on different pages
    while time.monotonic() < deadline:
        path = paths[index % len(paths)]
        index += 1
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        started = time.perf_counter()
        conn.request("GET", path, headers={"Cookie": cookie})
        response = conn.getresponse()
        body = response.read()
        latencies.append(time.perf_counter() - started)
        conn.close()
        if response.status != 200:
            errors += 1
        from_replica += b'id="replica-note"' in body
    out.update(latencies=latencies, from_replica=from_replica, errors=errors)


def run(args, mode: str, primary, standby, database_url: str, cookie: str, paths) -> dict:
    """One mode for ``args.seconds``: annotators and researchers together; its figures."""
    from django.db import connection

    stage, tokens = setup_project(args.annotators, items=ITEMS_PER_RUN, overlap=1, via="create")
    connection.close()
    if mode == "replica":
        replica_url = database_url.replace(f":{primary.port}/", f":{standby.port}/")
        os.environ.update(
            RUNGWISE_REPLICA_URL=replica_url, RUNGWISE_REPLICA_MAX_LAG=REPLICA_MAX_LAG
        )
    else:
        os.environ.pop("RUNGWISE_REPLICA_URL", None)
    server, port = start_server(args, database_url)
    os.environ.pop("RUNGWISE_REPLICA_URL", None)
    try:
        deadline = time.monotonic() + args.seconds
        annotators = [{} for _ in tokens]
        researchers = [{} for _ in range(args.researchers)]
        threads = [
            threading.Thread(target=annotator, args=(port, token, stage.pk, deadline, out))
            for token, out in zip(tokens, annotators, strict=True)
        ] + [
            threading.Thread(target=researcher, args=(port, cookie, paths, deadline, out, number))
            for number, out in enumerate(researchers)
        ]
        load_before = load_average()
        cpu_before = [tree_cpu(postmaster(primary)), tree_cpu(postmaster(standby))]
        web_before = tree_cpu(server.pid)
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        cpu_after = [tree_cpu(postmaster(primary)), tree_cpu(postmaster(standby))]
        web_cpu = tree_cpu(server.pid) - web_before
    finally:
        server.terminate()
        server.wait(timeout=30)
    annotator_ms = [value * 1000 for out in annotators for value in out["latencies"]]
    page_ms = [value * 1000 for out in researchers for value in out["latencies"]]
    pages = len(page_ms)
    return {
        "mode": mode,
        "rate": sum(out["submitted"] for out in annotators) / elapsed,
        "annotator p50": percentile(annotator_ms, 50),
        "annotator p95": percentile(annotator_ms, 95),
        "pages": pages,
        "page p50": percentile(page_ms, 50),
        "page p95": percentile(page_ms, 95),
        "from replica": sum(out["from_replica"] for out in researchers) / max(pages, 1),
        "errors": sum(out["errors"] for out in annotators + researchers),
        "primary cpu/s": (cpu_after[0] - cpu_before[0]) / elapsed,
        "replica cpu/s": (cpu_after[1] - cpu_before[1]) / elapsed,
        "web cpu/s": web_cpu / elapsed,
        "load": f"{load_before} → {load_average()}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--annotators", type=int, default=16)
    parser.add_argument("--researchers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1, help="primary, replica: this many times")
    parser.add_argument("--workers", type=int, default=2, help="web server processes")
    parser.add_argument("--threads", type=int, default=4, help="blocking threads per process")
    parser.add_argument("--small", action="store_true", help="pages_scale.py's --small database")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default="/var/tmp/bench-rp")
    parser.add_argument("--only", default="", help="only the pages whose path contains this")
    args = parser.parse_args()
    args.server = "granian"
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL database (run under scripts/with-services.sh).")
    import django

    django.setup()
    from benchmarks.pages_scale import FULL, SLUG, SMALL, session_cookie, use_database

    scale = SMALL if args.small else FULL
    data_dir = Path(args.data_dir)
    primary, database_url = use_database(f"bench_pages_{scale.name}_{args.seed}", data_dir)
    standby = None
    try:
        from django.core.management import call_command

        from annotation.models import Project

        call_command("migrate", verbosity=0)  # a copied database may predate this checkout
        if not Project.objects.filter(slug=SLUG, description="complete").exists():
            sys.exit(f"No built pages_scale.py database in {data_dir}: build or copy one first.")
        cookie = session_cookie()
        paths = [path for path in research_pages(SLUG) if args.only in path]
        # As the image is built (Dockerfile): the pages name their static files by hash.
        os.environ["STATIC_ROOT"] = str(data_dir / "static-replica")
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=REPO,
            check=True,
        )
        print(f"making the replica (pg_basebackup; load average {load_average()})", flush=True)
        started = time.monotonic()
        standby = start_standby(primary, data_dir / "standby")
        print(f"replica ready in {time.monotonic() - started:.0f} s", flush=True)
        results = []
        for _ in range(args.rounds):
            for mode in ("primary", "replica"):
                results.append(run(args, mode, primary, standby, database_url, cookie, paths))
                print(results[-1], flush=True)
        columns = [
            ("mode", "{:<8}"), ("rate", "{:>7.1f}"), ("annotator p50", "{:>8.0f}"),
            ("annotator p95", "{:>8.0f}"), ("pages", "{:>6}"), ("page p50", "{:>8.0f}"),
            ("page p95", "{:>8.0f}"), ("from replica", "{:>8.0%}"), ("errors", "{:>6}"),
            ("primary cpu/s", "{:>8.2f}"), ("replica cpu/s", "{:>8.2f}"),
            ("web cpu/s", "{:>8.2f}"),
        ]  # fmt: skip
        print(
            f"\n{args.annotators} annotators, {args.researchers} researchers, {args.seconds:.0f} s "
            f"a run, {scale.name} pages database; latencies in ms, CPU in CPU-seconds per second"
        )
        print("  ".join(name for name, _ in columns) + "  load average (before → after)")
        for result in results:
            print(
                "  ".join(form.format(result[name]) for name, form in columns)
                + f"  {result['load']}"
            )
    finally:
        from django.db import connection

        connection.close()
        if standby is not None:
            standby.remove()
        primary.stop()


if __name__ == "__main__":
    main()
