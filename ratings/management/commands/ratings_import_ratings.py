"""Import historic ratings (CSV/TSV/JSONL/JSON array) of a ratings project's items."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from annotation.errors import ApplicationError
from ratings import services
from ratings.management.commands._common import command_error, open_file, project_by_slug


class Command(BaseCommand):
    help = (
        "Import earlier ratings as external annotations: pair_id, order (AB/BA), connective and "
        "rating (+ rater), or ratings (a list of anonymous ratings). A bad row rejects the file."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("file")
        parser.add_argument(
            "--allow-duplicate-file",
            action="store_true",
            help="Import the file even if the same ratings were imported before (the same file by "
            "SHA-256, or the same rows in another form: line ends, CSV or JSON Lines, row order).",
        )

    def handle(self, *args, slug, file, allow_duplicate_file=False, **options):
        project = project_by_slug(slug)
        with open_file(file) as (filename, content):
            start = time.perf_counter()
            try:
                count = services.historic_ratings_import(
                    project=project,
                    content=content,
                    filename=filename,
                    allow_duplicate_file=allow_duplicate_file,
                )
            except ApplicationError as error:
                raise command_error(error) from None
        self.stdout.write(
            self.style.SUCCESS(f"Imported {count:,} ratings ({time.perf_counter() - start:.2f} s).")
        )
