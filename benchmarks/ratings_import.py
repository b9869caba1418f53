"""Time importing ExpliCa into the database and aggregating it back, through the app's own paths.

    scripts/with-services.sh .venv/bin/python benchmarks/ratings_import.py   # PostgreSQL
    .venv/bin/python benchmarks/ratings_import.py                             # SQLite file

Uses the database of the current settings (DATABASE_URL, else a throwaway SQLite file under
/tmp): migrates it, imports the 600 pairs (4,800 items) and 72,000 historic ratings with
``services.explica_import`` in one transaction, then reads the ratings back as the researcher
page does (``selectors.ratings_frame``), labels the 1,200 ordered pairs and compares them with
ExpliCa's published labels, and computes the page's full analysis (α with bootstrap CIs,
split-half, class tables, plots). Prints wall times; the project is deleted afterwards.
Needs ../shared/datasets/ExpliCa (or RUNGWISE_SHARED_DIR).
"""

from __future__ import annotations

import os
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
from django.db import connection  # noqa: E402

from annotation.models import Annotation, Project  # noqa: E402
from ratings import selectors, services, stats  # noqa: E402
from ratings.models import SentencePair  # noqa: E402


def explica_dir() -> Path:
    for shared in (
        REPO.parent / "shared",
        Path(os.environ.get("RUNGWISE_SHARED_DIR", "/nonexistent")),
    ):
        data = shared / "datasets" / "ExpliCa" / "data"
        if (data / "explica" / "explica_freq_4800.tsv").is_file():
            return data
    sys.exit(
        "ExpliCa data not found: put ../shared beside the checkout or set RUNGWISE_SHARED_DIR."
    )


def timed(label: str, function):
    start = time.perf_counter()
    result = function()
    print(f"{label:<58} {time.perf_counter() - start:7.2f} s")
    return result


def main() -> None:
    data = explica_dir()
    call_command("migrate", verbosity=0)
    print(f"database: {connection.vendor}")
    Project.objects.filter(slug="bench-explica").delete()
    project = services.ratings_project_create(slug="bench-explica", name="ExpliCa (benchmark)")
    total = time.perf_counter()
    result = timed(
        "import 600 pairs → 4,800 items + 72,000 ratings",
        lambda: services.explica_import(
            project=project,
            pair_file=data / "explica" / "explica_freq_4800.tsv",
            ratings_file=data
            / "res"
            / "acceptability"
            / "zeroshot"
            / "accept_res_outlines_gpt-4o_zero.tsv",
        ),
    )
    context = selectors.ratings_context(project)
    ratings = timed(
        "read 72,000 ratings back into a frame",
        lambda: selectors.ratings_frame(context, source="historic"),
    )
    labels = timed(
        "item means + labels of 1,200 ordered pairs",
        lambda: stats.pair_labels(
            stats.item_summary(ratings), context.connective_set, context.rule
        ),
    )
    print(f"{'import + read + aggregate':<58} {time.perf_counter() - total:7.2f} s")
    published = {
        (pair_id, order): label
        for pair_id, extra in SentencePair.objects.filter(project=project).values_list(
            "pair_id", "extra"
        )
        for order, label in (extra.get("published_label") or {}).items()
    }
    same = sum(
        published.get((pair_id, order)) == label
        for pair_id, order, label in labels[["pair_id", "order", "label"]].itertuples(index=False)
    )
    analysis = timed(
        "full researcher-page analysis (α ±CI, split-half, tables, plots)",
        lambda: selectors.compute_analysis(context, source="historic", run=None),
    )
    # The page's cost before and after the stored analysis, in this run: it used to compute the
    # analysis inline on a cold load (the line above); now a worker computes and stores it
    # (services.analysis_refresh) and the page reads it back (selectors.stored_analysis: the
    # data version and one unpickled row; the process cache cleared to time a cold read).
    timed(
        "worker: compute + store the analysis (services.analysis_refresh)",
        lambda: services.analysis_refresh(project_id=project.pk, source="historic", run_id=None),
    )
    from django.core.cache import cache

    cache.clear()
    state = timed(
        "page: cold read of the stored analysis (selectors.stored_analysis)",
        lambda: selectors.stored_analysis(context, source="historic", run=None),
    )
    assert state.fresh and state.analysis.report.n_ratings == analysis.report.n_ratings
    timed(
        "page: warm read of the stored analysis",
        lambda: selectors.stored_analysis(context, source="historic", run=None),
    )
    figures = analysis.report.figures
    print(
        f"items {result.pairs.items:,}, ratings {result.ratings:,}, stored annotations "
        f"{Annotation.objects.filter(item_stage__stage__project=project).count():,}"
    )
    print(f"published labels reproduced: {same:,} / {len(published):,}")
    for name in ("alpha_ordinal", "alpha_interval", "split_half"):
        figure = figures[name]
        print(f"{name:<16} {figure.value:.4f} [{figure.low:.4f}, {figure.high:.4f}]")
    timed("delete the benchmark project", lambda: project.delete())


if __name__ == "__main__":
    main()
