"""Import ExpliCa's released files (pairs, 15 anonymous ratings per item, model answers)."""

from __future__ import annotations

import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.models import Project
from ratings import services
from ratings.management.commands._common import command_error

DEFAULT_RATINGS = "res/acceptability/zeroshot/accept_res_outlines_gpt-4o_zero.tsv"


class Command(BaseCommand):
    help = (
        "Import ExpliCa (github.com/martinadh/ExpliCa; CC BY-NC-SA 4.0, not for training models) "
        "into a ratings project: the 600 pairs as 4,800 items, the 15 anonymous ratings of each "
        "item as historic annotations, and optionally the model answers of its result files."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "slug", help="project slug (created with ExpliCa's defaults if missing)"
        )
        parser.add_argument(
            "--data",
            default=str(
                Path(settings.BASE_DIR).parent / "shared" / "datasets" / "ExpliCa" / "data"
            ),
            help="the release's data/ folder (default: ../shared/datasets/ExpliCa/data)",
        )
        parser.add_argument(
            "--pairs", default="explica/explica_freq_4800.tsv", help="pair file, relative to --data"
        )
        parser.add_argument(
            "--ratings",
            default=DEFAULT_RATINGS,
            help="any acceptability result file (its accept_answers column is the same in all)",
        )
        parser.add_argument(
            "--models",
            nargs="*",
            default=[],
            help="acceptability result files whose model answers to store ('all' = every file "
            "under res/acceptability)",
        )
        parser.add_argument("--name", default="ExpliCa", help="project name when creating it")
        parser.add_argument(
            "--open-for-rating", action="store_true", help="also collect new ratings of the items"
        )

    def handle(self, *args, slug, data, pairs, ratings, models, name, open_for_rating, **options):
        folder = Path(data)
        if not (folder / pairs).is_file():
            raise CommandError(f"{folder / pairs} not found; pass --data.")
        model_files = []
        if models == ["all"]:
            model_files = sorted((folder / "res" / "acceptability").glob("*/*.tsv"))
        else:
            model_files = [folder / model for model in models]
        start = time.perf_counter()
        try:
            project = Project.objects.filter(slug=slug).first()
            if project is None:
                project = services.ratings_project_create(
                    slug=slug,
                    name=name,
                    description="ExpliCa (Miliani et al., Findings of ACL 2025): 600 sentence "
                    "pairs × so/because/then/after × 2 orders, 15 crowd ratings per item.",
                )
            result = services.explica_import(
                project=project,
                pair_file=folder / pairs,
                ratings_file=folder / ratings if ratings else None,
                model_files=model_files,
                open_for_rating=open_for_rating,
            )
        except ApplicationError as error:
            raise command_error(error) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"{result.pairs.import_batch.message} {result.ratings:,} historic ratings; "
                f"{len(result.model_runs)} model runs ({time.perf_counter() - start:.2f} s)."
            )
        )
