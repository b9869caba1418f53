"""``manage.py import_from_tool <project> <stage> <tool> <path> [--field NAME]``: a Label Studio
JSON export or a Potato output folder (or its zip) into an inactive stage, as the interop page
does (interop/README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.models import Project, Stage
from interop import services
from interop.uploads import TOOLS, export_read


def files_at(path: Path) -> dict[str, bytes]:
    """A file (name → content), or every file under a folder (path within it → content)."""
    if path.is_dir():
        return {
            str(found.relative_to(path)): found.read_bytes()
            for found in sorted(path.rglob("*"))
            if found.is_file()
        }
    return {path.name: path.read_bytes()}


class Command(BaseCommand):
    help = "Import a Label Studio export or a Potato output folder into an inactive stage."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="the project's slug")
        parser.add_argument("stage", help="the inactive stage's slug")
        parser.add_argument("tool", choices=sorted(TOOLS))
        parser.add_argument("path", type=Path, help="the JSON export, the folder or its zip")
        parser.add_argument("--field", default=None, help="from_name / scheme name to import")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project {options['project']!r}.")
        stage = Stage.objects.filter(project=project, slug=options["stage"]).first()
        if stage is None:
            raise CommandError(f"No stage {options['stage']!r} in {project.slug}.")
        path: Path = options["path"]
        if not path.exists():
            raise CommandError(f"{path} does not exist.")
        try:
            export, key = export_read(options["tool"], files_at(path))
            result = services.interop_import(
                project=project, stage=stage, export=export, field=options["field"], key=key
            )
        except ApplicationError as error:
            problems = (error.extra or {}).get("problems") or [error.message]
            raise CommandError("Nothing was imported.\n" + "\n".join(problems)) from None
        self.stdout.write(services.result_summary(result))
