"""Import a pairs file (CSV/TSV/JSONL/JSON array) into a ratings project."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from annotation.errors import ApplicationError
from ratings import services
from ratings.management.commands._common import command_error, open_file, project_by_slug


class Command(BaseCommand):
    help = (
        "Import sentence pairs (pair_id, sentence_a, sentence_b, subset, origin, flags; practice "
        "and attention-check rows with purpose, connective, order, expected_min/max). Each pair "
        "becomes one item per connective and sentence order. A bad row rejects the whole file."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("file")
        parser.add_argument(
            "--no-rating", action="store_true", help="do not open the items for live rating"
        )

    def handle(self, *args, slug, file, no_rating, **options):
        project = project_by_slug(slug)
        with open_file(file) as (filename, content):
            start = time.perf_counter()
            try:
                result = services.pairs_import(
                    project=project,
                    content=content,
                    filename=filename,
                    open_for_rating=not no_rating,
                )
            except ApplicationError as error:
                raise command_error(error) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"{result.import_batch.message} ({time.perf_counter() - start:.2f} s)"
            )
        )
