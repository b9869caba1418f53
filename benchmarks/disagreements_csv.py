"""A stage's disagreements.csv written by PostgreSQL (agreement/disagreements_sql.py), another
checkout's writer against this one's, in one run, on ``pages_scale.py``'s database.

    scripts/with-services.sh .venv/bin/python benchmarks/disagreements_csv.py
        --data-dir /var/tmp/bench-copy [--stages check,label,screen] [--show split]
        [--before /path/to/another/checkout] [--repeat 2] [--explain]

For each stage, each writer (``--before``'s ``agreement/disagreements_sql.py``, then this
checkout's) reads the whole file ``--repeat`` times, alternating, and prints the time to the
first block of lines (the response's header goes out before it, so this is when the first
data line could), the whole file, the characters read and the PostgreSQL cluster's CPU
(every backend and parallel worker, from ``/proc``; the fair figure on a shared machine), with
the load average. ``--explain`` prints this checkout's plan as its cursor is planned (EXPLAIN
DECLARE). Use a copy of the benchmark's cluster (``cp -a``): the run starts it. Not a test: it
prints figures (CONTRIBUTING.md, "Benchmarks are scripts").
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")


def _writer(checkout: Path, name: str) -> ModuleType:
    path = checkout / "agreement" / "disagreements_sql.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(module: ModuleType, stage, show: str) -> tuple[float, float, int]:
    """(seconds to the first block, seconds to the end, characters) of one whole file."""
    statement, params, using = module.disagreement_csv_statement(stage, show)
    # The writer's own reader: a COPY (older checkouts) or a server-side cursor.
    reader = getattr(module, "_fetched", None) or module._copied
    started = time.perf_counter()
    first, size = None, 0
    for block in reader(statement, params, using):
        if first is None:
            first = time.perf_counter() - started
        size += len(block)
    total = time.perf_counter() - started
    return (first if first is not None else total), total, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--stages", default="check,label,screen")
    parser.add_argument("--show", default="split")
    parser.add_argument("--before", default="/work/main", help="the other checkout")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()
    import django

    django.setup()
    from django.db import connection, transaction

    from annotation.models import Stage
    from benchmarks.pages_scale import SLUG, load_average, tree_cpu_seconds, use_database

    writers = [
        ("before", _writer(Path(args.before), "disagreements_sql_before")),
        ("after", _writer(REPO, "disagreements_sql_after")),
    ]
    cluster, _ = use_database(f"bench_pages_full_{args.seed}", Path(args.data_dir))
    try:
        for slug in args.stages.split(","):
            stage = Stage.objects.get(project__slug=SLUG, slug=slug)
            if args.explain:
                module = writers[-1][1]
                statement, params, _ = module.disagreement_csv_statement(stage, args.show)
                with transaction.atomic(), connection.cursor() as cursor:
                    for setting in getattr(module, "STATEMENT_SETTINGS", ()):
                        cursor.execute(setting)
                    cursor.execute(f"EXPLAIN DECLARE plan CURSOR FOR {statement}", params)
                    print("\n".join(row[0][:160] for row in cursor.fetchall()))
            for _ in range(args.repeat):
                for label, module in writers:
                    cpu = tree_cpu_seconds(cluster.pid)
                    first, total, size = _read(module, stage, args.show)
                    cpu = tree_cpu_seconds(cluster.pid) - cpu
                    print(
                        f"{slug:<7} {args.show:<7} {label:<6} first block {first * 1000:>7.0f} ms  "
                        f"whole {total * 1000:>7.0f} ms  db CPU {cpu * 1000:>6.0f} ms  "
                        f"{size:>11,} chars  load {load_average()}",
                        flush=True,
                    )
    finally:
        connection.close()
        cluster.stop()


if __name__ == "__main__":
    main()
