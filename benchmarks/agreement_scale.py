"""Fleiss' κ + 95 % CI + per-category κ for 1,000,000 annotations read from PostgreSQL, end to end.

Usage (from the repository root; needs PostgreSQL through DATABASE_URL)::

    scripts/with-services.sh .venv/bin/python benchmarks/agreement_scale.py \
        [--items 333334] [--raters 3] [--categories 5] [--repeat 3] [--no-baseline]

The script migrates the database, then (once; a second run reuses the data) creates a project
with one label stage and ``--items`` items, each annotated by ``--raters`` of 9 annotators:
users, items, item stages and annotations are written with COPY. The annotations are the seeded
synthetic ones of ``benchmarks/agreement_stats_only.py`` (each annotator reports an item's true
category with probability 0.8, a random one otherwise).

A fresh process then times, ``--repeat`` times (median and best printed):

1. the database read: ``research_selectors.stage_votes`` — one binary ``COPY … TO STDOUT`` of
   (item stage, annotator, category code, seconds), the vote read in SQL as the kind declares
   it, parsed by numpy in 4 MB chunks (``research_selectors.read_binary_copy``); for
   comparison, the same COPY decoded by psycopg's ``copy.rows()``;
2. the statistics: ``fleiss_kappa_codes`` — count matrix, κ, Gwet SE and t interval,
   Fleiss–Nee–Landis null SE and per-category κ;
3. for reference, everything the agreement refresh stores (κ, α nominal with a 1,000-replicate
   bootstrap, percent agreement, the per-annotator table) from the same read;

and prints the process's peak resident memory. Baseline, measured in the same run unless
``--no-baseline``: the ORM read anyone would write first (``values_list`` over the annotations
with the JSON payloads decoded in Python) into a pandas frame, then ``fleiss_kappa`` on it.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")

SLUG = "bench-agreement-scale"
POOL = 9


def setup_django() -> None:
    import django

    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL database (run under scripts/with-services.sh).")
    django.setup()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load(items: int, raters: int, categories: int, seed: int) -> None:
    """Create the project and COPY its annotations (skipped when already there)."""
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotation import services
    from annotation.models import Annotation, Item, ItemStage, Project
    from benchmarks.agreement_stats_only import synthetic_annotations

    call_command("migrate", verbosity=0)
    project = Project.objects.filter(slug=SLUG).first()
    if project is not None:
        stage = project.stages.get()
        existing = Annotation.objects.filter(item_stage__stage=stage).count()
        if existing == items * raters:
            print(f"reusing {existing:,} annotations of project {SLUG!r}")
            return
        project.delete()
    started = time.perf_counter()
    labels = [f"category-{k}" for k in range(categories)]
    with transaction.atomic():
        project = services.project_create(slug=SLUG, name="Agreement at scale (benchmark)")
        stage = services.stage_create(
            project=project,
            slug="label",
            name="Label",
            kind="label",
            overlap=raters,
            config={"choices": labels},
        )
        User = get_user_model()
        people = [
            User.objects.get_or_create(username=f"bench-annotator-{k}")[0] for k in range(POOL)
        ]
    item_codes, rater_codes, value_codes = synthetic_annotations(
        n_items=items, n_raters=raters, n_categories=categories, seed=seed, pool=POOL
    )
    seconds = np.random.default_rng(seed + 1).gamma(4.0, 5.0, item_codes.size).round(2)
    item_table, stage_table = Item._meta.db_table, ItemStage._meta.db_table
    annotation_table = Annotation._meta.db_table
    with connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(
            f'COPY {item_table} (project_id, external_id, payload, source, "group", purpose,'
            " status, version, created_at) FROM STDIN"
        ) as copy:
            for start in range(0, items, 100_000):
                block = io.StringIO()
                for index in range(start, min(items, start + 100_000)):
                    block.write(
                        f'{project.pk}\tbench-{index:07d}\t{{"text": "item {index}"}}\t'
                        "benchmark\t\tregular\tactive\t1\tnow\n"
                    )
                copy.write(block.getvalue())
        cursor.execute(
            f"SELECT id FROM {item_table} WHERE project_id = %s ORDER BY id", [project.pk]
        )
        item_ids = np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)
        random_keys = np.random.default_rng(seed + 2).integers(0, 2**31 - 1, items)
        with raw.copy(
            f"COPY {stage_table} (item_id, stage_id, state, target_count, submitted_count,"
            " leased_count, random_key, spread_rank, group_size, opened_at, completed_at)"
            " FROM STDIN"
        ) as copy:
            for start in range(0, items, 100_000):
                end = min(items, start + 100_000)
                copy.write(
                    "".join(
                        f"{item_ids[k]}\t{stage.pk}\tresolving\t{raters}\t{raters}\t0\t"
                        f"{random_keys[k]}\t0\t1\tnow\tnow\n"
                        for k in range(start, end)
                    )
                )
        cursor.execute(
            f"SELECT id FROM {stage_table} WHERE stage_id = %s ORDER BY item_id", [stage.pk]
        )
        item_stage_ids = np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)
        user_ids = np.array([person.pk for person in people], dtype=np.int64)
        payloads = [f'{{"value": "{label}", "comment": ""}}' for label in labels]
        with raw.copy(
            f"COPY {annotation_table} (item_stage_id, annotator_id, external_rater, payload,"
            " seconds_spent, client_info, created_at) FROM STDIN"
        ) as copy:
            for start in range(0, item_codes.size, 200_000):
                end = min(item_codes.size, start + 200_000)
                copy.write(
                    "".join(
                        f"{item_stage_ids[item_codes[k]]}\t{user_ids[rater_codes[k]]}\t\t"
                        f"{payloads[value_codes[k]]}\t{seconds[k]}\t{{}}\tnow\n"
                        for k in range(start, end)
                    )
                )
        cursor.execute(f"VACUUM ANALYZE {annotation_table}")
        cursor.execute(f"VACUUM ANALYZE {stage_table}")
    print(
        f"loaded {items:,} items and {item_codes.size:,} annotations with COPY in "
        f"{time.perf_counter() - started:.1f} s"
    )


def timed(function, repeat: int):
    durations, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        durations.append(time.perf_counter() - started)
    return statistics.median(durations), min(durations), result


def measure(repeat: int, baseline: bool) -> None:
    import pandas as pd

    from agreement import selectors as research_selectors
    from agreement import stage_statistics
    from agreement.stats import fleiss_kappa, fleiss_kappa_codes
    from annotation.models import Annotation, Project

    stage = Project.objects.get(slug=SLUG).stages.get()
    idle_rss = peak_rss_mb()
    read_median, read_best, votes = timed(lambda: research_selectors.stage_votes(stage), repeat)
    categories = list(votes.categories)

    def statistics_only():
        return fleiss_kappa_codes(
            votes.items, votes.values, categories=categories, rater_codes=votes.raters
        )

    stats_median, stats_best, kappa = timed(statistics_only, repeat)
    end_median, end_best, _ = timed(
        lambda: (lambda v: fleiss_kappa_codes(v.items, v.values, categories=categories))(
            research_selectors.stage_votes(stage)
        ),
        repeat,
    )
    fast_rss = peak_rss_mb()
    per_category = ", ".join(
        f"{row['category']} {row['kappa']:.3f}" for row in kappa.details["per_category"]
    )
    print(
        f"{len(votes):,} annotations, {kappa.n_items:,} items, {kappa.n_raters} annotators "
        f"(median and best of {repeat} runs)"
    )
    print(
        f"  database read (binary COPY → numpy)    median {read_median:6.3f} s, best {read_best:6.3f} s"
    )
    print(
        f"  statistics (κ, CI, per-category κ)     median {stats_median:6.3f} s, best {stats_best:6.3f} s"
    )
    print(
        f"  end to end (read + statistics)         median {end_median:6.3f} s, best {end_best:6.3f} s"
    )
    share = read_median / (read_median + stats_median)
    print(f"  split: {share:.0%} database read, {1 - share:.0%} statistics")
    print(
        f"  κ = {kappa.value:.4f}, 95 % CI [{kappa.ci_low:.4f}, {kappa.ci_high:.4f}] "
        f"({kappa.ci_method}), se_null {kappa.se_null:.5f}"
    )
    print(f"  per-category κ: {per_category}")
    print(f"  peak RSS {fast_rss:.0f} MB (after Django start-up: {idle_rss:.0f} MB)")

    refresh_median, _, _ = timed(
        lambda: (
            stage_statistics.stage_agreement(votes),
            stage_statistics.annotator_quality(votes),
        ),
        1,
    )
    print(
        f"  everything a refresh stores (κ, α nominal + 1,000 bootstrap, % agreement, "
        f"per-annotator table), after the read: {refresh_median:.3f} s; peak RSS "
        f"{peak_rss_mb():.0f} MB"
    )

    def psycopg_rows():
        """The same COPY decoded by psycopg itself (set_types + rows()), for the reason the
        project keeps its own numpy decoder (agreement.selectors.read_binary_copy)."""
        import numpy as np
        from django.db import connection, transaction

        from annotation.models import ItemStage

        query = f"""
            COPY (
                SELECT a.item_stage_id::int8, a.annotator_id::int8,
                       COALESCE(array_position(%s::text[], a.payload ->> 'value') - 1, -1)::int8,
                       COALESCE(a.seconds_spent, 'NaN'::float8)
                FROM {Annotation._meta.db_table} a
                JOIN {ItemStage._meta.db_table} s ON s.id = a.item_stage_id
                WHERE s.stage_id = %s AND s.state <> 'open'
            ) TO STDOUT (FORMAT binary)"""
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL work_mem = '64MB'")
            with cursor.cursor.copy(query, [[str(c) for c in categories], stage.pk]) as copy:
                copy.set_types(["int8", "int8", "int8", "float8"])
                rows = list(copy.rows())
        return np.array(rows, dtype=np.float64)

    rows_median, rows_best, decoded = timed(psycopg_rows, repeat)
    assert len(decoded) == len(votes)
    print(
        f"  the same read decoded by psycopg (copy.set_types + copy.rows(), one tuple a row): "
        f"median {rows_median:.3f} s, best {rows_best:.3f} s "
        f"({rows_median / read_median:.1f}× the numpy decoder's read)"
    )

    if baseline:

        def naive():
            rows = Annotation.objects.filter(item_stage__stage=stage).values_list(
                "item_stage_id", "annotator_id", "payload"
            )
            frame = pd.DataFrame(
                [
                    (item, rater, payload["value"])
                    for item, rater, payload in rows.iterator(chunk_size=10_000)
                ],
                columns=["item", "rater", "value"],
            )
            return fleiss_kappa(frame, categories=categories)

        base_median, _, base_kappa = timed(naive, 1)
        assert abs(base_kappa.value - kappa.value) < 1e-12
        print(
            f"baseline: ORM values_list + JSON in Python + pandas + fleiss_kappa: {base_median:.3f} s "
            f"(same κ); end to end is {base_median / end_median:.1f}× faster; peak RSS "
            f"{peak_rss_mb():.0f} MB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=333_334)
    parser.add_argument("--raters", type=int, default=3)
    parser.add_argument("--categories", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--phase", choices=["all", "load", "measure"], default="all")
    arguments = parser.parse_args()
    setup_django()
    if arguments.phase in ("all", "load"):
        load(arguments.items, arguments.raters, arguments.categories, arguments.seed)
    if arguments.phase == "all":
        # Measure in a fresh process, so that its peak memory is the read's and not the load's.
        command = [
            sys.executable,
            __file__,
            "--phase",
            "measure",
            "--repeat",
            str(arguments.repeat),
        ]
        if arguments.no_baseline:
            command.append("--no-baseline")
        sys.exit(subprocess.call(command, cwd=REPO))
    if arguments.phase == "measure":
        measure(arguments.repeat, baseline=not arguments.no_baseline)


if __name__ == "__main__":
    main()
