"""Import a CausalT5k release folder into a project, one item per canonical case.

    manage.py causalt5k_import my-ct5k ../shared/datasets/CausalT5k [--name "CausalT5k"]

Creates the project (kind "causalt5k") when it does not exist. Prints the counts, the files that
were not imported and why, and the time taken. All or nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.models import Project
from review.causalt5k.services import causalt5k_import, causalt5k_project_create


class Command(BaseCommand):
    help = "Import a CausalT5k release (normalised, with a report) into a project."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("root", type=Path)
        parser.add_argument("--name", default="CausalT5k", help="name of a new project")

    def handle(self, *args, slug, root, name, **options):
        started = time.perf_counter()
        try:
            project = Project.objects.filter(slug=slug).first() or causalt5k_project_create(
                slug=slug, name=name
            )
            record = causalt5k_import(project=project, root=root)
        except ApplicationError as error:
            raise CommandError(str(error)) from None
        report = record.report
        for file in report["files"]:
            if file["status"] != "ok":
                self.stdout.write(f"NOT IMPORTED {file['path']}: {file['error']}")
        outcomes = ", ".join(f"{n} {what}" for what, n in report["outcomes"].items())
        self.stdout.write(
            f"{record.records} records from {sum(f['status'] == 'ok' for f in report['files'])} "
            f"files: {outcomes}."
        )
        self.stdout.write(
            f"{len(report['unmapped'])} values reported as unmapped or conflicting; "
            f"{len(report['merges'])} cases merged from several records."
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"{record.cases} cases imported into {project.slug} in {record.seconds:.1f} s "
                f"({time.perf_counter() - started:.1f} s with the commit)."
            )
        )
