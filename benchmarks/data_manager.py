"""The data manager (studio/data_manager) on 1,000,000 items: its pages with every item in the
search queue (right after an import) and after the indexing task (annotation/search.py).

Usage (from the repository root; needs PostgreSQL through DATABASE_URL)::

    scripts/with-services.sh .venv/bin/python benchmarks/data_manager.py \
        [--items 1000000] [--others 200000] [--repeat 5] [--explain]

The script migrates the database and (once; a second run reuses the data) writes with COPY a
project of ``--items`` items, each in a verify stage: half resolved (70 % unanimous, the rest by
majority; "keep" or "reject"), a third open, the rest discarded; one item in a thousand has the
word "quokka" in its text. Then ``--others`` items of another project, newer than all of them
(a newest-first page must not walk past them). It then times, ``--repeat`` times each (median
and best), through the selectors the Items tab calls (``items_page`` and ``items_count``):

1. the first page, newest first;
2. a filtered page: stage verify, state resolved, decision "keep";
3. a deep keyset page (after the 900,000th item, newest first);
4. the first page and a deep page sorted by status;
5. a full-text filter (a word in 0.1 % of items) and one matching nothing;
6. items whose votes were not unanimous;

7. a search by id, and a search with a stage and state;

first with every item in the search queue (the search reads them directly, as right after
importing them all), then after ``item_search_index`` filled the trigram-indexed search table
(timed), ANALYZE before each. ``--explain`` prints each query's plan.

The figures below, up to "What they decided", were measured by the earlier form of this
script, before and after migration ``0012_data_manager_indexes`` (trigram indexes then on the
items table, since moved to ``ItemSearch`` by ``0015_item_search_table``).

Figures (2026-11-27, the project's 2-CPU VM shared with other work, load average near 15, so
noisy: median (best) of 3, in ms). 200,000 items (+ 40,000 in
another project; "count" is ``items_count``, capped at 10,000 when filtered)::

    case                            page before       page after   count before  count after
    first page (newest)             44.7 ( 44.0)     48.0 ( 43.3)          51.9         70.6
    stage+state+decision            62.1 ( 45.8)     64.5 ( 64.0)         389.5        374.7
    deep keyset page (90 %)         24.9 (  4.2)     11.9 (  5.6)          35.5         64.9
    by status, first page          104.9 (103.9)     12.6 (  4.5)          50.6         68.8
    by status, deep page           129.5 (112.6)     15.9 ( 13.1)          58.2         71.6
    full text (0.1 % match)        465.5 (412.4)     32.5 ( 29.4)         479.9         13.1
    full text (no match)           484.5 (429.0)   1167.2 (  3.2)         498.7         16.1
    not unanimous                   60.1 ( 34.5)     79.4 ( 61.2)         460.8        386.7

1,000,000 items (+ 200,000 in another project), the same code::

    case                            page before       page after   count before  count after
    first page (newest)             86.0 ( 65.5)    188.4 (179.1)         131.0        305.2
    stage+state+decision            89.6 ( 71.3)    393.7 (358.0)         212.2        500.6
    deep keyset page (90 %)         11.7 (  7.8)      4.0 (  3.0)         188.9        480.4
    by status, first page          317.9 (316.7)     18.0 (  5.4)         123.0        307.0
    by status, deep page           374.6 (315.0)     47.1 (  4.5)         120.1        477.2
    full text (0.1 % match)        242.2 (236.1)     62.8 ( 53.3)        1206.9         49.1
    full text (no match)          1949.5 (1424.1)  10981.9 ( 16.3)       1260.9         11.8
    not unanimous                  123.0 (104.9)    341.5 (335.0)         248.1       1249.9

The "after" rows that did not gain (first page, stage+state+decision, not unanimous: none of
these indexes serves them) ran while the machine was busier; they are noise between the two
phases, not the indexes' cost, and are worth measuring again on a quiet machine.

What they decided: the (project, status, id) index (a status-sorted page 8–18× faster, a deep
one 8×) and the trigram indexes (a search 4–90× faster, its count 25–100×) are kept; a
(project, id) index was measured in an earlier run and the planner never used it (the primary
key serves newest first), so it was dropped. A deep keyset page costs what the first does (no
OFFSET; the status keyset is one row-value range of its index). Exact counts of broad filters
take seconds at a million items, so the page counts a filtered view only up to 10,000
("10,000+"; ``selectors.items_count``). An earlier run, with the stage-level filters joined to
the stage table instead of reading the project's stage ids first, took 12 s for the "not
unanimous" page (the planner misjudged the join); reading the ids first made it 0.3 s. A
"full text (no match)" median after is one slow first run among three (the best is the
steady figure). The first page newest first is slower than a deep one here because the other
project's 200,000 newer items are walked past on the primary key.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")

SLUG = "bench-data-manager"
OTHER = "bench-data-manager-other"
WORDS = "rain river flood drought harvest market price storm wind fire smoke city road".split()


def setup_django() -> None:
    import django

    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL database (run under scripts/with-services.sh).")
    django.setup()


def _copy_items(cursor, project_id: int, count: int, prefix: str, rng: random.Random) -> None:
    from annotation.models import Item

    with cursor.cursor.copy(
        f'COPY {Item._meta.db_table} (project_id, external_id, payload, source, "group", purpose,'
        " status, version, created_at) FROM STDIN"
    ) as copy:
        for start in range(0, count, 100_000):
            block = io.StringIO()
            for index in range(start, min(count, start + 100_000)):
                words = " ".join(rng.choice(WORDS) for _ in range(8))
                if index % 1000 == 7:
                    words += " quokka"
                status = ("accepted", "rejected", "active", "discarded")[index % 4]
                block.write(
                    f'{project_id}\t{prefix}-{index:07d}\t{{"text": "{words}", '
                    f'"meta": {{"lang": "en"}}}}\tbenchmark\t\tregular\t{status}\t1\tnow\n'
                )
            copy.write(block.getvalue())


def load(items: int, others: int, seed: int) -> None:
    """Create both projects with COPY (skipped when already there)."""
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotation import services
    from annotation.models import Item, ItemStage, Project, Resolution

    call_command("migrate", verbosity=0)
    project = Project.objects.filter(slug=SLUG).first()
    if project is not None and Item.objects.filter(project=project).count() == items:
        print(f"reusing the {items:,} items of project {SLUG!r}")
        return
    Project.objects.filter(slug__in=[SLUG, OTHER]).delete()
    started = time.perf_counter()
    rng = random.Random(seed)
    with transaction.atomic():
        project = services.project_create(slug=SLUG, name="Data manager (benchmark)")
        stage = services.stage_create(
            project=project, slug="verify", name="Verify", kind="verify", overlap=3
        )
        other = services.project_create(slug=OTHER, name="Another project (benchmark)")
    stage_table, resolution_table = ItemStage._meta.db_table, Resolution._meta.db_table
    with connection.cursor() as cursor:
        _copy_items(cursor, project.pk, items, "bench", rng)
        print(f"items written ({time.perf_counter() - started:.0f} s)", flush=True)
        cursor.execute(
            f"SELECT id FROM {Item._meta.db_table} WHERE project_id = %s ORDER BY id", [project.pk]
        )
        item_ids = [row[0] for row in cursor.fetchall()]
        states = []
        with cursor.cursor.copy(
            f"COPY {stage_table} (item_id, stage_id, state, target_count, submitted_count,"
            " leased_count, random_key, spread_rank, group_size, opened_at) FROM STDIN"
        ) as copy:
            for start in range(0, items, 100_000):
                block = io.StringIO()
                for index in range(start, min(items, start + 100_000)):
                    draw = rng.random()
                    state = "resolved" if draw < 0.5 else "open" if draw < 0.83 else "discarded"
                    states.append(state)
                    done = 0 if state == "open" else 3
                    block.write(
                        f"{item_ids[index]}\t{stage.pk}\t{state}\t3\t{done}\t0\t"
                        f"{rng.randrange(2**31)}\t0\t1\tnow\n"
                    )
                copy.write(block.getvalue())
        cursor.execute(
            f"SELECT id FROM {stage_table} WHERE stage_id = %s ORDER BY item_id", [stage.pk]
        )
        item_stage_ids = [row[0] for row in cursor.fetchall()]
        with cursor.cursor.copy(
            f"COPY {resolution_table} (item_stage_id, value, status, outcome, votes,"
            " n_annotations, policy, reason, computed_at) FROM STDIN"
        ) as copy:
            block = io.StringIO()
            for item_stage_id, state in zip(item_stage_ids, states, strict=True):
                if state != "resolved":
                    continue
                value = "keep" if rng.random() < 0.7 else "reject"
                status = "unanimous" if rng.random() < 0.7 else "majority"
                block.write(
                    f'{item_stage_id}\t"{value}"\t{status}\taccept\t{{}}\t3\tmajority\t\tnow\n'
                )
            copy.write(block.getvalue())
        print(
            f"item stages and resolutions written ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        _copy_items(cursor, other.pk, others, "other", rng)
        for table in (Item._meta.db_table, stage_table, resolution_table):
            cursor.execute(f"VACUUM ANALYZE {table}")
    print(f"loaded {items:,} + {others:,} items with COPY in {time.perf_counter() - started:.1f} s")


def timed(function, repeat: int) -> tuple[float, float]:
    durations = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        durations.append(time.perf_counter() - started)
    return statistics.median(durations) * 1000, min(durations) * 1000


def cases(project) -> dict:
    from annotation.models import Item
    from studio.data_manager.forms import ItemQuery

    # Deep: 90 % of the way through (the 900,000th of a million).
    position = Item.objects.filter(project=project).count() * 9 // 10
    newest = Item.objects.filter(project=project).order_by("-pk")
    deep = newest.values_list("pk", flat=True)[position : position + 1].get()
    by_status = Item.objects.filter(project=project).order_by("status", "pk")
    deep_status = by_status.values_list("status", "pk")[position : position + 1].get()
    return {
        "first page (newest)": ItemQuery(),
        "stage+state+decision": ItemQuery(stage="verify", state="resolved", decision="keep"),
        "deep keyset page (90 %)": ItemQuery(after=(deep, deep)),
        "by status, first page": ItemQuery(sort="status"),
        "by status, deep page": ItemQuery(sort="status", after=tuple(deep_status)),
        "full text (0.1 % match)": ItemQuery(q="quokka"),
        "full text (no match)": ItemQuery(q="platypus"),
        "not unanimous": ItemQuery(disagreement=True),
        "search by id": ItemQuery(q="bench-0001234"),
        "search + stage + state": ItemQuery(q="quokka", stage="verify", state="resolved"),
    }


def measure(project, queries: dict, repeat: int, explain: bool) -> dict[str, tuple]:
    from django.db import connection

    from studio.data_manager import selectors

    results = {}
    for name, query in queries.items():

        def page(query=query):
            selectors.items_page(project, query, viewer=None, named=True)

        def count(query=query):
            selectors.items_count(project, query, viewer=None, named=True)

        results[name] = (*timed(page, repeat), *timed(count, max(1, repeat // 2)))
        if explain:
            from studio.data_manager.forms import SORTS  # noqa: F401

            queryset = selectors._ordered_after(
                selectors.items_matching(project, query, viewer=None, named=True),
                query.sort,
                query.after,
            )[:51]
            sql, params = queryset.query.sql_with_params()
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN ANALYZE " + sql, params)
                print(f"--- {name}")
                print("\n".join(row[0] for row in cursor.fetchall()[:14]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--others", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()
    setup_django()
    from django.db import connection

    from annotation.models import Item, ItemSearch, ItemSearchPending, Project
    from annotation.search import item_search_index

    load(args.items, args.others, args.seed)
    project = Project.objects.get(slug=SLUG)
    queries = cases(project)
    figures = {}
    for phase in ("queued", "indexed"):
        with connection.cursor() as cursor:
            if phase == "queued":
                # Every item queued, as right after importing them all: the search reads
                # them directly (annotation/search.py), the worst case it has.
                cursor.execute(f"TRUNCATE {ItemSearch._meta.db_table}")
                cursor.execute(
                    f"INSERT INTO {ItemSearchPending._meta.db_table} (item_id) "
                    f"SELECT id FROM {Item._meta.db_table} ON CONFLICT DO NOTHING"
                )
            else:
                started, load_average = time.perf_counter(), os.getloadavg()[0]
                indexed = item_search_index()
                print(f"indexed {indexed:,} items in {time.perf_counter() - started:.1f} s "
                      f"(load {load_average:.1f})", flush=True)  # fmt: skip
            for table in (Item, ItemSearch, ItemSearchPending):
                cursor.execute(f"ANALYZE {table._meta.db_table}")
        print(f"== {phase}: items in the search queue, load {os.getloadavg()[0]:.1f}", flush=True)
        figures[phase] = measure(project, queries, args.repeat, args.explain)
    print(
        f"\n{args.items:,} items (+ {args.others:,} in another project), median (best) in ms "
        f"of {args.repeat} runs; count: the 'N items match' figure (items_count: capped at "
        f"10,000 when filtered); load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'case':<30} {'page queued':>16} {'page indexed':>16} {'count queued':>14} "
        f"{'count indexed':>14}"
    )
    for name in queries:
        b, a = figures["queued"][name], figures["indexed"][name]
        print(
            f"{name:<30} {b[0]:>8.1f} ({b[1]:>5.1f}) {a[0]:>8.1f} ({a[1]:>5.1f}) "
            f"{b[2]:>14.1f} {a[2]:>14.1f}"
        )


if __name__ == "__main__":
    main()
