"""Write the verified pairs that have no entry yet, for the team's generator (JSON Lines).

manage.py meter_export_for_generation my-meter pairs-for-generation.jsonl
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from review.meter.services import WORKFLOW, generation_rows


class Command(BaseCommand):
    help = "Export verified pairs without an entry (JSON Lines) for generation."

    def add_arguments(self, parser):
        parser.add_argument("project", help="the METER project's slug")
        parser.add_argument("path", help="the JSON Lines file to write ('-' for stdout)")

    def handle(self, *args, project, path, **options):
        found = Project.objects.filter(slug=project, kind=WORKFLOW).first()
        if found is None:
            raise CommandError(f"There is no METER project {project!r}.")
        count = 0
        out = self.stdout if path == "-" else open(path, "w", encoding="utf-8")  # noqa: SIM115
        try:
            for row in generation_rows(found):
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
        finally:
            if out is not self.stdout:
                out.close()
        if path != "-":
            self.stdout.write(self.style.SUCCESS(f"Wrote {count} pairs to {path}."))
