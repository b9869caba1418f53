"""Import generated METER entries (JSON Lines or a JSON array), linked to verified pairs.

    manage.py meter_import_entries my-meter entries.jsonl

All or nothing: any bad entry is reported with its line and field and nothing is imported
(exit status 1). The format is in review/README.md.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.template.defaultfilters import pluralize

from annotation.errors import ApplicationError
from annotation.models import Project
from review.meter.services import WORKFLOW, entries_import


class Command(BaseCommand):
    help = "Import generated entries into a METER project's check, edit and vote stage."

    def add_arguments(self, parser):
        parser.add_argument("project", help="the METER project's slug")
        parser.add_argument("path", help="the entries file (.jsonl or .json)")

    def handle(self, *args, project, path, **options):
        found = Project.objects.filter(slug=project, kind=WORKFLOW).first()
        if found is None:
            raise CommandError(f"There is no METER project {project!r}.")
        source = Path(path)
        if not source.is_file():
            raise CommandError(f"No such file: {path}")
        try:
            with source.open("rb") as handle:
                report = entries_import(project=found, fileobj=handle, filename=source.name)
        except ApplicationError as error:
            raise CommandError(str(error)) from None
        if not report.ok:
            for problem in report.errors:
                self.stderr.write(f"{problem.where()}: {problem.message}")
            raise CommandError(
                f"{report.error_count} problem(s) in {source.name}; nothing was imported."
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {report.created} entr{pluralize(report.created, 'y,ies')}."
            )
        )
