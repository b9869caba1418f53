"""Time the historic ratings import (``ratings.historic.historic_ratings_import``) at scale.

    scripts/with-services.sh .venv/bin/python benchmarks/ratings_historic_scale.py \
        --ratings 100000 1000000 [--profile]

Uses the database of the current settings (DATABASE_URL; PostgreSQL is what it is for, since
the database's CPU is read from its backend's /proc entry, which needs a local server). For
each size it builds a ratings project with enough generated pairs (one item per connective and
order) for ten named raters per item, writes the ratings as a CSV (pair_id, order, connective,
rater, rating) in memory and imports it once, printing: ratings/s (wall), CPU per rating of
this process (rusage) and of the PostgreSQL backend (``/proc/<pg_backend_pid()>/stat``), the
process's peak RSS, and the load average beside each figure (the machine may be shared),
then the import's slowest statements, its commit among them.
``--profile`` prints the import's top functions by cumulative time. Each project is deleted
afterwards. ``--paths`` chooses the per-row path (the files of any form) and the bulk path
(``ratings.historic_bulk``, PostgreSQL), both by default, one after the other, in the order
given (a path may be named twice: ``--paths bulk-row-checks bulk bulk bulk-row-checks``).
``bulk-row-checks`` is the bulk path with PostgreSQL's per-row foreign-key checks, what it does
for a database user who may not set ``session_replication_role``
(``annotation.services.common.foreign_keys_checked_once``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
if not os.environ.get("DATABASE_URL"):
    os.environ.setdefault("SQLITE_PATH", str(Path(tempfile.mkdtemp()) / "bench.sqlite3"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from annotation.models import Annotation, Item, Project  # noqa: E402
from annotation.services import common  # noqa: E402
from ratings import historic, services  # noqa: E402

RATERS = 10
may_skip_row_checks = common.may_skip_row_checks
CLOCK = os.sysconf("SC_CLK_TCK")


def backend_cpu() -> float:
    """CPU seconds (user + system) of this connection's PostgreSQL backend; 0 elsewhere."""
    if connection.vendor != "postgresql":
        return 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def build(n_ratings: int) -> tuple[Project, bytes]:
    """A ratings project whose items take ``RATERS`` ratings each, and the ratings file."""
    slug = f"bench-historic-{n_ratings}"
    Project.objects.filter(slug=slug).delete()
    project = services.ratings_project_create(slug=slug, name=f"Historic {n_ratings:,}")
    n_items_wanted = -(-n_ratings // RATERS)
    pairs = io.StringIO()
    pairs.write("pair_id,sentence_a,sentence_b,subset,origin,flags\n")
    # The default connective set gives several items per pair; import one pair first to learn
    # how many, then the rest.
    services.pairs_import(
        project=project, content=pairs.getvalue() + "p0,A 0.,B 0.,causal,generated,\n",
        filename="pairs.csv",
    )  # fmt: skip
    per_pair = Item.objects.filter(project=project, purpose=Item.Purpose.REGULAR).count()
    n_pairs = -(-n_items_wanted // per_pair)
    for index in range(1, n_pairs):
        pairs.write(f"p{index},Sentence A {index}.,Sentence B {index}.,causal,generated,\n")
    services.pairs_import(project=project, content=pairs.getvalue(), filename="pairs2.csv")
    keys = list(
        Item.objects.filter(project=project, purpose=Item.Purpose.REGULAR)
        .order_by("pk")
        .values_list("external_id", flat=True)
    )
    out = io.StringIO()
    out.write("pair_id,order,connective,rater,rating\n")
    written = 0
    for rater in range(RATERS):
        for key in keys:
            if written == n_ratings:
                break
            pair_id, order, connective = key.split(":")
            out.write(f"{pair_id},{order},{connective},r{rater},{1 + (hash(key) + rater) % 7}\n")
            written += 1
    return project, out.getvalue().encode()


def run(n_ratings: int, profile: bool, path: str) -> None:
    bulk = path.startswith("bulk") and connection.vendor == "postgresql"
    historic._bulk_path = lambda: bulk  # type: ignore[method-assign]
    common.may_skip_row_checks = (  # type: ignore[method-assign]
        (lambda: False) if path == "bulk-row-checks" else may_skip_row_checks
    )
    project, content = build(n_ratings)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"-- {path}: {n_ratings:,} ratings ({len(content) / 1e6:.1f} MB CSV); peak RSS before the "
        f"import {before:,.0f} MiB; load {load()}"
    )
    profiler = cProfile.Profile() if profile else None
    cpu, db_cpu, wall = own_cpu(), backend_cpu(), time.perf_counter()
    if profiler:
        profiler.enable()
    slow: list[tuple[float, str]] = []

    def timed_statement(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            slow.append((time.perf_counter() - start, " ".join(str(sql).split())[:150]))

    try:
        # The import's own transaction inside this one, so that its commit (where PostgreSQL
        # runs the deferred foreign-key checks of every row written) is timed on its own.
        with transaction.atomic():
            with connection.execute_wrapper(timed_statement):
                stored = services.historic_ratings_import(
                    project=project, content=content, filename="historic.csv"
                )
            commit = time.perf_counter()
        slow.append((time.perf_counter() - commit, "COMMIT (deferred foreign-key checks)"))
    except Exception as error:  # the per-row path's limits are a result too
        print(f"   failed after {time.perf_counter() - wall:.1f} s: {error!r}; load {load()}")
        project.delete()
        return
    if profiler:
        profiler.disable()
    wall = time.perf_counter() - wall
    cpu, db_cpu = own_cpu() - cpu, backend_cpu() - db_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert stored == n_ratings
    assert Annotation.objects.filter(item_stage__item__project=project).count() == n_ratings
    print(
        f"   wall {wall:7.2f} s = {n_ratings / wall:9,.0f} ratings/s | CPU per rating: python "
        f"{cpu / n_ratings * 1e6:6.1f} µs, PostgreSQL {db_cpu / n_ratings * 1e6:6.1f} µs | "
        f"peak RSS {peak:,.0f} MiB | load {load()}"
    )
    for seconds, sql in sorted(slow, reverse=True)[:8]:
        print(f"      {seconds:6.2f} s  {sql}")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    project.delete()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ratings", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--paths", nargs="+", choices=["per-row", "bulk", "bulk-row-checks"],
        default=["per-row", "bulk"],
        help="the per-row path (ratings.importing, the engine's per-row historic import), the "
        "bulk path (ratings.historic_bulk) and the bulk path with per-row foreign-key checks, "
        "one after the other at each size, in the order given",
    )  # fmt: skip
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    print(f"database: {connection.vendor}")
    for n_ratings in options.ratings:
        for path in options.paths:
            run(n_ratings, options.profile, path)


if __name__ == "__main__":
    main()
