"""Near-duplicate clusters of scenario + claim, with counts and the time taken.

manage.py causalt5k_near_duplicates my-ct5k [--threshold 0.8]          # the project's cases
manage.py causalt5k_near_duplicates --release DIR [--threshold 0.8]   # the reviewed candidates
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.models import Project
from review.causalt5k import neardup
from review.causalt5k.services import causalt5k_near_duplicates, review_candidates


class Command(BaseCommand):
    help = "Count near-duplicate clusters (MinHash/LSH, exact Jaccard check) of CausalT5k cases."

    def add_arguments(self, parser):
        parser.add_argument("slug", nargs="?")
        parser.add_argument("--release", type=Path, help="a release folder: its round-2 candidates")
        parser.add_argument("--threshold", type=float, default=neardup.DEFAULT_THRESHOLD)
        parser.add_argument("--show", type=int, default=0, help="print the N largest clusters")

    def handle(self, *args, slug, release, threshold, show, **options):
        if not 0 < threshold <= 1:
            raise CommandError("--threshold must be in (0, 1].")
        started = time.perf_counter()
        if release is not None:
            docs = review_candidates(release)
            read = time.perf_counter() - started
            started = time.perf_counter()
            clusters = neardup.near_duplicate_clusters(docs, threshold=threshold)
            counts = neardup.summary(clusters, len(docs))
            what = f"{len(docs)} reviewed candidates (read in {read:.1f} s)"
        elif slug:
            project = Project.objects.filter(slug=slug).first()
            if project is None:
                raise CommandError(f"No project {slug!r}.")
            try:
                clusters, counts = causalt5k_near_duplicates(project=project, threshold=threshold)
            except ApplicationError as error:
                raise CommandError(str(error)) from None
            what = f"{counts['documents']} cases of {slug}"
        else:
            raise CommandError("Name a project or --release DIR.")
        seconds = time.perf_counter() - started
        self.stdout.write(
            f"{what}: {counts['clusters']} clusters at Jaccard ≥ {threshold} holding "
            f"{counts['in_clusters']} texts; {counts['after_dedup']} left if each cluster kept one; "
            f"sizes {counts['sizes']}; {seconds:.2f} s."
        )
        for cluster in clusters[:show]:
            self.stdout.write(
                f"  {len(cluster.keys)} (≥ {cluster.min_similarity}): {' '.join(cluster.keys)}"
            )
