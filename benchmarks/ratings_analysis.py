"""Time the ratings analysis (the stored result the researcher page serves) at a million ratings.

Run from the repository root under the services, on the database ``benchmarks/pages_scale.py``
builds (a ratings project with 1,000,000 historic ratings; pass a copy of its cluster so that a
concurrent pages run is not disturbed)::

    scripts/with-services.sh .venv/bin/python benchmarks/ratings_analysis.py \\
        --data-dir /var/tmp/bench-rs

Prints, per step of ``ratings.selectors.compute_analysis`` (reading the frames, the report, the
plots) and for the whole ``ratings.services.analysis_refresh``, the CPU time of this process
(``time.process_time``: the machine is shared, so wall time is printed beside it with the load
average). ``--profile`` adds the top of a cProfile (CPU clock) of the report.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")


def load_average() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def timed(label: str, function):
    cpu, wall = time.process_time(), time.perf_counter()
    result = function()
    print(
        f"{label:<34} CPU {time.process_time() - cpu:7.2f} s   wall {time.perf_counter() - wall:7.2f} s"
        f"   (load {load_average()})",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default="/var/tmp/bench-rs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--source", default="historic", help="all, live or historic")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    import django

    django.setup()
    from benchmarks.pages_scale import RATINGS_SLUG, use_database

    cluster, _ = use_database(f"bench_pages_full_{args.seed}", Path(args.data_dir))
    try:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)  # a cluster built by an older checkout
        from annotation.models import Project
        from ratings import plots, report, selectors, services
        from ratings.models import StoredAnalysis

        project = Project.objects.get(slug=RATINGS_SLUG)
        context = selectors.ratings_context(project)
        assert context is not None
        source = args.source
        items = timed("items frame", lambda: selectors.items_frame(project))
        pairs = timed("pairs frame", lambda: selectors.pairs_frame(project))
        ratings = timed(
            f"ratings frame ({source})",
            lambda: selectors.ratings_frame(context, source=source, items=items),
        )
        print(f"  {len(ratings):,} ratings, {len(items):,} items", flush=True)
        profile = cProfile.Profile(time.process_time) if args.profile else None

        def build():
            if profile:
                profile.enable()
            try:
                return report.build_report(
                    ratings=ratings,
                    items=items,
                    pairs=pairs,
                    connective_set=context.connective_set,
                    rule=context.rule,
                    scale=context.scale,
                    seed=0,
                )
            finally:
                if profile:
                    profile.disable()

        built = timed("report (tables, alpha, split-half)", build)
        subsets = items.set_index("item_key")["pair_id"].map(pairs.set_index("pair_id")["subset"])
        timed(
            "plot: distributions",
            lambda: plots.rating_distributions(
                built.ratings, context.connective_set, context.scale, by_subset=subsets
            ),
        )
        timed(
            "plot: means",
            lambda: plots.mean_by_connective(built.item_means, context.connective_set, subsets),
        )
        StoredAnalysis.objects.filter(project=project, source=source, run_key=0).update(version="")
        timed(
            f"analysis_refresh ({source}), whole",
            lambda: services.analysis_refresh(project_id=project.pk, source=source, run_id=None),
        )
        if profile:
            pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
    finally:
        from django.db import connection

        connection.close()
        cluster.stop()


if __name__ == "__main__":
    main()
