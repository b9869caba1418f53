"""``manage.py narratives_import <slug> <path> [--limit N]``: import CausalNarratives files (a
file, or a directory such as ``real_world_graphs/narratives``) or narrative graphs into the
project ``slug``, creating it (one stage, overlap 3) if it does not exist. Everything or
nothing: every problem is printed as ``file:line: message``."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from narratives import services


class Command(BaseCommand):
    help = "Import CausalNarratives narrative files (JSON Lines) into a project."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("path")
        parser.add_argument("--name", default="")
        parser.add_argument("--overlap", type=int, default=3)
        parser.add_argument(
            "--limit", type=int, default=None, help="narratives per folder and length"
        )

    def handle(self, *args, slug, path, name, overlap, limit, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            project = services.narratives_project_create(
                slug=slug, name=name or f"CausalNarratives ({slug})", overlap=overlap
            )
        report = services.narratives_import(project=project, path=path, limit=limit)
        if not report.ok:
            for problem in report.problems:
                self.stderr.write(problem)
            raise CommandError(f"Nothing imported: {len(report.problems)} problem(s).")
        for key, count in sorted(report.counts.items()):
            self.stdout.write(f"  {key}: {count}")
        self.stdout.write(self.style.SUCCESS(f"Imported {report.created} narratives into {slug}."))
