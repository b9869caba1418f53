"""manage.py graphs_import_carlgt <slug> <dir>: import CARL-GT's question and answer files into
a CARL-GT project (created with that slug when there is none). Nothing is imported when any
file has a problem; each is printed as file:line: message."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from graphs import services


class Command(BaseCommand):
    help = "Import CARL-GT (carl_gt/data: graph/ and table/) into a project."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("directory")
        parser.add_argument("--name", default="CARL-GT")
        parser.add_argument("--overlap", type=int, default=3)

    def handle(self, *args, slug, directory, name, overlap, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            project = services.carlgt_project_create(slug=slug, name=name, overlap=overlap)
            self.stdout.write(f"Created project {slug}.")
        report = services.carlgt_import(project=project, directory=directory)
        for line in report.skipped:
            self.stdout.write(f"skipped {line}")
        if not report.ok:
            for problem in report.problems[:200]:
                self.stderr.write(problem)
            raise CommandError(f"{len(report.problems)} problem(s); nothing was imported.")
        counts = ", ".join(f"{task} {n}" for task, n in report.counts.items())
        self.stdout.write(self.style.SUCCESS(f"Imported {report.created} questions ({counts})."))
