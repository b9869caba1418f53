"""Shared helpers of the ratings management commands."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotation.errors import ApplicationError
from annotation.models import Project


def project_by_slug(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"There is no project {slug!r}; create it with ratings_create_project.")
    return project


def read_file(path: str) -> tuple[str, bytes]:
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"{path} is not a file.")
    return file.name, file.read_bytes()


def command_error(error: ApplicationError) -> CommandError:
    """An ApplicationError as a CommandError listing the rows it names."""
    lines = [error.message]
    extra = error.extra if isinstance(error.extra, dict) else {}
    for row in extra.get("errors", [])[:50]:
        where = f"line {row['line']}" if row.get("line") else "file"
        field = f", {row['field']}" if row.get("field") else ""
        lines.append(f"  {where}{field}: {row['message']}")
    count = extra.get("error_count")
    if count and count > 50:
        lines.append(f"  … and {count - 50} more")
    return CommandError("\n".join(lines))
