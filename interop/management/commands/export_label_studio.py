"""``manage.py export_label_studio <project> [-o FILE]``: the project's items and decisions as
Label Studio tasks (JSON; ``interop.selectors.label_studio_tasks``), to a file or stdout."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from interop.selectors import label_studio_json


class Command(BaseCommand):
    help = "Write a project's items and decisions as a Label Studio tasks JSON file."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="the project's slug")
        parser.add_argument("-o", "--output", default="-", help="file to write ('-': stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project {options['project']!r}.")
        if options["output"] == "-":
            for piece in label_studio_json(project):
                sys.stdout.write(piece)
            return
        with open(options["output"], "w", encoding="utf-8") as out:
            for piece in label_studio_json(project):
                out.write(piece)
        self.stdout.write(f"Wrote {options['output']}.")
