"""Import the release's own reviewer scores as the historic phase (review.causalt5k.historic):

    manage.py causalt5k_historic_scores my-ct5k

Run after ``causalt5k_import``: every case's round-1 and round-2 scores (with their rubric
breakdowns) go into the inactive ``historic`` stage, apart from the scores given in Rungwise.
Prints the counts.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.models import Project
from review.causalt5k.historic import historic_scores_import


class Command(BaseCommand):
    help = "Import a CausalT5k release's reviewer scores as the project's historic phase."

    def add_arguments(self, parser):
        parser.add_argument("slug")

    def handle(self, *args, slug, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"There is no project {slug!r}.")
        started = time.perf_counter()
        try:
            counts = historic_scores_import(project=project)
        except ApplicationError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"{counts['scores']:,} historic scores of {counts['cases']:,} cases imported "
                f"({counts['extra']:,} further scores of a round left out; "
                f"{time.perf_counter() - started:.1f} s)."
            )
        )
