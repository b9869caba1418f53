"""Start CausalT5k's validation on a project's imported cases (review.causalt5k.pipeline):

    manage.py causalt5k_open_review my-ct5k [--threshold 0.8]

Near-duplicate clusters among the cases not yet in validation become items of the near-duplicate
queue; the other cases open in adversarial review. Run again after adding cases: only the new ones
are taken. Prints the counts.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.models import Project
from review.causalt5k.pipeline import causalt5k_review_open


class Command(BaseCommand):
    help = "Open a CausalT5k project's cases in the near-duplicate queue and adversarial review."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument(
            "--threshold", type=float, default=None, help="Jaccard threshold (default 0.8)"
        )

    def handle(self, *args, slug, threshold, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"There is no project {slug!r}.")
        started = time.perf_counter()
        try:
            counts = causalt5k_review_open(project=project, threshold=threshold)
        except ApplicationError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"{counts['cases']} cases: {counts['clusters']} near-duplicate clusters holding "
                f"{counts['in_clusters']} cases in the queue, {counts['opened_in_review']} opened "
                f"in adversarial review, {counts['authors_linked']} linked to their author "
                f"({time.perf_counter() - started:.1f} s)."
            )
        )
