"""Shared helpers of the ratings management commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from django.core.management.base import CommandError

from annotation.errors import ApplicationError
from annotation.models import Project
from imports.core.report import RowError
from ratings.importing import describe


def project_by_slug(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"There is no project {slug!r}; create it with ratings_create_project.")
    return project


@contextmanager
def open_file(path: str) -> Iterator[tuple[str, IO[bytes]]]:
    """``(name, binary file)`` of a file to import, closed afterwards: the services read it a
    row at a time (``ratings.importing.Rows``) rather than whole."""
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"{path} is not a file.")
    with file.open("rb") as handle:
        yield file.name, handle


def command_error(error: ApplicationError) -> CommandError:
    """An ApplicationError as a CommandError listing the rows it names."""
    lines = [error.message]
    extra = error.extra if isinstance(error.extra, dict) else {}
    for row in extra.get("errors", [])[:50]:
        lines.append(f"  {describe(RowError.from_dict(row))}")
    count = extra.get("error_count")
    if count and count > 50:
        lines.append(f"  … and {count - 50} more")
    return CommandError("\n".join(lines))
